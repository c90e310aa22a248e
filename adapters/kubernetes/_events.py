"""events.k8s.io/v1 Events as the API server writes them -> ``EventRecord``.

The API server serves every Event through events.k8s.io/v1, also those written through
core/v1 (the kubelet's, Kueue's): those have ``eventTime: null``, no ``series``, and
carry their times, count and source in the ``deprecated*`` fields, which are folded in
here. An event without ``regarding.name`` says nothing about any object and is skipped;
free text (``note``, ``reason``...) is capped so one chatty controller cannot grow the
cache.
"""

from __future__ import annotations

from typing import Any

from openrl_inspect.adapters.kubernetes._event_records import EventRecord, ObjectRef
from openrl_inspect.adapters.kubernetes._parse import Json, _int, _map, _meta, _str, parse_time

# The API documents a 1 kB note "but libraries should be prepared to handle values up to
# 64 kB"; the cache keeps this much of it.
MAX_NOTE_CHARS = 1024
# reason, action and the controller are at most 128 characters when validated.
MAX_WORD_CHARS = 256


def capped(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters plus a marker naming how many were dropped."""
    if not text:
        return None
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [truncated {len(text) - limit} chars]"


def object_ref(raw: Any) -> ObjectRef | None:
    """A ``regarding``/``related`` reference; None without a kind and a name."""
    kind, name = _str(raw, "kind"), _str(raw, "name")
    if not kind or not name:
        return None
    return ObjectRef(
        kind=kind[:MAX_WORD_CHARS],
        namespace=_str(raw, "namespace") or "",
        name=name,
        uid=_str(raw, "uid") or None,
    )


def _count(obj: Json) -> int:
    for value in (_map(obj, "series").get("count"), obj.get("deprecatedCount")):
        count = _int(value)
        if count is not None and count >= 1:
            return count
    return 1


def parse_event(obj: Json) -> EventRecord | None:
    meta = _meta(obj)
    regarding = object_ref(obj.get("regarding"))
    if meta is None or regarding is None:
        return None
    namespace, name, uid, _ = meta
    source = _map(obj, "deprecatedSource")
    first_at = (
        parse_time(obj.get("eventTime"))
        or parse_time(obj.get("deprecatedFirstTimestamp"))
        or parse_time(_map(obj, "metadata").get("creationTimestamp"))
    )
    last_at = (
        parse_time(_map(obj, "series").get("lastObservedTime"))
        or parse_time(obj.get("deprecatedLastTimestamp"))
        or first_at
    )
    controller = _str(obj, "reportingController") or _str(source, "component")
    instance = _str(obj, "reportingInstance") or _str(source, "host")
    return EventRecord(
        namespace=namespace,
        name=name,
        uid=uid,
        type=capped(_str(obj, "type"), MAX_WORD_CHARS),
        reason=capped(_str(obj, "reason"), MAX_WORD_CHARS),
        note=capped(_str(obj, "note"), MAX_NOTE_CHARS),
        action=capped(_str(obj, "action"), MAX_WORD_CHARS),
        regarding=regarding,
        related=object_ref(obj.get("related")),
        reporting_controller=capped(controller, MAX_WORD_CHARS),
        count=_count(obj),
        first_at=first_at,
        last_at=last_at,
        reporting_instance=capped(instance, MAX_WORD_CHARS),
    )

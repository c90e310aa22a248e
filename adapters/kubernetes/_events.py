"""Events: what events.k8s.io/v1 Events say about the objects a model uses; the record,
the parser from the API server's JSON, and the log entry GKE's event exporter writes.

The API server serves every Event through events.k8s.io/v1, also those written through
core/v1 (the kubelet's, Kueue's): those have ``eventTime: null``, no ``series``, and
carry their times, count and source in the ``deprecated*`` fields, which are folded in
here. An event without ``regarding.name`` says nothing about any object and is skipped;
free text (``note``, ``reason``...) is capped so one chatty controller cannot grow the
cache.

When Cloud Logging is not there to hold the exported events, a log query that asks for
the events of some objects gets them from the watch cache instead, written by
``event_row`` as the very entries the exporter would have stored
(``adapters.logs.memory.event_wire_entry``) so that the same filter, order and paging
apply. The cache holds one record per Event: a repeated event shows once, at the time it
was last seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from openrl_inspect.adapters.kubernetes._json import Json, as_int, as_map, as_str, meta, parse_time
from openrl_inspect.adapters.kubernetes._records import ObjectKey
from openrl_inspect.adapters.logs.memory import event_wire_entry


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """An Event's ``regarding`` (or ``related``) object. ``namespace`` is ``""`` for
    cluster-scoped kinds (Node); ``uid`` tells apart objects reusing a name."""

    kind: str
    namespace: str
    name: str
    uid: str | None = None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One Event, folded over the old core/v1 fields the API server still fills.

    ``count`` is ``series.count`` (or ``deprecatedCount``, else 1); ``first_at`` is
    ``eventTime`` (or ``deprecatedFirstTimestamp``, else creation); ``last_at`` is
    ``series.lastObservedTime`` (or ``deprecatedLastTimestamp``, else ``first_at``).
    ``type`` is Normal or Warning; ``note`` the human-readable message (capped).
    ``reporting_controller``/``reporting_instance`` fall back to ``deprecatedSource``'s
    component and host, which is all events written through core/v1 carry.
    """

    namespace: str
    name: str
    uid: str
    type: str | None
    reason: str | None
    note: str | None
    action: str | None
    regarding: ObjectRef
    related: ObjectRef | None
    reporting_controller: str | None
    count: int
    first_at: float | None
    last_at: float | None
    reporting_instance: str | None = None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)

    @property
    def warning(self) -> bool:
        return self.type == "Warning"


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
    kind, name = as_str(raw, "kind"), as_str(raw, "name")
    if not kind or not name:
        return None
    return ObjectRef(
        kind=kind[:MAX_WORD_CHARS],
        namespace=as_str(raw, "namespace") or "",
        name=name,
        uid=as_str(raw, "uid") or None,
    )


def _count(obj: Json) -> int:
    for value in (as_map(obj, "series").get("count"), obj.get("deprecatedCount")):
        count = as_int(value)
        if count is not None and count >= 1:
            return count
    return 1


def parse_event(obj: Json) -> EventRecord | None:
    identity = meta(obj)
    regarding = object_ref(obj.get("regarding"))
    if identity is None or regarding is None:
        return None
    namespace, name, uid, _ = identity
    source = as_map(obj, "deprecatedSource")
    first_at = (
        parse_time(obj.get("eventTime"))
        or parse_time(obj.get("deprecatedFirstTimestamp"))
        or parse_time(as_map(obj, "metadata").get("creationTimestamp"))
    )
    last_at = (
        parse_time(as_map(obj, "series").get("lastObservedTime"))
        or parse_time(obj.get("deprecatedLastTimestamp"))
        or first_at
    )
    controller = as_str(obj, "reportingController") or as_str(source, "component")
    instance = as_str(obj, "reportingInstance") or as_str(source, "host")
    return EventRecord(
        namespace=namespace,
        name=name,
        uid=uid,
        type=capped(as_str(obj, "type"), MAX_WORD_CHARS),
        reason=capped(as_str(obj, "reason"), MAX_WORD_CHARS),
        note=capped(as_str(obj, "note"), MAX_NOTE_CHARS),
        action=capped(as_str(obj, "action"), MAX_WORD_CHARS),
        regarding=regarding,
        related=object_ref(obj.get("related")),
        reporting_controller=capped(controller, MAX_WORD_CHARS),
        count=_count(obj),
        first_at=first_at,
        last_at=last_at,
        reporting_instance=capped(instance, MAX_WORD_CHARS),
    )


def event_row(event: EventRecord) -> dict[str, Any] | None:
    """The Cloud Logging entry of one cached event; None without any time."""
    if event.last_at is None:
        return None
    ref = event.regarding
    return event_wire_entry(
        timestamp=datetime.fromtimestamp(event.last_at, tz=UTC),
        kind=ref.kind,
        name=ref.name,
        namespace=ref.namespace or None,
        reason=event.reason,
        message=event.note,
        event_type=event.type,
        event_name=event.name,
        event_namespace=event.namespace,
        component=event.reporting_controller,
        host=event.reporting_instance,
        # Stable across re-reads, as a cursor into the answer needs.
        insert_id=f"k8s-event-{event.uid or f'{event.namespace}/{event.name}'}",
    )

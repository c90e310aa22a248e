"""What the real adapter and its twin share: filters, cursors, bounds, conversion.

Both read a backend in *pages* (``Fetch``: a page token and a size in, raw LogEntry
JSON objects and the next token out) and :func:`collect` turns pages into one bounded
answer, so bounds and cursors behave the same whatever the backend.

A cursor is the backend's own page token plus how many entries of that page were
already returned (an answer may stop inside a page when its byte budget runs out),
bound to a fingerprint of the filter and order so it cannot be replayed on another
query. Page tokens are assumed to be re-usable for the same request, as Cloud
Logging's are.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from openrl_inspect.adapters.logs._event_filter import EVENTS_LOG_ID, only_events, with_events
from openrl_inspect.adapters.logs._filter import SEVERITIES, build_filter
from openrl_inspect.adapters.logs._filter_eval import parse_timestamp
from openrl_inspect.adapters.logs._records import (
    CloudLoggingSettings,
    FieldValue,
    LogEntry,
    LogEvent,
    LogPage,
    LogQuery,
    LogSourceKind,
    TruncationReason,
    explorer_url,
)
from openrl_inspect.core import cursor as codec
from openrl_inspect.core.errors import BackendProtocolError, InvalidInput

BACKEND = "cloud_logging"
ASCENDING = "timestamp asc"
DESCENDING = "timestamp desc"

_MAX_CURSOR_CHARS = 8192
_KIND = "logpage"
_MAX_KEY_CHARS = 128
_ENTRY_OVERHEAD_BYTES = 64

# (page token or None for the first page, page size, seconds left) -> (items, next token)
Fetch = Callable[[str | None, int, float], tuple[Sequence[Any], str | None]]


def order_by(query: LogQuery) -> str:
    return DESCENDING if query.newest_first else ASCENDING


def filter_for(query: LogQuery, settings: CloudLoggingSettings, project: str | None) -> str:
    """The one filter a query becomes (see ``logfilter.build_filter``), ORed with the
    events of ``query.event_objects`` when it names any (``_event_filter``); only those
    events when ``query.events_only``."""
    if query.events_only:
        return only_events(
            project=project,
            objects=query.event_objects,
            start=query.start,
            end=query.end,
            severity_floor=query.severity_floor,
            text=query.text,
        )
    container = build_filter(
        start=query.start,
        end=query.end,
        resource_type=settings.resource_type,
        project=project,
        log_id=settings.log_id,
        namespace=settings.namespace,
        model_id=query.model_id,
        model_label_key=settings.model_label_key,
        model_pods=query.model_pods,
        pod=query.pod,
        role=query.role,
        role_label_key=settings.role_label_key,
        severity_floor=query.severity_floor,
        text=query.text,
    )
    return with_events(
        container,
        project=project,
        objects=query.event_objects,
        start=query.start,
        end=query.end,
        severity_floor=query.severity_floor,
        text=query.text,
    )


# ----------------------------------------------------------------------------- cursors


@dataclass(frozen=True, slots=True)
class Position:
    """Where the next answer starts: the page ``token`` fetches (None: the first),
    minus the ``skip`` entries of it already returned, fetched ``page_size`` at a time
    (kept when ``skip`` > 0 so the same page comes back)."""

    token: str | None
    skip: int = 0
    page_size: int | None = None


def fingerprint(filter_: str, order: str) -> str:
    return codec.fingerprint(order, filter_)


def encode_cursor(print_: str, position: Position) -> str:
    return codec.encode(_KIND, print_, position.token, position.skip, position.page_size)


def decode_cursor(cursor: str, print_: str) -> Position:
    """The position a cursor names; InvalidInput unless it was made for this query."""
    refusal = "the cursor is not valid for this query"
    if not isinstance(cursor, str) or len(cursor) > _MAX_CURSOR_CHARS:
        raise InvalidInput(refusal)
    made_for, token, skip, size = codec.decode(_KIND, cursor, 4, refusal)
    ok = (
        made_for == print_
        and (token is None or (isinstance(token, str) and token != ""))
        and isinstance(skip, int)
        and not isinstance(skip, bool)
        and 0 <= skip <= 1000
        and (size is None or (isinstance(size, int) and not isinstance(size, bool) and size >= 1))
    )
    if not ok:
        raise InvalidInput(refusal)
    return Position(token, skip, size)


# -------------------------------------------------------------------------- conversion


def cut(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters plus a marker naming how many were dropped."""
    if len(text) <= limit:
        return text, 0
    dropped = len(text) - limit
    return f"{text[:limit]}… [truncated {dropped} chars]", dropped


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def bounded_fields(
    payload: Mapping[str, Any], settings: CloudLoggingSettings
) -> dict[str, FieldValue]:
    """At most ``max_fields`` entries; strings cut, nested values as cut compact JSON."""
    out: dict[str, FieldValue] = {}
    items = list(payload.items())
    for key, value in items[: settings.max_fields]:
        name, _ = cut(str(key), _MAX_KEY_CHARS)
        if value is None or isinstance(value, bool | int | float):
            out[name] = value
        else:
            text = value if isinstance(value, str) else _compact(value)
            out[name], _ = cut(text, settings.max_field_chars)
    if len(items) > settings.max_fields:
        out["…"] = f"{len(items) - settings.max_fields} more fields"
    return out


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def to_log_entry(raw: Any, settings: CloudLoggingSettings) -> LogEntry:
    """One LogEntry JSON object (the REST wire format) as a bounded record."""
    if not isinstance(raw, Mapping):
        raise BackendProtocolError(BACKEND, "a log entry was not an object")
    stamp = raw.get("timestamp") or raw.get("receiveTimestamp")
    try:
        timestamp = parse_timestamp(stamp) if isinstance(stamp, str) else None
    except ValueError:
        timestamp = None
    if timestamp is None:
        raise BackendProtocolError(BACKEND, "a log entry had no readable timestamp")
    severity = raw.get("severity")
    severity = severity.upper() if isinstance(severity, str) else "DEFAULT"
    if severity not in SEVERITIES:
        severity = "DEFAULT"
    resource = raw.get("resource")
    resource_labels = resource.get("labels") if isinstance(resource, Mapping) else None
    if not isinstance(resource_labels, Mapping):
        resource_labels = {}
    labels = raw.get("labels")
    if not isinstance(labels, Mapping):
        labels = {}
    if (event := _event_of(raw)) is not None:
        return _event_entry(raw, event, timestamp, severity, settings)
    message, fields = _payload(raw, settings)
    message, dropped = cut(message, settings.max_message_chars)
    return LogEntry(
        timestamp=timestamp,
        severity=severity,
        source=LogSourceKind.WORKER,
        message=message,
        role=_str_or_none(labels.get(settings.role_label_key)),
        pod=_str_or_none(resource_labels.get("pod_name")),
        container=_str_or_none(resource_labels.get("container_name")),
        model_id=_str_or_none(labels.get(settings.model_label_key)),
        fields=MappingProxyType(fields),
        insert_id=_str_or_none(raw.get("insertId")),
        truncated_chars=dropped,
    )


def _event_of(raw: Mapping[str, Any]) -> LogEvent | None:
    """What an entry of the events log is about (None for any other entry)."""
    log_name = raw.get("logName")
    payload = raw.get("jsonPayload")
    if not (isinstance(log_name, str) and log_name.endswith(f"/logs/{EVENTS_LOG_ID}")):
        return None
    involved = payload.get("involvedObject") if isinstance(payload, Mapping) else None
    if not isinstance(payload, Mapping) or not isinstance(involved, Mapping):
        return None
    kind, name = _word(involved.get("kind")), _str_or_none(involved.get("name"))
    if kind is None or name is None:
        return None
    source = payload.get("source")
    component = source.get("component") if isinstance(source, Mapping) else None
    return LogEvent(
        reason=_word(payload.get("reason")),
        type=_word(payload.get("type")),
        kind=kind,
        namespace=_str_or_none(involved.get("namespace")),
        name=name,
        component=_word(payload.get("reportingComponent")) or _word(component),
    )


def _word(value: Any) -> str | None:
    """A short identifier-like string (reason, kind...), cut if a writer went wild."""
    text = _str_or_none(value)
    return None if text is None else cut(text, _MAX_KEY_CHARS)[0]


def _event_entry(
    raw: Mapping[str, Any],
    event: LogEvent,
    timestamp: datetime,
    severity: str,
    settings: CloudLoggingSettings,
) -> LogEntry:
    """An event entry: its message, the regarded object and why, not its metadata."""
    payload = raw["jsonPayload"]
    text = payload.get("message")
    message, dropped = cut(text if isinstance(text, str) else "", settings.max_message_chars)
    fields = {"reason": event.reason, "type": event.type, "kind": event.kind}
    return LogEntry(
        timestamp=timestamp,
        severity=severity,
        source=LogSourceKind.EVENT,
        message=message,
        pod=event.name if event.kind == "Pod" else None,
        fields=MappingProxyType(bounded_fields(fields, settings)),
        insert_id=_str_or_none(raw.get("insertId")),
        truncated_chars=dropped,
        event=event,
    )


def _payload(
    raw: Mapping[str, Any], settings: CloudLoggingSettings
) -> tuple[str, dict[str, FieldValue]]:
    text = raw.get("textPayload")
    if text is not None:
        return str(text), {}
    payload = raw.get("jsonPayload")
    if isinstance(payload, Mapping):
        for key in ("message", "msg"):
            if isinstance(payload.get(key), str):
                rest = {k: v for k, v in payload.items() if k != key}
                return payload[key], bounded_fields(rest, settings)
        return _compact(payload), bounded_fields(payload, settings)
    proto = raw.get("protoPayload")
    if isinstance(proto, Mapping):
        return _compact(proto), {}
    return "", {}


def entry_size(entry: LogEntry) -> int:
    """The bytes an entry counts against ``max_bytes``: its text, roughly as sent."""
    size = _ENTRY_OVERHEAD_BYTES + len(entry.message.encode())
    for text in (entry.role, entry.pod, entry.container, entry.model_id, entry.insert_id):
        size += len(text.encode()) if text else 0
    if entry.event is not None:
        size += len(entry.event.name.encode()) + len(entry.event.kind.encode())
    for key, value in entry.fields.items():
        size += len(key.encode()) + len(str(value).encode())
    return size


# ---------------------------------------------------------------------------- collect


@dataclass(slots=True)
class _Answer:
    """The entries taken so far, against the answer's entry and byte bounds."""

    want: int
    max_bytes: int
    full: TruncationReason
    entries: list[LogEntry] = field(default_factory=list)
    used: int = 0

    def take(
        self, items: Sequence[Any], at: Position, size: int, convert: Callable[[Any], LogEntry]
    ) -> tuple[Position, TruncationReason] | None:
        """Take a page's entries from ``at.skip`` on; where to resume and why when a
        bound stops it inside the page, None when the whole page was taken."""
        index = at.skip
        for item in items[at.skip :]:
            if len(self.entries) >= self.want:
                return Position(at.token, index, size), self.full
            entry = convert(item)
            cost = entry_size(entry)
            if self.entries and self.used + cost > self.max_bytes:
                return Position(at.token, index, size), TruncationReason.MAX_BYTES
            self.entries.append(entry)
            self.used += cost
            index += 1
        return None


def collect(
    fetch: Fetch,
    convert: Callable[[Any], LogEntry],
    *,
    query: LogQuery,
    settings: CloudLoggingSettings,
    filter_: str,
    cursor: str | None,
    deadline: float,
    project: str | None,
    clock: Callable[[], float] = time.monotonic,
) -> LogPage:
    """Read pages until the answer is full, a bound is hit, or the results end.

    At least one entry is returned when one exists, so a tiny byte budget still moves
    forward. Errors from ``fetch`` propagate: a half answer is never passed off as whole.
    """
    print_ = fingerprint(filter_, order_by(query))
    want = min(query.limit, settings.max_entries)
    full = (
        TruncationReason.LIMIT
        if query.limit <= settings.max_entries
        else TruncationReason.MAX_ENTRIES
    )
    position = decode_cursor(cursor, print_) if cursor is not None else Position(None)
    answer = _Answer(want, settings.max_bytes, full)
    pages = 0
    stop: tuple[Position, TruncationReason] | None = None
    while stop is None:
        if pages >= settings.max_pages:
            stop = (position, TruncationReason.SCAN_BUDGET)
            break
        left = deadline - clock()
        if pages > 0 and left <= 0:
            stop = (position, TruncationReason.TIME_BUDGET)
            break
        size = position.page_size or min(settings.page_size, max(1, want - len(answer.entries)))
        items, next_token = fetch(position.token, size, left)
        pages += 1
        stop = answer.take(items, position, size, convert)
        if stop is None:
            if next_token is None:
                break
            position = Position(next_token)
            if len(answer.entries) >= want:
                stop = (position, full)
    next_cursor = None if stop is None else encode_cursor(print_, stop[0])
    return LogPage(
        entries=tuple(answer.entries),
        next_cursor=next_cursor,
        truncated=stop is not None,
        truncated_reason=None if stop is None else stop[1],
        bytes_used=answer.used,
        filter=filter_,
        explorer_url=None
        if project is None
        else explorer_url(project, filter_, query.start, query.end),
    )


def sort_key(raw: Mapping[str, Any]) -> tuple[datetime, str]:
    """Order of entries within a filter: timestamp, then insertId to break ties."""
    return parse_timestamp(str(raw.get("timestamp"))), str(raw.get("insertId") or "")

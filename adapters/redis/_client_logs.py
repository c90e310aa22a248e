"""Client logs: the lines a client reported for its model, read from Redis in batches.

The recorder keeps them per model in the capped sorted set ``oi:{m:MID}:logs``
(``state.keys.logs``; see docs/redis-schema.md): member the record's compact JSON
(``id``, ``t``, ``level``, ``msg``, optional ``fields``, ``truncated``, ``worker``),
score its time. :meth:`RedisClientLogs.client_logs` reads a window of several models'
sets in one pipeline round trip, resumes strictly after a (score, member) position,
applies the severity floor and text search while scanning a bounded number of members,
and hands out the same bounded :class:`LogEntry` records as the worker-log adapters
(``source`` CLIENT, messages and fields cut like theirs).

There is no separate twin: this class over ``RedisStateStore.in_memory`` (fakeredis) is
the in-memory twin, as for the rest of the Redis adapter.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Protocol

from openrl_inspect.adapters.logs import (
    SEVERITIES,
    CloudLoggingSettings,
    FieldValue,
    LogEntry,
    LogSourceKind,
    bounded_fields,
    check_severity,
    check_value,
    cut,
)
from openrl_inspect.adapters.redis._client import Pipe, run
from openrl_inspect.adapters.redis._state import RedisStateStore, StateStore
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.state import keys

__all__ = [
    "MAX_SCAN",
    "ClientLogLine",
    "ClientLogReader",
    "ClientLogRequest",
    "ClientLogSlice",
    "RedisClientLogs",
    "client_log_entry",
]

# Members read per model and answer at most, matching or not (the scan budget).
MAX_SCAN = 2000
# Extra members read so that entries sharing the resume position's score can be
# skipped without another round trip.
_TIE_SLACK = 32


@dataclass(frozen=True, slots=True)
class ClientLogRequest:
    """Up to ``limit`` matching lines of one model in ``[start, end]`` (epoch seconds),
    strictly after ``after`` = (score, member) in the order asked for."""

    model_id: str
    start: float
    end: float
    limit: int
    newest_first: bool = False
    after: tuple[float, str] | None = None
    severity_floor: str | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class ClientLogLine:
    """One line with its position in the model's set (what a cursor resumes after)."""

    model_id: str
    score: float
    member: str
    entry: LogEntry


@dataclass(frozen=True, slots=True)
class ClientLogSlice:
    """The matching lines found, in order, and how far the scan went.

    ``scanned_to`` is the last member examined (matching or not); ``exhausted`` says no
    member of the window lies past it. A slice can hold more than ``limit`` lines.
    """

    lines: tuple[ClientLogLine, ...]
    scanned_to: tuple[float, str] | None
    exhausted: bool


class ClientLogReader(Protocol):
    """Batch in, one slice per request out, in request order."""

    async def client_logs(self, requests: Sequence[ClientLogRequest]) -> list[ClientLogSlice]: ...


class RedisClientLogs:
    """``ClientLogReader`` over the Redis adapter's client (one round trip per batch)."""

    def __init__(
        self,
        store: RedisStateStore,
        *,
        bounds: CloudLoggingSettings | None = None,
        timeout_s: float = 2.5,
    ) -> None:
        self._store = store
        self._bounds = bounds or CloudLoggingSettings()
        self._timeout_s = timeout_s

    @classmethod
    def of(cls, state: StateStore) -> RedisClientLogs | None:
        """The reader for a state store, when it is the Redis adapter (or its twin)."""
        return cls(state) if isinstance(state, RedisStateStore) else None

    async def client_logs(self, requests: Sequence[ClientLogRequest]) -> list[ClientLogSlice]:
        for req in requests:
            _check(req)
        if not requests:
            return []
        counts = [_scan_size(req) for req in requests]

        def build(pipe: Pipe) -> None:
            for req, count in zip(requests, counts, strict=True):
                key = keys.logs(req.model_id)
                if req.newest_first:
                    top = req.end if req.after is None else min(req.end, req.after[0])
                    pipe.zrevrangebyscore(key, top, req.start, start=0, num=count, withscores=True)
                else:
                    bottom = req.start if req.after is None else max(req.start, req.after[0])
                    pipe.zrangebyscore(key, bottom, req.end, start=0, num=count, withscores=True)

        await self._store.check_schema()
        raw = await run(
            self._store.client, build, deadline_s=self._timeout_s, trips=self._store.trips
        )
        return [
            self._slice(req, count, [(str(m), float(s)) for m, s in answer])
            for req, count, answer in zip(requests, counts, raw, strict=True)
        ]

    def _slice(
        self, req: ClientLogRequest, count: int, fetched: list[tuple[str, float]]
    ) -> ClientLogSlice:
        floor = SEVERITIES.index(req.severity_floor) if req.severity_floor else 0
        needle = req.text.casefold() if req.text is not None else None
        lines: list[ClientLogLine] = []
        scanned: tuple[float, str] | None = None
        for member, score in fetched:
            if req.after is not None and not _past(req, score, member):
                continue
            scanned = (score, member)
            entry = client_log_entry(req.model_id, score, member, self._bounds)
            if SEVERITIES.index(entry.severity) < floor:
                continue
            if needle is not None and needle not in entry.message.casefold():
                continue
            lines.append(ClientLogLine(req.model_id, score, member, entry))
        return ClientLogSlice(tuple(lines), scanned, exhausted=len(fetched) < count)


def _past(req: ClientLogRequest, score: float, member: str) -> bool:
    assert req.after is not None
    after = req.after
    if req.newest_first:
        return (score, member) < after
    return (score, member) > after


def _scan_size(req: ClientLogRequest) -> int:
    filtered = req.severity_floor is not None or req.text is not None
    want = req.limit * 8 if filtered else req.limit + 1
    return min(MAX_SCAN, want + _TIE_SLACK)


def _check(req: ClientLogRequest) -> None:
    if not keys.valid_id(req.model_id):
        raise InvalidInput("not a valid model id")
    if req.end < req.start:
        raise InvalidInput("the time window ends before it starts")
    if not 1 <= req.limit <= MAX_SCAN:
        raise InvalidInput(f"limit must be between 1 and {MAX_SCAN}")
    if req.severity_floor is not None:
        check_severity(req.severity_floor)
    if req.text is not None:
        check_value(req.text)


def client_log_entry(
    model_id: str, score: float, member: str, bounds: CloudLoggingSettings
) -> LogEntry:
    """One stored record as a bounded entry; a member that is not a record object is
    shown as its raw text rather than dropped."""
    try:
        body: Any = json.loads(member)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        message, dropped = cut(member, bounds.max_message_chars)
        return LogEntry(
            timestamp=datetime.fromtimestamp(score, tz=UTC),
            severity="DEFAULT",
            source=LogSourceKind.CLIENT,
            message=message,
            model_id=model_id,
            truncated_chars=dropped,
        )
    level = body.get("level", body.get("severity"))
    severity = level.upper() if isinstance(level, str) else "DEFAULT"
    if severity == "WARN":
        severity = "WARNING"
    if severity not in SEVERITIES:
        severity = "DEFAULT"
    text = body.get("msg", body.get("message"))
    message, dropped = cut(text if isinstance(text, str) else "", bounds.max_message_chars)
    raw_fields = body.get("fields")
    fields: dict[str, FieldValue] = (
        bounded_fields(raw_fields, bounds) if isinstance(raw_fields, dict) else {}
    )
    worker = body.get("worker")
    if isinstance(worker, str) and "worker" not in fields:
        fields["worker"] = cut(worker, bounds.max_field_chars)[0]
    if body.get("truncated") is True and dropped == 0:
        fields.setdefault("truncated_by_recorder", True)
    record_id = body.get("id")
    return LogEntry(
        timestamp=datetime.fromtimestamp(score, tz=UTC),
        severity=severity,
        source=LogSourceKind.CLIENT,
        message=message,
        model_id=model_id,
        fields=MappingProxyType(fields),
        insert_id=str(record_id) if isinstance(record_id, str | int) else None,
        truncated_chars=dropped,
    )

"""The recorder's buffer: state, the hot path, the drop policy and the exact counters.

``BufferCore`` holds the bounded buffer every record method appends to, decides which
records are dropped at the door (see the drop policy in ``recorder.recorder``), counts
every record exactly, and settles what is left at close.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType
from typing import Any, Literal

from openrl_inspect.recorder import writes
from openrl_inspect.recorder.config import RecorderSettings, RecorderStats, WorkerInfo
from openrl_inspect.recorder.writes import Command, Retention

log = logging.getLogger("openrl_inspect.recorder")

Write = Callable[..., None]
Record = tuple[Write, tuple[Any, ...]]

# Records dropped first when the buffer passes the shed level.
LOW_VALUE: frozenset[Write] = frozenset({writes.heartbeat, writes.sampler_batch, writes.client_log})

DROP_REASONS = ("full", "shed", "closed", "malformed", "invalid", "rejected", "shutdown")
# Reasons a record is dropped before it enters the buffer.
_AT_THE_DOOR = frozenset({"full", "shed", "closed", "malformed"})

_LOG_EVERY_S = 30.0
_SAFE_ID = re.compile(r"[^A-Za-z0-9._:@/-]")


class _Pending:
    """A batch taken from the buffer: written (or dropped) as a whole, retried as is."""

    __slots__ = (
        "abandoned",
        "attempts",
        "base",
        "commands",
        "groups",
        "invalid",
        "poison",
        "records",
    )

    def __init__(self, records: list[Record], base: int) -> None:
        self.records = records
        self.base = base  # sequence number of records[0], for stable record ids
        self.commands: list[Command] = []
        # Per-record mode: (record index, first command, end) for each record.
        self.groups: list[tuple[int, int, int]] | None = None
        self.invalid: set[int] = set()
        self.attempts = 0
        self.poison = 0  # failed attempts that were not Redis being away
        self.abandoned = False

    @property
    def valid(self) -> int:
        return len(self.records) - len(self.invalid)


Outcome = Literal["ok", "again", "failed"]
Sent = tuple[bool, bool]  # a pipeline carried (the heartbeat, the counters)


def _default_id() -> str:
    host = _SAFE_ID.sub("-", socket.gethostname())[:64].strip("-.:@/") or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


class BufferCore:
    """The buffer, the drop policy and the accounting the other recorder parts share."""

    def __init__(
        self,
        retention: Retention | None = None,
        *,
        settings: RecorderSettings | None = None,
        batch_size: int | None = None,
        capacity: int | None = None,
        worker: WorkerInfo | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        s = settings or RecorderSettings()
        if batch_size is not None:
            s = replace(s, batch_size=batch_size)
        if capacity is not None:
            s = replace(s, capacity=capacity)
        self.settings = s
        self.retention = retention or Retention()
        self.batch_size = max(1, s.batch_size)
        self.capacity = max(s.capacity, self.batch_size)
        self._shed = max(1, min(self.capacity, int(self.capacity * s.shed_fraction)))
        self._trigger = self.batch_size
        # Below this length a record is appended with no further check.
        self._fast = min(self._trigger, self._shed)
        self._clock = clock
        self.worker = worker
        self._wid = worker.id if worker is not None else None
        self.recorder_id = s.recorder_id or _default_id()
        self._id_prefix = f"{self.recorder_id}/"
        self._buf: deque[Record] = deque()
        self._wake_sent = False
        self._current: tuple[str, str] | None = None
        self._status: dict[str, Any] = {}
        # Accounting, under _lock (never taken on the hot path's normal case).
        self._lock = threading.Lock()
        self._closed = False
        self._held: _Pending | None = None
        self._next: _Pending | None = None  # prefetched, compiled, not sent yet
        self._seq = 0
        self._taken = 0
        self._settled = 0
        self._written = 0
        self._retried = 0
        self._batches = 0
        self._failures = 0
        self._dropped: dict[tuple[str, Write], int] = {}
        self._connected: bool | None = None
        self._last_error: str | None = None
        self._streak = 0
        self._schema_done = False
        self._last_heartbeat = -float("inf")
        self._counters_at = -float("inf")
        self._published: tuple[int, ...] | None = None
        self._warned_drops = 0
        self._warned_at = -float("inf")

    # -- hot path ------------------------------------------------------------------------

    def _put(self, rec: Record) -> None:
        buf = self._buf
        if len(buf) < self._fast:
            buf.append(rec)
        else:
            self._overflow(rec)

    def _overflow(self, rec: Record) -> None:
        try:
            buf = self._buf
            n = len(buf)
            if self._closed:
                reason = "closed"
            elif n >= self.capacity:
                reason = "full"
            elif n >= self._shed and rec[0] in LOW_VALUE:
                reason = "shed"
            else:
                buf.append(rec)
                if n + 1 >= self._trigger and not self._wake_sent:
                    self._wake_sent = True
                    self._wake()
                return
            with self._lock:
                key = (reason, rec[0])
                self._dropped[key] = self._dropped.get(key, 0) + 1
        except Exception:  # never raise into the caller
            log.debug("recorder: overflow handling failed", exc_info=True)

    def _malformed(self, write: Write) -> None:
        """A record call whose arguments could not be captured: counted, not raised."""
        try:
            with self._lock:
                self._drop_locked("malformed", write)
        except Exception:
            log.debug("recorder: counting a malformed record failed", exc_info=True)

    def _wake(self) -> None:
        """Ask the flusher to run now (size trigger); subclasses know how."""

    @property
    def pending(self) -> int:
        """Records buffered or in flight (not yet written nor dropped)."""
        with self._lock:
            return len(self._buf) + self._taken - self._settled

    def _now(self, at: float | None) -> float:
        return self._clock() if at is None else at

    # -- counters --------------------------------------------------------------------------

    def stats(self) -> RecorderStats:
        with self._lock:
            return self._stats_locked()

    def _stats_locked(self) -> RecorderStats:
        queued = len(self._buf)
        by_reason: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        dropped_enqueue = 0
        for (reason, write), n in self._dropped.items():
            by_reason[reason] = by_reason.get(reason, 0) + n
            by_kind[write.__name__] = by_kind.get(write.__name__, 0) + n
            if reason in _AT_THE_DOOR:
                dropped_enqueue += n
        dropped = sum(by_reason.values())
        pending = queued + (self._taken - self._settled)
        # Counted independently of ``written + dropped + pending``: a record is taken
        # from the buffer, is still in it, or was turned away at the door.
        recorded = self._taken + queued + dropped_enqueue
        return RecorderStats(
            recorder_id=self.recorder_id,
            recorded=recorded,
            written=self._written,
            dropped=dropped,
            pending=pending,
            retried=self._retried,
            batches=self._batches,
            failed_attempts=self._failures,
            dropped_by_reason=MappingProxyType(by_reason),
            dropped_by_kind=MappingProxyType(by_kind),
            connected=self._connected,
            last_error=self._last_error,
        )

    def _drop_locked(self, reason: str, write: Write, n: int = 1) -> None:
        key = (reason, write)
        self._dropped[key] = self._dropped.get(key, 0) + n

    def _warn_drops(self) -> None:
        with self._lock:
            total = sum(self._dropped.values())
        if total > self._warned_drops and time.monotonic() - self._warned_at >= _LOG_EVERY_S:
            st = self.stats()
            log.warning(
                "recorder: %d record(s) dropped so far (%s)",
                st.dropped,
                ", ".join(f"{k}={v}" for k, v in sorted(st.dropped_by_reason.items())),
            )
            self._warned_drops = total
            self._warned_at = time.monotonic()

    def _begin_close(self) -> None:
        with self._lock:
            self._closed = True
            self._fast = -1  # every new record goes through _overflow, which drops it

    def _abandon(self) -> None:
        """At the shutdown deadline: what is still pending is counted as dropped."""
        with self._lock:
            buf = self._buf
            while buf:
                self._drop_locked("shutdown", buf.popleft()[0])
                self._taken += 1
                self._settled += 1
            for p in (self._held, self._next):
                if p is not None:
                    p.abandoned = True
                    for write, _ in p.records:
                        self._drop_locked("shutdown", write)
                    self._settled += len(p.records)
            self._held = self._next = None
        left = self.stats().dropped_by_reason.get("shutdown", 0)
        if left:
            log.warning("recorder: closed with %d record(s) unwritten (dropped)", left)

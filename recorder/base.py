"""The recorder's core: settings, counters, the hot path and batch accounting.

``RecorderBase`` holds everything the sync and asyncio recorders share: the record
methods (an append to a bounded buffer), the drop policy, the exact counters, and the
I/O-free steps of a flush (taking a batch, compiling it, settling its outcome). The
flushers that do the I/O are in ``recorder.recorder``, whose docstring describes the
design and the drop policy.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Literal

import redis.exceptions as rexc
from openrl_inspect.recorder import writes
from openrl_inspect.recorder.writes import Batch, Command, Retention

log = logging.getLogger("openrl_inspect.recorder")

Write = Callable[..., None]
Record = tuple[Write, tuple[Any, ...]]

# Records dropped first when the buffer passes the shed level.
LOW_VALUE: frozenset[Write] = frozenset({writes.heartbeat, writes.sampler_batch, writes.client_log})

DROP_REASONS = ("full", "shed", "closed", "malformed", "invalid", "rejected", "shutdown")
# Reasons a record is dropped before it enters the buffer.
_AT_THE_DOOR = frozenset({"full", "shed", "closed", "malformed"})

# Redis answers that mean "try again later", not "this command is wrong".
_TRANSIENT_PREFIXES = ("LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "OOM")
_TRANSIENT = (
    rexc.ConnectionError,
    rexc.TimeoutError,
    rexc.ClusterError,
    rexc.RedisClusterException,
    rexc.TryAgainError,
    rexc.AskError,
    rexc.ReadOnlyError,
    OSError,
    asyncio.TimeoutError,
)
_LOG_EVERY_S = 30.0
# A batch whose pipeline raised something other than a connection problem this many
# times is dropped (``rejected``), so one bad batch cannot stall the recorder.
_MAX_POISON = 3
_SAFE_ID = re.compile(r"[^A-Za-z0-9._:@/-]")


@dataclass(frozen=True)
class RecorderSettings:
    """The telemetry writer. Env prefix ``OPENRL_INSPECT_RECORDER_``."""

    url: str = "redis://127.0.0.1:6379/0"
    cluster: bool = False
    socket_timeout_s: float = 2.0
    connect_timeout_s: float = 1.0
    # Overall deadline of one pipeline attempt (asyncio; the sync client relies on the
    # socket timeouts above).
    attempt_timeout_s: float = 5.0
    capacity: int = 100_000
    shed_fraction: float = 0.5
    batch_size: int = 512
    flush_interval_s: float = 0.2
    backoff_base_s: float = 0.05
    backoff_cap_s: float = 5.0
    heartbeat_every_s: float = 5.0
    # Counters go to ``oi:recorder:<id>`` at most this often (and once more at close).
    counters_every_s: float = 1.0
    flush_timeout_s: float = 10.0
    close_timeout_s: float = 5.0
    # Write the counters to ``oi:recorder:<recorder id>`` with each pipeline.
    publish_counters: bool = True
    # Empty: ``<host>-<pid>-<random>``.
    recorder_id: str = ""
    # Sync recorder: flush (within ``close_timeout_s``) when the interpreter exits.
    flush_at_exit: bool = True


@dataclass(frozen=True)
class WorkerInfo:
    """Who this process is, for the heartbeats the recorder sends on its own."""

    id: str
    role: str  # trainer | sampler
    pod: str
    node: str
    model_id: str | None = None
    gpu_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecorderStats:
    """Exact counters: ``recorded == written + dropped + pending`` in every snapshot."""

    recorder_id: str
    recorded: int
    written: int
    dropped: int
    pending: int
    retried: int
    batches: int
    failed_attempts: int
    dropped_by_reason: Mapping[str, int]
    dropped_by_kind: Mapping[str, int]
    connected: bool | None  # None before the first attempt
    last_error: str | None  # the exception class of the last failed attempt

    def counters(self) -> dict[str, int]:
        return {
            "recorded": self.recorded,
            "written": self.written,
            "dropped": self.dropped,
            "pending": self.pending,
            "retried": self.retried,
        }


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


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, _TRANSIENT):
        return True
    return isinstance(exc, rexc.ResponseError) and str(exc).startswith(_TRANSIENT_PREFIXES)


class RecorderBase:
    """Record methods (each an append that never blocks or raises) and the accounting."""

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

    # -- sessions and models ---------------------------------------------------------------

    def session_opened(
        self, sid: str, owner: str, client: Mapping[str, Any] | None = None, at: float | None = None
    ) -> None:
        try:
            self._put(
                (
                    writes.session_opened,
                    (
                        sid,
                        owner,
                        dict(client) if client else {},
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.session_opened)

    def session_closed(self, sid: str, at: float | None = None) -> None:
        try:
            self._put((writes.session_closed, (sid, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.session_closed)

    def model_created(
        self,
        mid: str,
        sid: str,
        base_model: str,
        lora: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> None:
        try:
            self._put(
                (
                    writes.model_created,
                    (
                        mid,
                        sid,
                        base_model,
                        dict(lora) if lora else {},
                        dict(settings) if settings else {},
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.model_created)

    def model_state(
        self, mid: str, state: str, reason: str | None = None, at: float | None = None
    ) -> None:
        try:
            self._put(
                (writes.model_state, (mid, state, self._clock() if at is None else at, reason))
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.model_state)

    # -- ops and steps -----------------------------------------------------------------------

    def op_accepted(
        self,
        mid: str,
        oid: str,
        kind: str,
        step: int,
        session_id: str | None = None,
        at: float | None = None,
    ) -> None:
        try:
            self._put(
                (
                    writes.op_accepted,
                    (mid, oid, kind, step, self._clock() if at is None else at, session_id),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.op_accepted)

    def op_enqueued(self, mid: str, oid: str, at: float | None = None) -> None:
        try:
            self._put((writes.op_enqueued, (mid, oid, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.op_enqueued)

    def op_started(self, mid: str, oid: str, worker_id: str, at: float | None = None) -> None:
        try:
            if worker_id == self._wid:
                self._current = (mid, oid)
            self._put(
                (writes.op_started, (mid, oid, worker_id, self._clock() if at is None else at))
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.op_started)

    def op_finished(
        self,
        mid: str,
        oid: str,
        status: str = "succeeded",
        metrics: Mapping[str, Any] | None = None,
        error: str | None = None,
        at: float | None = None,
    ) -> None:
        try:
            cur = self._current
            if cur is not None and cur[1] == oid:
                self._current = None
            self._put(
                (
                    writes.op_finished,
                    (
                        mid,
                        oid,
                        status,
                        self._clock() if at is None else at,
                        dict(metrics) if metrics else None,
                        error,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.op_finished)

    def step_metrics(
        self,
        mid: str,
        step: int,
        metrics: Mapping[str, Any],
        finished: bool = False,
        at: float | None = None,
    ) -> None:
        try:
            self._put(
                (
                    writes.step_metrics,
                    (mid, step, dict(metrics), self._clock() if at is None else at, finished),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.step_metrics)

    # -- workers, samplers, placements, client logs ----------------------------------------

    def heartbeat(
        self,
        wid: str,
        role: str,
        pod: str,
        node: str,
        model_id: str | None = None,
        gpu_ids: Sequence[str] = (),
        payload: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> None:
        try:
            self._put(
                (
                    writes.heartbeat,
                    (
                        wid,
                        role,
                        pod,
                        node,
                        model_id,
                        list(gpu_ids),
                        dict(payload) if payload else {},
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.heartbeat)

    def sampler_batch(
        self,
        mid: str,
        batch_size: int,
        prompt_tokens: int,
        generated_tokens: int,
        latency_s: float,
        queue_depth: int,
        *,
        worker_id: str | None = None,
        op_id: str | None = None,
        at: float | None = None,
    ) -> None:
        """One sampler batch: its size, tokens in and out, latency and the queue behind it.

        ``worker_id`` defaults to this recorder's ``WorkerInfo``.
        """
        try:
            self._put(
                (
                    writes.sampler_batch,
                    (
                        mid,
                        batch_size,
                        prompt_tokens,
                        generated_tokens,
                        latency_s,
                        queue_depth,
                        worker_id,
                        op_id,
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.sampler_batch)

    def client_log(
        self,
        mid: str,
        level: str | int,
        message: str,
        fields: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> None:
        """A log line the client reported for model ``mid`` (``level``: name or number)."""
        try:
            self._put(
                (
                    writes.client_log,
                    (
                        mid,
                        level,
                        message,
                        dict(fields) if fields else None,
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.client_log)

    def placement_admitted(
        self,
        mid: str,
        pid: str,
        workload: str,
        namespace: str,
        pods: Sequence[str],
        node: str,
        gpu_ids: Sequence[str],
        at: float | None = None,
    ) -> None:
        try:
            self._put(
                (
                    writes.placement_admitted,
                    (
                        mid,
                        pid,
                        workload,
                        namespace,
                        list(pods),
                        node,
                        list(gpu_ids),
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.placement_admitted)

    def placement_released(self, mid: str, pid: str, at: float | None = None) -> None:
        try:
            self._put((writes.placement_released, (mid, pid, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.placement_released)

    def set_status(self, **fields: Any) -> None:
        """Fields added to the payload of the heartbeats this recorder sends (e.g. ``step``)."""
        with self._lock:
            self._status = {**self._status, **fields}

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

    # -- batches: taking, compiling, settling (the caller holds the I/O lock) ---------------

    def _take(self) -> _Pending | None:
        """The batch to send next: the one held for a retry, the prefetched one, or new."""
        if self._held is None:
            p, self._next = self._next, None
            self._held = p if p is not None else self._pop()
        return self._held

    def _pop(self) -> _Pending | None:
        buf = self._buf
        if not buf:
            return None
        with self._lock:
            n = min(len(buf), self.batch_size)
            pop = buf.popleft
            records = [pop() for _ in range(n)]
            p = _Pending(records, self._seq)
            self._seq += n
            self._taken += n
        self._compile(p)
        return p

    def _prefetch(self) -> None:
        """Take and compile the next batch while Redis works on the one just sent."""
        try:
            if self._next is None and self._buf and not self._closed:
                self._next = self._pop()
        except Exception:  # a failure here only costs the overlap
            log.debug("recorder: prefetch failed", exc_info=True)

    def _compile(self, p: _Pending) -> None:
        """All records into one combined batch; on any error, one batch per record."""
        b = Batch(self.retention, self._id_prefix, self._wid)
        base = p.base
        try:
            for i, (write, args) in enumerate(p.records):
                b.seq = base + i
                write(b, *args)
        except Exception:
            self._compile_per_record(p)
            return
        p.commands = b.commands()
        p.groups = None

    def _compile_per_record(self, p: _Pending) -> None:
        commands: list[Command] = []
        groups: list[tuple[int, int, int]] = []
        for i, (write, args) in enumerate(p.records):
            if i in p.invalid:
                continue
            b = Batch(self.retention, self._id_prefix, self._wid)
            b.seq = p.base + i
            try:
                write(b, *args)
            except Exception as exc:
                p.invalid.add(i)
                log.warning(
                    "recorder: a %s record could not be encoded (%s); dropped",
                    write.__name__,
                    type(exc).__name__,
                )
                continue
            start = len(commands)
            commands.extend(b.commands())
            groups.append((i, start, len(commands)))
        p.commands = commands
        p.groups = groups

    def _counters_due(self) -> bool:
        return self.settings.publish_counters and (
            self._closed or time.monotonic() - self._counters_at >= self.settings.counters_every_s
        )

    def _heartbeat_due(self) -> bool:
        return (
            self.worker is not None
            and time.monotonic() - self._last_heartbeat >= self.settings.heartbeat_every_s
        )

    def _status_commands(self, p: _Pending | None) -> tuple[list[Command], Sent]:
        """Schema version, counters and the worker heartbeat to send with a pipeline,
        each when it is due. The counters are those this pipeline's success makes true.
        """
        b = Batch(self.retention, self._id_prefix, self._wid)
        if not self._schema_done:
            writes.schema_version(b)
        heartbeat = self._heartbeat_due()
        publish = self._counters_due()
        counters: dict[str, Any] | None = None
        if publish or heartbeat:
            with self._lock:
                st = self._stats_locked()
                status = dict(self._status)
            extra = p.valid if p is not None and not p.abandoned else 0
            counters = {
                "recorded": st.recorded,
                "written": st.written + extra,
                "dropped": st.dropped,
                "pending": st.pending - extra,
                "retried": st.retried,
            }
            at = self._clock()
            if publish:
                fields: dict[str, Any] = {
                    **counters,
                    "batches": st.batches + (1 if p is not None else 0),
                    "failed_attempts": st.failed_attempts,
                    "pid": os.getpid(),
                    "worker_id": self._wid,
                }
                for reason, n in st.dropped_by_reason.items():
                    fields[f"dropped_{reason}"] = n
                if st.dropped_by_kind:
                    fields["dropped_by_kind"] = dict(st.dropped_by_kind)
                writes.recorder_counters(b, self.recorder_id, fields, at)
            w = self.worker
            if heartbeat and w is not None:
                cur = self._current
                payload = {
                    "current_op": cur[1] if cur is not None else None,
                    "current_model": cur[0] if cur is not None else None,
                    **status,
                    "recorder": counters,
                }
                writes.heartbeat(
                    b, w.id, w.role, w.pod, w.node, w.model_id, list(w.gpu_ids), payload, at
                )
        return b.commands(), (heartbeat, publish)

    def _status_due(self) -> bool:
        """A status-only pipeline is worth sending: a heartbeat is due or counters moved."""
        if not self._schema_done:
            return self._taken > 0 or self.worker is not None
        if self._heartbeat_due():
            return True
        return self._counters_due() and self._snapshot() != self._published

    def _attempt_commands(
        self, p: _Pending | None
    ) -> tuple[list[Command], int, Sent, tuple[int, ...]]:
        """The pipeline to send: the batch, then the status writes; and what to expect."""
        if p is not None and p.attempts > 0:
            with self._lock:
                self._retried += p.valid
        expected = self._snapshot()
        status, sent = self._status_commands(p)
        if p is None:
            return status, 0, sent, expected
        written, *rest = expected
        return p.commands + status, len(p.commands), sent, (written + p.valid, *rest)

    def _snapshot(self) -> tuple[int, ...]:
        """The counters that matter once the buffer is empty (``written`` first)."""
        with self._lock:
            return (
                self._written,
                self._taken,
                self._retried,
                self._failures,
                sum(self._dropped.values()),
            )

    def _on_results(
        self,
        p: _Pending | None,
        results: Sequence[Any],
        n_batch: int,
        sent: Sent,
        expected: tuple[int, ...],
    ) -> Outcome:
        errors = [i for i in range(len(results)) if isinstance(results[i], Exception)]
        for i in errors:
            if _transient(results[i]):
                return self._on_failure(p, results[i])
        self._streak = 0
        if self._connected is False:
            log.info("recorder: Redis answers again")
        self._connected = True
        self._schema_done = True
        heartbeat, counters = sent
        if heartbeat:
            self._last_heartbeat = time.monotonic()
        if counters:
            self._counters_at = time.monotonic()
        if any(i >= n_batch for i in errors):
            log.warning("recorder: Redis rejected a status write (counters or heartbeat)")
        if p is None:
            if counters and self._snapshot() == expected:
                self._published = expected
            return "ok"
        batch_errors = [i for i in errors if i < n_batch]
        if batch_errors and p.groups is None:
            # Find the rejected records: send the batch again, one command group each.
            self._compile_per_record(p)
            p.attempts += 1
            return "again"
        rejected: set[int] = set()
        if batch_errors and p.groups is not None:
            bad = set(batch_errors)
            for i, start, end in p.groups:
                if any(j in bad for j in range(start, end)):
                    rejected.add(i)
            log.warning("recorder: Redis rejected %d record(s); dropped", len(rejected))
        with self._lock:
            if p.abandoned:
                return "ok"
            self._written += p.valid - len(rejected)
            self._settled += len(p.records)
            self._batches += 1
            for i in p.invalid:
                self._drop_locked("invalid", p.records[i][0])
            for i in rejected:
                self._drop_locked("rejected", p.records[i][0])
            self._held = None
        if counters and self._snapshot() == expected:
            self._published = expected  # Redis has the counters stats() has
        return "ok"

    def _on_failure(self, p: _Pending | None, exc: BaseException) -> Outcome:
        with self._lock:
            self._failures += 1
            self._last_error = type(exc).__name__
        if p is not None:
            p.attempts += 1
            if not _transient(exc):
                p.poison += 1
                if p.poison >= _MAX_POISON:
                    return self._give_up(p, exc)
        self._streak += 1
        now = time.monotonic()
        if self._connected is not False or now - self._warned_at >= _LOG_EVERY_S:
            log.warning(
                "recorder: writing to Redis failed (%s); keeping %d record(s), retrying",
                type(exc).__name__,
                self.pending,
            )
            self._warned_at = now
        self._connected = False
        return "failed"

    def _give_up(self, p: _Pending, exc: BaseException) -> Outcome:
        """A batch that fails for a reason other than Redis being away: drop it, go on."""
        log.error(
            "recorder: a batch of %d record(s) failed %d times (%s); dropped as rejected",
            len(p.records),
            p.poison,
            type(exc).__name__,
        )
        with self._lock:
            if not p.abandoned:
                for write, _ in p.records:
                    self._drop_locked("rejected", write)
                self._settled += len(p.records)
                self._held = None
        return "ok"

    def _backoff(self) -> float:
        s = self.settings
        delay = min(s.backoff_cap_s, s.backoff_base_s * 2 ** min(self._streak - 1, 30))
        return random.uniform(delay / 2, delay)

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

"""The flow of batches: taking them from the buffer, compiling them into commands, and
settling each pipeline's outcome, with retries, backoff and the poison limit.

These are the I/O-free steps of a flush; the flusher (``_flusher``) does the I/O and
holds its I/O lock around ``take`` ... ``on_results``/``on_failure``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import redis.exceptions as rexc
from openrl_inspect.recorder._batch import Batch, Command
from openrl_inspect.recorder._buffer import Buffer, Record, log
from openrl_inspect.recorder._config import RecorderSettings, Retention
from openrl_inspect.recorder._pace import Paces
from openrl_inspect.recorder._status import Sent, Status
from openrl_inspect.recorder._writes import WRITES

Outcome = Literal["ok", "again", "failed"]

# Redis answers that mean "try again later", not "this command is wrong".
_TRANSIENT_PREFIXES = (
    "LOADING",
    "BUSY",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "MASTERDOWN",
    "OOM",
    "READONLY",
)
_TRANSIENT = (
    rexc.ConnectionError,
    rexc.TimeoutError,
    rexc.ClusterError,
    rexc.RedisClusterException,
    rexc.TryAgainError,
    rexc.AskError,
    rexc.ReadOnlyError,
    OSError,  # TimeoutError too (an asyncio client's attempt past its deadline)
)
# A batch whose pipeline raised something other than a connection problem this many
# times is dropped (``rejected``), so one bad batch cannot stall the recorder.
_MAX_POISON = 3
_LOG_EVERY_S = 30.0


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, _TRANSIENT):
        return True
    return isinstance(exc, rexc.ResponseError) and str(exc).startswith(_TRANSIENT_PREFIXES)


@dataclass(slots=True, eq=False)
class Pending:
    """A batch taken from the buffer: written (or dropped) as a whole, retried as is."""

    records: list[Record]
    base: int  # sequence number of records[0], for stable record ids
    commands: list[Command] = field(default_factory=list)
    # Per-record mode: (record index, first command, end) for each record.
    groups: list[tuple[int, int, int]] | None = None
    invalid: set[int] = field(default_factory=set)
    attempts: int = 0
    poison: int = 0  # failed attempts that were not Redis being away
    abandoned: bool = False

    @property
    def valid(self) -> int:
        return len(self.records) - len(self.invalid)


class Attempt(NamedTuple):
    """One pipeline: its commands and what its success will make true."""

    batch: Pending | None
    commands: list[Command]
    n_batch: int  # commands of the batch; the status writes follow
    sent: Sent
    expected: tuple[int, ...]  # the counters snapshot once it succeeds


class Flow:
    """Batches from the buffer to commands to settled counters."""

    def __init__(
        self,
        settings: RecorderSettings,
        retention: Retention,
        buffer: Buffer,
        status: Status,
        worker_id: str | None,
    ) -> None:
        self.settings = settings
        self.retention = retention
        self.buffer = buffer
        self.status = status
        self._id_prefix = f"{status.recorder_id}/"
        self._wid = worker_id
        self._owners: dict[str, str] = {}  # session -> owner, of sessions opened here
        self._paces = Paces()  # the step finishes recorded here (``oi:models:pace``)
        self.held: Pending | None = None  # sent, to be retried until settled
        self.next: Pending | None = None  # compiled while Redis works, not sent yet
        self._seq = 0
        self._streak = 0
        self._warned_drops = 0
        self._warned_at = -float("inf")

    # -- taking and compiling ----------------------------------------------------------------

    def take(self) -> Pending | None:
        """The batch to send next: the one held for a retry, the prefetched one, or new."""
        if self.held is None:
            p, self.next = self.next, None
            self.held = p if p is not None else self._pop()
        return self.held

    def prefetch(self) -> None:
        """Take and compile the next batch while Redis works on the one just sent."""
        try:
            if self.next is None and self.buffer.queue and not self.buffer.closed:
                self.next = self._pop()
        except Exception:  # a failure here only costs the overlap
            log.debug("recorder: prefetch failed", exc_info=True)

    def _pop(self) -> Pending | None:
        if not self.buffer.queue:
            return None
        records = self.buffer.take(self.buffer.batch_size)
        if not records:
            return None
        p = Pending(records, self._seq)
        self._seq += len(records)
        if self._wid is not None:
            self._track(records)
        self._compile(p)
        return p

    def _track(self, records: list[Record]) -> None:
        """The op this worker runs, for its heartbeat, from the records as they are taken
        (the record calls leave it to us: a trainer makes them where every instruction
        is cold). The heartbeat sent with a batch is as of that batch."""
        state = self.status.state
        for kind, args in records:
            try:
                if kind == "op_started":
                    if args[2] == self._wid:
                        state.current = (args[0], args[1])
                elif kind == "op_finished":
                    cur = state.current
                    if cur is not None and cur[1] == args[1]:
                        state.current = None
            except Exception:  # a record that cannot say spoils only itself
                continue

    def _batch(self) -> Batch:
        return Batch(self.retention, self._id_prefix, self._wid, self._owners, self._paces)

    def _compile(self, p: Pending) -> None:
        """All records into one combined batch; on any error, one batch per record."""
        b = self._batch()
        base = p.base
        try:
            for i, (kind, args) in enumerate(p.records):
                b.seq = base + i
                WRITES[kind](b, *args)
        except Exception:
            self._compile_per_record(p)
            return
        p.commands = b.commands()
        p.groups = None

    def _compile_per_record(self, p: Pending) -> None:
        commands: list[Command] = []
        groups: list[tuple[int, int, int]] = []
        for i, (kind, args) in enumerate(p.records):
            if i in p.invalid:
                continue
            b = self._batch()
            b.seq = p.base + i
            try:
                WRITES[kind](b, *args)
            except Exception as exc:
                p.invalid.add(i)
                log.warning(
                    "recorder: a %s record could not be encoded (%s); dropped",
                    kind,
                    type(exc).__name__,
                )
                continue
            start = len(commands)
            commands.extend(b.commands())
            groups.append((i, start, len(commands)))
        p.commands = commands
        p.groups = groups

    def attempt(self, p: Pending | None) -> Attempt:
        """The pipeline to send: the batch, then the status writes."""
        if p is not None and p.attempts > 0:
            with self.buffer.lock:
                self.buffer.retried += p.valid
        expected = self.buffer.snapshot()
        riding = p.valid if p is not None and not p.abandoned else 0
        status, sent = self.status.commands(riding)
        if p is None:
            return Attempt(None, status, 0, sent, expected)
        written, *rest = expected
        return Attempt(p, p.commands + status, len(p.commands), sent, (written + p.valid, *rest))

    # -- settling ----------------------------------------------------------------------------

    def on_results(self, a: Attempt, results: Sequence[Any]) -> Outcome:
        errors = [i for i in range(len(results)) if isinstance(results[i], Exception)]
        for i in errors:
            if _transient(results[i]):
                return self.on_failure(a.batch, results[i])
        self._streak = 0
        if self.buffer.connected is False:
            log.info("recorder: Redis answers again")
        self.buffer.connected = True
        self.status.sent(a.sent)
        if any(i >= a.n_batch for i in errors):
            log.warning("recorder: Redis rejected a status write (counters or heartbeat)")
        p = a.batch
        if p is not None:
            batch_errors = [i for i in errors if i < a.n_batch]
            if batch_errors and p.groups is None:
                # Find the rejected records: send the batch again, one command group each.
                self._compile_per_record(p)
                p.attempts += 1
                return "again"
            self._settle(p, self._rejected(p, batch_errors))
        if a.sent[1] and self.buffer.snapshot() == a.expected:
            self.status.published = a.expected  # Redis has the counters stats() has
        return "ok"

    def _rejected(self, p: Pending, batch_errors: list[int]) -> set[int]:
        rejected: set[int] = set()
        if batch_errors and p.groups is not None:
            bad = set(batch_errors)
            for i, start, end in p.groups:
                if any(j in bad for j in range(start, end)):
                    rejected.add(i)
            log.warning("recorder: Redis rejected %d record(s); dropped", len(rejected))
        return rejected

    def _settle(self, p: Pending, rejected: set[int]) -> None:
        buf = self.buffer
        with buf.lock:
            if p.abandoned:
                return
            buf.written += p.valid - len(rejected)
            buf.settled += len(p.records)
            buf.batches += 1
            for i in p.invalid:
                buf.drop_locked("invalid", p.records[i][0])
            for i in rejected:
                buf.drop_locked("rejected", p.records[i][0])
            self.held = None

    def on_failure(self, p: Pending | None, exc: BaseException) -> Outcome:
        buf = self.buffer
        with buf.lock:
            buf.failures += 1
            buf.last_error = type(exc).__name__
        if p is not None:
            p.attempts += 1
            if not _transient(exc):
                p.poison += 1
                if p.poison >= _MAX_POISON:
                    return self._give_up(p, exc)
        self._streak += 1
        now = time.monotonic()
        if buf.connected is not False or now - self._warned_at >= _LOG_EVERY_S:
            log.warning(
                "recorder: writing to Redis failed (%s); keeping %d record(s), retrying",
                type(exc).__name__,
                buf.pending,
            )
            self._warned_at = now
        buf.connected = False
        return "failed"

    def _give_up(self, p: Pending, exc: BaseException) -> Outcome:
        """A batch that fails for a reason other than Redis being away: drop it, go on."""
        log.error(
            "recorder: a batch of %d record(s) failed %d times (%s); dropped as rejected",
            len(p.records),
            p.poison,
            type(exc).__name__,
        )
        buf = self.buffer
        with buf.lock:
            if not p.abandoned:
                for kind, _ in p.records:
                    buf.drop_locked("rejected", kind)
                buf.settled += len(p.records)
                self.held = None
        return "ok"

    def backoff(self) -> float:
        s = self.settings
        delay = min(s.backoff_cap_s, s.backoff_base_s * 2 ** min(self._streak - 1, 30))
        return random.uniform(delay / 2, delay)

    # -- the end -------------------------------------------------------------------------------

    def abandon(self) -> None:
        """At the shutdown deadline: what is still pending is counted as dropped."""
        buf = self.buffer
        buf.drop_queued("shutdown")
        with buf.lock:
            for p in (self.held, self.next):
                if p is not None:
                    p.abandoned = True
                    for kind, _ in p.records:
                        buf.drop_locked("shutdown", kind)
                    buf.settled += len(p.records)
            self.held = self.next = None
        left = buf.stats(self.status.recorder_id).dropped_by_reason.get("shutdown", 0)
        if left:
            log.warning("recorder: closed with %d record(s) unwritten (dropped)", left)

    def warn_drops(self) -> None:
        total = self.buffer.total_dropped()
        if total > self._warned_drops and time.monotonic() - self._warned_at >= _LOG_EVERY_S:
            st = self.buffer.stats(self.status.recorder_id)
            log.warning(
                "recorder: %d record(s) dropped so far (%s)",
                st.dropped,
                ", ".join(f"{k}={v}" for k, v in sorted(st.dropped_by_reason.items())),
            )
            self._warned_drops = total
            self._warned_at = time.monotonic()

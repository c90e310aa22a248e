"""Batches: taking them from the buffer, compiling them, settling each pipeline's outcome.

These are the I/O-free steps of a flush (the caller holds the I/O lock); the flushers
that do the I/O are in ``recorder.recorder``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from typing import Any

import redis.exceptions as rexc
from openrl_inspect.recorder.buffer import _LOG_EVERY_S, Outcome, Sent, _Pending, log
from openrl_inspect.recorder.status import StatusWrites
from openrl_inspect.recorder.writes import Batch, Command

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
# A batch whose pipeline raised something other than a connection problem this many
# times is dropped (``rejected``), so one bad batch cannot stall the recorder.
_MAX_POISON = 3


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, _TRANSIENT):
        return True
    return isinstance(exc, rexc.ResponseError) and str(exc).startswith(_TRANSIENT_PREFIXES)


class BatchFlow(StatusWrites):
    """Taking, compiling and settling batches, with retries and the poison limit."""

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

"""The buffer: the bounded queue every record call appends to, the drop policy at its
door, and the exact counters (``recorded == written + dropped + pending``).

The flow (``_flow``) takes batches out of it and settles them here: written, dropped
(by reason and kind) or given back for a retry; everything that changes a counter
holds ``lock``, which the hot path's normal case never takes.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from openrl_inspect.recorder._config import RecorderSettings, RecorderStats
from openrl_inspect.recorder._writes import LOW_VALUE

log = logging.getLogger("openrl_inspect.recorder")

# (kind, arguments of its write function)
Record = tuple[str, tuple[Any, ...]]

DROP_REASONS = ("full", "shed", "closed", "malformed", "invalid", "rejected", "shutdown")
# Reasons a record is dropped before it enters the buffer.
_AT_THE_DOOR = frozenset({"full", "shed", "closed", "malformed"})


def _nothing() -> None:
    pass


class Buffer:
    """The bounded buffer, its drop policy and the counters of every record."""

    def __init__(self, s: RecorderSettings, batch_size: int, capacity: int) -> None:
        self.batch_size = max(1, batch_size)
        self.capacity = max(capacity, self.batch_size)
        self._shed = max(1, min(self.capacity, int(self.capacity * s.shed_fraction)))
        # Below this length a record is appended with no further check.
        self._fast = min(self.batch_size, self._shed)
        self.queue: deque[Record] = deque()
        # Asks the flusher to run now (the size trigger); set by the flusher.
        self.wake: Callable[[], None] = _nothing
        self.wake_sent = False
        self.lock = threading.Lock()
        self.closed = False
        self.taken = 0  # records taken out of the queue, ever
        self.settled = 0  # of those, written or dropped
        self.written = 0
        self.retried = 0
        self.batches = 0
        self.failures = 0
        self.dropped: dict[tuple[str, str], int] = {}  # (reason, kind) -> records
        self.connected: bool | None = None
        self.last_error: str | None = None
        self._said_malformed: set[str] = set()

    # -- the hot path --------------------------------------------------------------------

    def put(self, rec: Record) -> None:
        queue = self.queue
        if len(queue) < self._fast:
            queue.append(rec)
        else:
            self._overflow(rec)

    def _overflow(self, rec: Record) -> None:
        """The drop policy, in one place: past the fast length, every record comes here."""
        try:
            queue = self.queue
            n = len(queue)
            if self.closed:
                reason = "closed"
            elif n >= self.capacity:
                reason = "full"
            elif n >= self._shed and rec[0] in LOW_VALUE:
                reason = "shed"
            else:
                queue.append(rec)
                if n + 1 >= self.batch_size and not self.wake_sent:
                    self.wake_sent = True
                    self.wake()
                return
            with self.lock:
                self.drop_locked(reason, rec[0])
        except Exception:  # never raise into the caller
            log.debug("recorder: overflow handling failed", exc_info=True)

    def malformed(self, kind: str) -> None:
        """A record call whose arguments could not be captured: counted, not raised.

        Called from the record call's ``except``: the first time per kind, what raised is
        logged, since a fault of ours in the put would otherwise pass as bad arguments.
        """
        try:
            if kind not in self._said_malformed:
                self._said_malformed.add(kind)
                log.warning("recorder: a %s record was refused (malformed)", kind, exc_info=True)
            with self.lock:
                self.drop_locked("malformed", kind)
        except Exception:
            log.debug("recorder: counting a malformed record failed", exc_info=True)

    # -- taking and settling -----------------------------------------------------------------

    def take(self, n: int) -> list[Record]:
        """Up to ``n`` records from the front, counted as taken (in flight)."""
        with self.lock:
            pop = self.queue.popleft
            records = [pop() for _ in range(min(n, len(self.queue)))]
            self.taken += len(records)
        return records

    def drop_locked(self, reason: str, kind: str, n: int = 1) -> None:
        key = (reason, kind)
        self.dropped[key] = self.dropped.get(key, 0) + n

    def close(self) -> None:
        """Refuse every record from now on (counted ``closed``)."""
        with self.lock:
            self.closed = True
            self._fast = -1  # every new record goes through _overflow, which drops it

    def drop_queued(self, reason: str) -> None:
        """Count what is still queued as dropped (at the shutdown deadline)."""
        with self.lock:
            queue = self.queue
            while queue:
                self.drop_locked(reason, queue.popleft()[0])
                self.taken += 1
                self.settled += 1

    # -- counters ----------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Records buffered or in flight (not yet written nor dropped)."""
        with self.lock:
            return len(self.queue) + self.taken - self.settled

    def total_dropped(self) -> int:
        with self.lock:
            return sum(self.dropped.values())

    def stats(self, recorder_id: str) -> RecorderStats:
        with self.lock:
            return self.stats_locked(recorder_id)

    def stats_locked(self, recorder_id: str) -> RecorderStats:
        queued = len(self.queue)
        by_reason: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        dropped_at_door = 0
        for (reason, kind), n in self.dropped.items():
            by_reason[reason] = by_reason.get(reason, 0) + n
            by_kind[kind] = by_kind.get(kind, 0) + n
            if reason in _AT_THE_DOOR:
                dropped_at_door += n
        # Counted independently of ``written + dropped + pending``: a record is taken
        # from the buffer, is still in it, or was turned away at the door.
        return RecorderStats(
            recorder_id=recorder_id,
            recorded=self.taken + queued + dropped_at_door,
            written=self.written,
            dropped=sum(by_reason.values()),
            pending=queued + self.taken - self.settled,
            retried=self.retried,
            batches=self.batches,
            failed_attempts=self.failures,
            dropped_by_reason=MappingProxyType(by_reason),
            dropped_by_kind=MappingProxyType(by_kind),
            connected=self.connected,
            last_error=self.last_error,
        )

    def snapshot(self) -> tuple[int, ...]:
        """The counters that matter once the buffer is empty (``written`` first)."""
        with self.lock:
            return (
                self.written,
                self.taken,
                self.retried,
                self.failures,
                sum(self.dropped.values()),
            )

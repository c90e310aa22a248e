"""The caller's side of the process mode: records encoded into the shared ring.

``Outbox`` stands where ``Buffer`` stands in the thread mode (the record calls put into
it, ``stats()`` reads it). A put encodes the record with one ``orjson.dumps`` and copies
the bytes into the ring (``_ring``) under an uncontended lock: no Python work is left
for later in this process, so no thread of ours ever competes with the caller for the GIL.
The flusher process does everything else.

The drop policy is the thread mode's, counted against the records the flusher process
has not taken into a batch yet (in the ring or its queue): below the shed level every
record is kept, from it low-value records are dropped, at ``capacity`` (or when the
ring's bytes are full) every record.
The door checks run only when the last known numbers say a limit may be near, so the
common put is a copy and three stores.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import orjson
from openrl_inspect.recorder._buffer import say_malformed
from openrl_inspect.recorder._config import RecorderSettings, RecorderStats
from openrl_inspect.recorder._ring import FLOW, KIND_INDEX, KINDS, Counters, Ring, door_word
from openrl_inspect.recorder._writes import LOW_VALUE

log = logging.getLogger("openrl_inspect.recorder")

_dumps = orjson.dumps
_NL = orjson.OPT_APPEND_NEWLINE
STATUS_KIND = ""  # a frame that carries ``set_status`` fields, not a record


def _nothing() -> None:
    pass


def _json_line(rec: Any) -> bytes:
    """The encoding of values orjson refuses (stringified, as ``records.dumps`` does)."""
    return json.dumps(rec, separators=(",", ":"), default=str).encode() + b"\n"


class Outbox:
    """Records into the ring; the door's drop policy; the counters of both processes."""

    def __init__(self, s: RecorderSettings, batch_size: int, capacity: int, ring: Ring) -> None:
        self.batch_size = batch_size
        self.capacity = capacity
        self._shed = max(1, min(capacity, int(capacity * s.shed_fraction)))
        self.ring = ring
        self._size = ring.size
        self._data = ring.data
        self._words = ring.words
        self.lock = threading.Lock()
        self.closed = False
        self.wake: Callable[[], None] = _nothing  # the size trigger: asks the flusher to pull
        self.check: Callable[[], None] = _nothing  # is the flusher process alive?
        self._checked_at = time.monotonic()
        self.crashes = 0  # flusher processes that died (set by whoever watches them)
        self._disowned = False
        self._head = 0  # absolute byte position of the next frame
        self._off = 0  # its offset in the ring
        self._count = 0  # records put into the ring, ever
        self._door: dict[tuple[str, str], int] = {}  # dropped at the door
        self._woken_at = -1  # the flusher's ``taken`` when we last woke it
        self._lim = self._size  # the fast path's limits: offset ...
        self._lim_count = min(self.batch_size, self._shed, capacity)  # ... and record count

    # -- the hot path --------------------------------------------------------------------

    def put(self, rec: tuple[str, tuple[Any, ...]]) -> None:
        try:
            data = _dumps(rec, option=_NL)
        except TypeError:
            data = _json_line(rec)
        with self.lock:
            off = self._off
            end = off + len(data)
            if end <= self._lim and self._count < self._lim_count:
                self._data[off:end] = data
                self._off = end
                self._count += 1
                self._words[0] = self._head = self._head + len(data)
                return
            self._door_locked(rec[0], data)

    def _door_locked(self, kind: str, data: bytes) -> None:
        w = self._words
        tail, taken, batched = w[FLOW], w[FLOW + 1], w[FLOW + 3]
        queued = self._count - batched  # as the thread mode counts: not in a batch yet
        if self.closed:
            reason: str | None = "closed"
        elif queued >= self.capacity:
            reason = "full"
        elif queued >= self._shed and kind in LOW_VALUE:
            reason = "shed"
        else:
            reason = None if self._append_locked(data, tail) else "full"
        if reason is not None:
            self._drop_locked(reason, kind)
        self._limits_locked(tail, taken, batched)

    def _append_locked(self, data: bytes, tail: int) -> bool:
        n, off, head, size = len(data), self._off, self._head, self._size
        gap = size - off if off + n > size else 0
        if head + gap + n - tail > size:
            return False  # the ring's bytes are full
        if gap:
            self._data[off:size] = b" " * gap  # JSON whitespace: the reader skips it
            off = 0
        self._data[off : off + n] = data
        self._off = off + n
        self._count += 1
        self._words[0] = self._head = head + gap + n
        return True

    def _limits_locked(self, tail: int, taken: int, batched: int) -> None:
        self._lim = min(self._size, tail + self._size - (self._head - self._off))
        lim = batched + min(self._shed, self.capacity)
        if self._count - taken >= self.batch_size and taken != self._woken_at:
            self._woken_at = taken
            self.wake()
        # next look: after another batch while a wake is outstanding, else at a full batch
        lim = min(
            lim,
            self._count + self.batch_size if self._woken_at == taken else taken + self.batch_size,
        )
        self._lim_count = lim if not self.closed else -1
        now = time.monotonic()
        if now - self._checked_at >= 0.5:
            self._checked_at = now
            self.check()

    def _drop_locked(self, reason: str, kind: str, n: int = 1) -> None:
        key = (reason, kind)
        self._door[key] = self._door.get(key, 0) + n
        if kind in KIND_INDEX:  # for the counters the flusher process publishes
            self._words[door_word(reason, kind)] += n

    def malformed(self, kind: str) -> None:
        """A record call whose arguments could not be captured: counted, not raised.

        Called from the record call's ``except``: the first time per kind, what raised is
        logged, since a fault of ours in the put would otherwise pass as bad arguments.
        """
        say_malformed(kind)
        try:
            with self.lock:
                self._drop_locked("malformed", kind)
        except Exception:
            log.debug("recorder: counting a malformed record failed", exc_info=True)

    def note_status(self, fields: Mapping[str, Any]) -> None:
        """``set_status`` fields, for the heartbeats the flusher process sends."""
        try:
            data = _dumps((STATUS_KIND, dict(fields)), option=_NL)
        except TypeError:
            data = _json_line((STATUS_KIND, dict(fields)))
        with self.lock:
            count = self._count
            if self.closed or not self._append_locked(data, self._words[FLOW]):
                log.debug("recorder: status fields not sent (ring full or closed)")
            self._count = count  # not a record

    # -- the end and the counters ---------------------------------------------------------

    def close(self) -> None:
        """Refuse every record from now on (counted ``closed``)."""
        with self.lock:
            self.closed = True
            self._lim_count = -1

    def disown(self) -> None:
        """In a process forked from the recorder's: refuse every record (``closed``) and
        report no counters of the ring, which belongs to the recorder's process."""
        self.lock = threading.Lock()  # the fork may have copied it held
        self.closed = True
        self._lim_count = -1
        self._door = {}
        self._count = 0
        self._words = memoryview(bytearray(1024)).cast("q")
        self._disowned = True

    @property
    def count(self) -> int:
        """Records put into the ring, ever."""
        with self.lock:
            return self._count

    @property
    def head(self) -> int:
        with self.lock:
            return self._head

    def counters(self) -> Counters:
        """What the flusher process reports (nothing, in a forked process)."""
        return Counters() if self._disowned else self.ring.load()

    @property
    def pending(self) -> int:
        with self.lock:
            return self._count - self.counters().settled

    def stats(self, recorder_id: str) -> RecorderStats:
        self.check()
        with self.lock:
            count = self._count
            door = dict(self._door)
        c = self.counters()
        return _stats(recorder_id, count, door, c, self.crashes)


def _stats(
    rid: str, count: int, door: dict[tuple[str, str], int], c: Counters, crashes: int
) -> RecorderStats:
    by_reason: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    late = {(r, KINDS[k]): n for (r, k), n in c.dropped.items()}
    for (reason, kind), n in [*door.items(), *late.items()]:
        by_reason[reason] = by_reason.get(reason, 0) + n
        by_kind[kind] = by_kind.get(kind, 0) + n
    return RecorderStats(
        recorder_id=rid,
        recorded=count + sum(door.values()),
        written=c.written,
        dropped=sum(by_reason.values()),
        pending=count - c.settled,
        retried=c.retried,
        batches=c.batches,
        failed_attempts=c.failures,
        dropped_by_reason=MappingProxyType(by_reason),
        dropped_by_kind=MappingProxyType(by_kind),
        connected=c.connected,
        last_error=c.last_error,
        flusher_crashes=crashes,
    )

"""The caller's side of the process mode: records handed to a porter, encoded into the
shared ring.

``Outbox`` stands where ``Buffer`` stands in the thread mode (the record calls put into
it, ``stats()`` reads it). A put appends the record's tuple to a local queue, as the
thread mode's buffer does: nothing else happens in the call. A porter thread moves the
queue into the ring in order (one ``orjson.dumps`` and a copy per record, a few
microseconds of warm work each) every ``flush_interval_s``, when a batch is waiting, at
``flush_soon()`` and before a ``flush``/``close``, and then wakes the flusher process,
which does everything else.

Why a porter and not the encoding in the call (measured, docs/benchmarks.md, issue 17):
a trainer makes its record calls right after waiting on its GPU, when the caller's
caches are cold, and there the encoding put cost 49 - 69 us a call against 23 - 29 us
for an append (an empty Python function: 8 - 13 us); in a warm loop both are 1 - 4 us.
The porter holds the GIL about 1.5 us per record, in one stretch per batch, against the
thread flusher's 7.7 us.

The drop policy is the thread mode's, applied as a record enters the ring, counted
against the records the flusher process has not taken into a batch yet (in the ring or
its queue): below the shed level every record is kept, from it low-value records are
dropped, at ``capacity`` (or when the ring's bytes are full) every record. The local
queue holds at most ``capacity`` records (beyond: dropped, ``full``). The ring's door
checks run only when the last known numbers say a limit may be near, so the common
entry is a copy and three stores.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
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
        # The local queue: the record calls append, the porter takes (``port``).
        self.local: deque[tuple[str, tuple[Any, ...]]] = deque()
        self._local_fast = batch_size  # the hot path's limit: beyond it, ask for a port
        # set_status changed ``status_fields``: the porter sends them (``note_status``),
        # so the caller pays a dict update, not an encoding and a lock.
        self.status_dirty = False
        self.status_fields: dict[str, Any] = {}
        self._port_lock = threading.Lock()  # one porter at a time: the ring keeps call order
        self._port_asked = False  # a port asked by the hot path, not done yet
        self._nudge_asked = False  # flush_soon: wake the flusher process after the port
        self._port_ev = threading.Event()
        self._porter: threading.Thread | None = None
        self._interval = s.flush_interval_s
        self._stopping = False
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

    # -- the hot path and the porter ------------------------------------------------------

    def put(self, rec: tuple[str, tuple[Any, ...]]) -> None:
        local = self.local
        if len(local) < self._local_fast:
            local.append(rec)
        else:
            self._overflow(rec)

    def _overflow(self, rec: tuple[str, tuple[Any, ...]]) -> None:
        """A put past the hot path's limit: refused when closed or full, else kept and
        the porter asked (once) to move the batch now."""
        try:
            local = self.local
            if self._stopping or len(local) >= self.capacity:  # closing, closed or disowned
                with self.lock:
                    self._drop_locked("closed" if self._stopping else "full", rec[0])
                return
            local.append(rec)
            if not self._port_asked:
                self._port_asked = True
                self._port_ev.set()
        except Exception:  # never raise into the caller
            log.debug("recorder: overflow handling failed", exc_info=True)

    def start_porter(self) -> None:
        """Start the porter thread (idempotent)."""
        if self._porter is None and not self._stopping:
            self._porter = threading.Thread(
                target=self._run_porter, name="openrl-recorder-porter", daemon=True
            )
            self._porter.start()

    def ask_port(self) -> None:
        """Have the porter move the local queue into the ring now and wake the flusher
        process (``flush_soon``); returns at once."""
        self._nudge_asked = True
        self._port_ev.set()

    def _run_porter(self) -> None:
        while not self._stopping:
            self._port_ev.wait(self._interval)
            self._port_ev.clear()
            if self._stopping:
                return
            try:
                asked, self._nudge_asked = self._nudge_asked, False
                if self.port() or asked:
                    self.wake()
            except Exception:  # the porter must outlive anything
                log.exception("recorder: moving records into the ring failed")

    def port(self) -> int:
        """Move the local queue into the ring, in call order; returns how many."""
        local, n = self.local, 0
        with self._port_lock:
            self._port_asked = False
            if self.status_dirty:
                self.status_dirty = False  # first: a set_status racing this one re-marks it
                try:
                    self.note_status(dict(self.status_fields))
                except Exception:  # never into the porter or a flush
                    log.debug("recorder: status fields not sent", exc_info=True)
            while local:
                rec = local.popleft()
                n += 1
                try:
                    self._enter(rec)
                except Exception:  # one record that cannot enter spoils only itself
                    self.malformed(rec[0])
        return n

    def _enter(self, rec: tuple[str, tuple[Any, ...]]) -> None:
        """One record into the ring, through the door's drop policy."""
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
        wraps = off + n > size
        gap = size - off if wraps else 0
        if head + gap + n - tail > size:
            return False  # the ring's bytes are full
        if wraps:  # also when the last record ended exactly at the end: no gap, offset 0
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
        """Move what the local queue holds into the ring, then refuse every record from now
        on (counted ``closed``) and stop the porter."""
        self._stopping = True  # new puts take the slow path, which refuses them
        self._local_fast = -1
        self._port_ev.set()
        self.port()
        with self.lock:
            self.closed = True
            self._lim_count = -1
        # A put that raced the first port (past its limit check before it changed).
        while self.local:
            rec = self.local.popleft()
            with self.lock:
                self._drop_locked("closed", rec[0])

    def disown(self) -> None:
        """In a process forked from the recorder's: refuse every record (``closed``) and
        report no counters of the ring, which belongs to the recorder's process."""
        self.lock = threading.Lock()  # the fork may have copied it held
        self._port_lock = threading.Lock()
        self.local = deque()  # the records of the process forked from
        self._porter = None  # threads do not survive a fork
        self._stopping = True
        self._local_fast = -1
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
        with self._port_lock, self.lock:  # no record between the queue and the ring
            return len(self.local) + self._count - self.counters().settled

    def stats(self, recorder_id: str) -> RecorderStats:
        self.check()
        with self._port_lock, self.lock:  # no record between the queue and the ring
            count = len(self.local) + self._count
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

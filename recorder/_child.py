"""The flusher process: reads records from the shared ring and writes them to Redis.

Started by ``_process`` as ``python -m openrl_inspect.recorder._child RING_FD WAKE_FD``
with its ``ChildConfig`` pickled on stdin. It runs the thread mode's own parts (buffer,
flow with retries and backoff, status writes, ``ThreadFlusher``) on records it decodes
from the ring, and reports its counters into the ring's slots after every pull and
every pipeline. Its main thread is the clock: every ``flush_interval_s``, or when the
recorder writes to the wake pipe, it pulls what the ring holds and wakes the flusher.

Wake-pipe messages: ``w`` (a batch is waiting), ``f`` (flush now), ``s`` (start
flushing in the background), ``c<seconds>\\n`` (close within that many seconds). End of
file (the recorder's process is gone) closes within ``close_timeout_s``.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import sys
import threading
import time
from dataclasses import replace
from typing import Any

import orjson
from openrl_inspect.recorder._buffer import Buffer, log
from openrl_inspect.recorder._connect import build_client
from openrl_inspect.recorder._flow import Flow, Outcome, Pending
from openrl_inspect.recorder._process import ChildConfig
from openrl_inspect.recorder._ring import (
    KIND_INDEX,
    KINDS,
    LATE_REASONS,
    Counters,
    Ring,
    door_drops,
)
from openrl_inspect.recorder._status import Status
from openrl_inspect.recorder._threaded import ThreadFlusher


def _decode(line: bytes) -> Any:
    """One frame's JSON, or None if it cannot be decoded."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            return json.loads(line)  # NaN and friends, from the fallback encoder
        except ValueError:
            return None


def _shape(frame: Any) -> tuple[str, Any]:
    """A frame as ``(kind, arguments)``: a record ``[kind, [arguments]]`` or status fields
    ``["", {fields}]``. Any other shape is ``("unknown", None)``: counted and dropped by
    itself, never a crash of this process that would take the ring's stretch with it."""
    if type(frame) is list and len(frame) == 2 and type(frame[0]) is str:
        return frame[0], frame[1]
    return "unknown", None


class _Flusher(ThreadFlusher):
    """The thread flusher, reporting the counters after every pipeline."""

    child: Child

    def _attempt(self, p: Pending | None) -> Outcome:
        self.child.sync_door()
        try:
            return super()._attempt(p)
        finally:
            self.child.publish()


class Child:
    """One flusher process: the ring in, the flow out, the counters back."""

    def __init__(self, cfg: ChildConfig, ring_fd: int, wake_fd: int) -> None:
        self.cfg = cfg
        self.ring = Ring(cfg.ring_size, ring_fd)
        self.wake_fd = wake_fd
        c = self.ring.load()
        # The recorder enforces capacity and shedding; here everything taken is kept. The
        # main thread is the clock, so the flusher thread's own timer is off.
        s = replace(cfg.settings, capacity=2**62, shed_fraction=1.0, flush_interval_s=3600.0)
        self.settings = s
        buf = self.buffer = Buffer(s, s.batch_size, s.capacity)
        buf.written, buf.retried, buf.batches, buf.failures = (
            c.written,
            c.retried,
            c.batches,
            c.failures,
        )
        buf.dropped = {(r, KINDS[k]): n for (r, k), n in c.dropped.items()}
        buf.taken = buf.settled = c.settled  # a new process starts with nothing in flight
        buf.written_by_kind = {KINDS[k]: n for k, n in enumerate(c.written_by_kind) if n}
        self.tail, self.pulled = c.tail, c.taken
        self.taken_by_kind = list(c.taken_by_kind)
        self.status = Status(s, cfg.retention, buf, cfg.recorder_id, cfg.worker, time.time)
        wid = cfg.worker.id if cfg.worker is not None else None
        self.flow = Flow(s, cfg.retention, buf, self.status, wid)
        # Record ids follow the records' sequence numbers: a record re-read after a
        # crash gets the id it had, so its write is the same write again.
        self.flow._seq = c.settled
        self.wid = wid
        self.client = build_client(cfg.client, s)
        self.flusher = _Flusher(s, buf, self.flow, self.status, self.client)
        self.flusher.child = self
        self.started = cfg.start
        self._publish = threading.Lock()

    # -- the ring --------------------------------------------------------------------------

    def pull(self) -> int:
        """Move every record the ring holds into the buffer."""
        head = self.ring.words[0]
        if head == self.tail:
            return 0
        raw = self.ring.read(self.tail, head)
        try:  # the whole stretch as one JSON array: one call into orjson
            frames: list[Any] = orjson.loads(b"[" + raw.rstrip().replace(b"\n", b",") + b"]")
        except orjson.JSONDecodeError:
            frames = [_decode(line) for line in raw.split(b"\n") if line and not line.isspace()]
        queue, by_kind, n = self.buffer.queue, self.taken_by_kind, 0
        for frame in frames:
            kind, args = _shape(frame)
            if not kind and type(args) is dict:  # set_status fields, not a record
                with self.buffer.lock:
                    self.status.state.fields = {**self.status.state.fields, **args}
                continue
            k = KIND_INDEX.get(kind, -1) if type(args) is list else -1
            if k < 0:  # never expected: counted, so accounting stays exact
                self._undecodable()
                k = KIND_INDEX["unknown"]
            else:
                queue.append((kind, tuple(args)))
            by_kind[k] += 1
            n += 1
        self.tail = head
        self.pulled += n
        self.publish()
        return n

    def _undecodable(self) -> None:
        log.error("recorder: an undecodable record in the ring; dropped")
        with self.buffer.lock:
            self.buffer.drop_locked("invalid", "unknown")
            self.buffer.taken += 1
            self.buffer.settled += 1

    def sync_door(self) -> None:
        """The recorder's drops at the door, into the counters this process publishes."""
        door = door_drops(self.ring.words)
        with self.buffer.lock:
            self.buffer.dropped.update(door)

    def publish(self) -> None:
        buf = self.buffer
        with self._publish, buf.lock:
            c = Counters(
                tail=self.tail,
                taken=self.pulled,
                written=buf.written,
                retried=buf.retried,
                batches=buf.batches,
                failures=buf.failures,
                connected=buf.connected,
                taken_by_kind=list(self.taken_by_kind),
                written_by_kind=[(buf.written_by_kind or {}).get(k, 0) for k in KINDS],
                dropped={
                    (r, KIND_INDEX[k]): n for (r, k), n in buf.dropped.items() if r in LATE_REASONS
                },
                last_error=buf.last_error,
            )
            self.ring.store(c, buf.taken)

    # -- the clock -------------------------------------------------------------------------

    def run(self) -> None:
        self.flusher.start()
        interval = self.cfg.settings.flush_interval_s
        while True:
            ready, _, _ = select.select([self.wake_fd], [], [], interval)
            msg = os.read(self.wake_fd, 4096) if ready else b""
            if ready and not msg:  # the recorder's process is gone
                msg = b"c%r\n" % self.cfg.settings.close_timeout_s
            self.pull()
            if b"c" in msg:
                seconds = float(msg.split(b"c", 1)[1].split(b"\n", 1)[0])
                self.close(time.monotonic() + seconds)
                return
            if b"s" in msg:
                self.started = True
            if self.started or b"f" in msg:
                self.flusher.wake()

    def close(self, deadline: float) -> None:
        self.buffer.close()
        self.flusher.close(deadline)
        self.flow.abandon()
        self.publish()
        try:
            self.client.close()
        except Exception:
            log.debug("recorder: closing the client failed", exc_info=True)


def lower_priority(nice: int) -> None:
    """Run this process ``nice`` steps below its caller, also where the kernel groups
    processes by session.

    This process has a session of its own, and where the kernel has autogroups (enabled
    by default on most distributions; they apply to processes in the root cpu cgroup, as
    on a VM or a desktop, not in a pod's cgroup) a session is a scheduling group: a
    process's own niceness then only orders it within its group, and the group competes
    with the caller's as an equal. Measured on this project's 2-vCPU VMs: a flusher
    process at nice 19 in its own autogroup took a core from a trainer at nice -10 when
    woken (docs/benchmarks.md, issue 17). So the group's niceness is set too.
    """
    caller_nice = os.getpriority(os.PRIO_PROCESS, 0)  # inherited from the caller
    try:
        os.nice(nice)
    except OSError:  # a seccomp profile may refuse it: flush at the caller's priority
        log.debug("recorder: could not lower the flusher process's priority")
    try:
        caller = _read(f"/proc/{os.getppid()}/autogroup")
        mine = _read("/proc/self/autogroup")
    except OSError:  # no autogroups in this kernel: the nice above is it
        return
    target = group_nice(caller, caller_nice, mine, nice)
    if target is None:
        return
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(target))
    except OSError:  # below the caller's group needs no privilege; refused, we tried
        log.debug("recorder: could not lower the flusher process's scheduling group")


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def group_nice(caller: str, caller_nice: int, mine: str, nice: int) -> int | None:
    """The niceness for this process's autogroup, from the caller's and this process's
    ``/proc/<pid>/autogroup`` ("/autogroup-85 nice 0", or empty for a process in no
    autogroup), or None where there is nothing to set.

    A caller in no autogroup (its session is init's, as under a service manager or a CI
    runner that never called setsid) runs in the root task group itself, where its own
    niceness is its weight against our group: ours goes ``nice`` below that.
    """
    if not mine.split():
        return None  # this process is in no autogroup: its niceness is its weight
    words = caller.split()
    try:
        base = int(words[-1]) if words else caller_nice
    except ValueError:
        return None
    return max(-20, min(19, base + nice))


def main() -> None:
    # The recorder decides when this process ends (Ctrl-C reaches the caller, not us).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ring_fd, wake_fd = int(sys.argv[1]), int(sys.argv[2])
    cfg = pickle.load(sys.stdin.buffer)
    assert isinstance(cfg, ChildConfig)
    if cfg.settings.flusher_nice > 0:
        lower_priority(cfg.settings.flusher_nice)
    Child(cfg, ring_fd, wake_fd).run()
    os._exit(0)  # a drain helper stuck on a dead socket must not hold the exit


if __name__ == "__main__":
    main()

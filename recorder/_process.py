"""The process mode's flusher, seen from the recorder: start, wake, watch and stop the
flusher process (``_child``), fed through the ring (``_ring``) by the ``Outbox``.

The flusher process is a fresh interpreter (``python -m``, not ``multiprocessing``: the
caller's ``__main__`` is never imported again, so a script without a main guard is
fine) in its own session (a Ctrl-C to the caller's terminal is the caller's to handle).
It gets the ring's file and the read end of a wake pipe; it sees end of file on that
pipe when this process ends, and then writes what is left on its own.

A flusher process that dies is noticed on the recorder's next look (``stats``, ``flush``,
``close``, or a put that reaches a limit, at most every 0.5 s): its records in flight are
counted as dropped (``lost``), and a new one starts from the ring's last reported
position (records it had read but not reported are read again: every write is
idempotent and record ids follow record numbers).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import pickle
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from openrl_inspect.recorder._buffer import log
from openrl_inspect.recorder._config import RecorderSettings, Retention, WorkerInfo
from openrl_inspect.recorder._connect import ClientSpec
from openrl_inspect.recorder._outbox import Outbox
from openrl_inspect.recorder._ring import KIND_INDEX, Counters, supported

_CHILD = "openrl_inspect.recorder._child"
# A flusher process that dies this many times in a row, each within a minute of its
# start, is not started again (its records are then dropped when the buffer fills).
_MAX_QUICK_CRASHES = 5


@dataclass(frozen=True)
class ChildConfig:
    """What a flusher process is told on its stdin."""

    settings: RecorderSettings
    retention: Retention
    worker: WorkerInfo | None
    recorder_id: str
    client: ClientSpec
    ring_size: int
    start: bool


def process_mode(settings: RecorderSettings, spec: ClientSpec | None) -> bool:
    """Whether this recorder flushes from a process (``settings.flusher`` and the client)."""
    mode = settings.flusher
    if mode == "thread":
        return False
    if spec is None or not supported():
        if mode == "process":
            log.warning("recorder: no flusher process for this client or platform; a thread")
        return False
    return True


class ProcessFlusher:
    """Starts, wakes, watches and stops one recorder's flusher process."""

    def __init__(
        self,
        settings: RecorderSettings,
        retention: Retention,
        worker: WorkerInfo | None,
        recorder_id: str,
        spec: ClientSpec,
        outbox: Outbox,
        start: bool,
    ) -> None:
        self.settings = settings
        self.outbox = outbox
        self.ring = outbox.ring
        self._config = (settings, retention, worker, recorder_id, spec)
        self._started = start
        self._lock = threading.RLock()  # process start and crash handling
        self._proc: subprocess.Popen[bytes] | None = None
        self._wfd = -1
        self.crashes = 0
        self._quick_crashes = 0
        self._started_at = 0.0
        self._closing = False
        self._finalizer: weakref.finalize[Any, Any] | None = None
        # A process forked from the recorder's shares the ring but not the flusher: it
        # must neither write into the ring (its outbox is closed) nor stop the flusher.
        self._owner = os.getpid()
        _OWNED.add(outbox)
        outbox.wake = self._wake_process
        outbox.check = self.check
        self._spawn()
        outbox.start_porter()

    @staticmethod
    def ring_size(s: RecorderSettings, capacity: int) -> int:
        """Bytes for ``capacity`` records of about 256 bytes, within 1 - 64 MiB."""
        return min(64 << 20, max(1 << 20, capacity * 256))

    def _spawn(self) -> None:
        settings, retention, worker, rid, spec = self._config
        cfg = ChildConfig(settings, retention, worker, rid, spec, self.ring.size, self._started)
        rfd, wfd = os.pipe()
        os.set_blocking(wfd, False)
        try:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "openrl_inspect.recorder._child",
                    str(self.ring.fd),
                    str(rfd),
                ],
                stdin=subprocess.PIPE,
                pass_fds=(self.ring.fd, rfd),
                start_new_session=True,
            )
            assert proc.stdin is not None
            proc.stdin.write(pickle.dumps(cfg))
            proc.stdin.close()
        finally:
            os.close(rfd)
        self._proc, self._wfd = proc, wfd
        self._started_at = time.monotonic()
        _reap()
        _CHILDREN.add(proc)
        if self._finalizer is not None:
            self._finalizer.detach()
        # A recorder dropped without close(): its flusher process writes what it holds
        # and ends, as it would when this process ends.
        close_msg = b"c%r\n" % self.settings.close_timeout_s
        self._finalizer = weakref.finalize(self, _abandoned, wfd, close_msg)

    def _forget(self, proc: subprocess.Popen[bytes]) -> None:
        """A flusher process that ended: no more messages to it."""
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        os.close(self._wfd)
        self._proc = None
        _CHILDREN.discard(proc)

    def _send(self, msg: bytes) -> None:
        if os.getpid() != self._owner:
            return
        with contextlib.suppress(BlockingIOError, BrokenPipeError, OSError):
            os.write(self._wfd, msg)  # a full pipe already holds a wake-up

    def wake(self) -> None:
        """Flush now, in the background (returns at once): the porter moves what the
        record calls queued into the ring and wakes the flusher process."""
        if os.getpid() == self._owner:  # a forked process has no porter
            self.outbox.ask_port()

    def _wake_process(self) -> None:
        """Tell the flusher process that the ring holds records to take."""
        self._send(b"w")

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._send(b"s")

    @property
    def started(self) -> bool:
        return self._started

    # -- a flusher process that died ----------------------------------------------------------

    def check(self) -> None:
        """Notice a flusher process that died; count its records in flight; start another."""
        with self._lock:
            proc = self._proc
            if proc is None or self._closing or os.getpid() != self._owner:
                return
            if proc.poll() is None:
                return
            self.crashes += 1
            self.outbox.crashes = self.crashes
            quick = time.monotonic() - self._started_at < 60
            self._quick_crashes = self._quick_crashes + 1 if quick else 1
            self._forget(proc)
            lost = self._settle_unsettled("lost")
            log.error(
                "recorder: the flusher process ended (exit code %s); %d record(s) in flight lost",
                proc.returncode,
                lost,
            )
            if self._quick_crashes <= _MAX_QUICK_CRASHES:
                self._spawn()
            else:
                log.error("recorder: the flusher process keeps dying; not started again")

    def _settle_unsettled(self, reason: str, ring_too: bool = False) -> int:
        """With no flusher process running: count what it had taken and not settled
        (and, with ``ring_too``, what is still in the ring) as dropped."""
        c = self.ring.load()
        n = 0
        for kind, left in c.unsettled_by_kind().items():
            _add(c, reason, kind, left)
            n += left
        if ring_too:
            head = self.outbox.head
            for kind in _kinds_in(self.ring.read(c.tail, head)):
                _add(c, reason, kind, 1)
                c.taken += 1
                c.taken_by_kind[KIND_INDEX[kind]] += 1
                n += 1
            c.tail = head
        self.ring.store(c)
        return n

    # -- flush and close ------------------------------------------------------------------------

    def settled(self) -> int:
        return self.ring.load().settled

    def flush_step(self, target: int) -> bool:
        """One look while a flush waits: True once ``target`` records are settled."""
        self.check()
        return self.settled() >= target

    def flush(self, target: int, deadline: float) -> None:
        """Wait until ``target`` records are settled, or ``deadline`` (monotonic); the
        caller has moved its records into the ring (``Outbox.port``)."""
        self._send(b"f")
        pause = 0.0005
        while not self.flush_step(target):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(pause, left))
            pause = min(2 * pause, 0.02)

    async def aflush(self, target: int, deadline: float) -> None:
        """``flush`` for a coroutine: the waits are ``asyncio.sleep``."""
        self._send(b"f")
        pause = 0.0005
        while not self.flush_step(target):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(min(pause, left))
            pause = min(2 * pause, 0.02)

    def close(self, deadline: float) -> None:
        """Have the flusher process write what is pending until ``deadline``, then end it;
        what it has not written by then is counted as dropped (``shutdown``)."""
        if os.getpid() != self._owner:
            return
        with self._lock:
            self._closing = True
            proc = self._proc
        if proc is not None:
            left = max(0.0, deadline - time.monotonic())
            # Leave the process a margin to report its last counters before the deadline.
            self._send(b"c%r\n" % max(0.0, left - min(0.2, left / 4)))
            try:
                proc.wait(left)
            except subprocess.TimeoutExpired:
                log.warning("recorder: the flusher process missed the close deadline; killed")
                proc.kill()
                proc.wait()
            self._forget(proc)
        self._settle_unsettled("shutdown", ring_too=True)


_OWNED: weakref.WeakSet[Outbox] = weakref.WeakSet()
# Flusher processes not reaped yet: a Popen collected while its process runs warns.
_CHILDREN: set[subprocess.Popen[bytes]] = set()


def _reap() -> None:
    for proc in list(_CHILDREN):
        if proc.poll() is not None:
            _CHILDREN.discard(proc)


@atexit.register
def _outlive() -> None:
    """Flusher processes of recorders never closed outlive this process by design (they
    see end of file and write what they hold): not a leaked subprocess to warn about.
    What their record calls queued goes into the ring first."""
    for outbox in list(_OWNED):
        try:
            outbox.port()
        except Exception:
            log.debug("recorder: moving records into the ring at exit failed", exc_info=True)
    for proc in list(_CHILDREN):
        if proc.poll() is None:
            proc._child_created = False  # type: ignore[attr-defined]  # Popen.__del__: no warning
    _CHILDREN.clear()


def _abandoned(wfd: int, close_msg: bytes) -> None:
    with contextlib.suppress(OSError):
        os.write(wfd, close_msg)
        os.close(wfd)


def _after_fork() -> None:
    for outbox in list(_OWNED):
        outbox.disown()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _add(c: Counters, reason: str, kind: str, n: int) -> None:
    key = (reason, KIND_INDEX[kind])
    c.dropped[key] = c.dropped.get(key, 0) + n


def _kinds_in(raw: bytes) -> list[str]:
    """The kinds of the records in a stretch of the ring (status frames left out)."""
    out = []
    for line in raw.split(b"\n"):
        if not line or line.isspace():
            continue
        try:
            kind = str(line.lstrip().split(b'"', 2)[1].decode())
        except (IndexError, UnicodeDecodeError):
            kind = "unknown"
        if kind:
            out.append(kind if kind in KIND_INDEX else "unknown")
    return out

"""The flusher: a daemon thread that writes the buffer's batches, for both recorders.

It wakes on the time trigger (``flush_interval_s``), the size trigger (a full batch
waiting) or ``wake()``, and drains the buffer through its pipe (``_send``). ``flush``
and ``close`` drain from a helper thread that they wait for until their deadline, so
they return on time even when a socket call is stuck; one I/O lock keeps every attempt
in order, so batches reach Redis in the order they were recorded.
"""

from __future__ import annotations

import threading
import time

from openrl_inspect.recorder._buffer import Buffer, log
from openrl_inspect.recorder._config import RecorderSettings
from openrl_inspect.recorder._flow import Flow, Outcome, Pending
from openrl_inspect.recorder._send import Pipe
from openrl_inspect.recorder._status import Status


class Flusher:
    """Writes a buffer's batches through a pipe, from a daemon thread."""

    def __init__(
        self, settings: RecorderSettings, buffer: Buffer, flow: Flow, status: Status, pipe: Pipe
    ) -> None:
        self.settings = settings
        self.pipe = pipe
        self._buffer = buffer
        self._flow = flow
        self._status = status
        self._io = threading.Lock()
        self._wake = threading.Event()
        buffer.wake = self._wake.set
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the flusher thread (idempotent)."""
        if self._thread is not None or self._buffer.closed:
            return
        self._thread = threading.Thread(target=self._run, name="openrl-recorder", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Flush now, in the background (returns at once)."""
        self._wake.set()

    def _run(self) -> None:
        interval = self.settings.flush_interval_s
        while not self._stop.is_set():
            self._wake.wait(interval)
            self._wake.clear()
            self._buffer.wake_sent = False
            if self._stop.is_set():
                break
            try:
                self._drain(None, None)
                self._flow.warn_drops()
            except Exception:  # the flusher must outlive anything
                log.exception("recorder: flusher cycle failed")
                self._stop.wait(interval)

    def _attempt(self, p: Pending | None, deadline: float | None) -> Outcome:
        a = self._flow.attempt(p)
        if not a.commands:
            return "ok"
        limit = self.settings.attempt_timeout_s
        if deadline is not None:
            limit = max(0.0, min(limit, deadline - time.monotonic()))
        try:
            results = self.pipe.execute(a.commands, limit, self._flow.prefetch)
        except Exception as exc:
            return self._flow.on_failure(p, exc)
        return self._flow.on_results(a, results)

    def _drain(self, target: int | None, deadline: float | None) -> bool:
        """Send batches until the buffer is empty or ``target`` records are settled.

        ``deadline`` None: the background thread, which stops when asked to. Otherwise
        a helper of ``flush``/``close`` that gives up at ``deadline`` (monotonic).
        """
        while True:
            if deadline is None and self._stop.is_set():
                return False
            if target is not None and self._buffer.settled >= target:
                return True
            if deadline is None:
                self._io.acquire()
            else:
                left = deadline - time.monotonic()
                if left <= 0 or not self._io.acquire(timeout=left):
                    return False
            try:
                p = self._flow.take()
                if p is not None:
                    outcome = self._attempt(p, deadline)
                elif self._status.due():
                    outcome = self._attempt(None, deadline)
                else:
                    return True
            finally:
                self._io.release()
            if outcome == "failed" and not self._pause(deadline):
                return False

    def _pause(self, deadline: float | None) -> bool:
        """Back off after a failed attempt; False: stop draining (asked to, or too late)."""
        delay = self._flow.backoff()
        if deadline is None:
            return not self._stop.wait(delay)
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        return True

    def flush(self, target: int | None, deadline: float) -> None:
        """Settle ``target`` records (by count taken; None: all), giving up at ``deadline``.

        The drain runs in a helper thread: one stuck in a send or receive finishes (or
        fails) on its own later, and its batch's accounting is settled exactly once.
        """
        helper = threading.Thread(
            target=self._drain, args=(target, deadline), name="openrl-recorder-drain", daemon=True
        )
        helper.start()
        helper.join(max(0.0, deadline - time.monotonic()) + 0.05)

    def close(self, deadline: float) -> None:
        """Refuse new records, stop the thread, write what is pending by ``deadline``,
        count the rest as dropped (``shutdown``) and close the pipe."""
        self._buffer.close()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))
        self.flush(None, deadline)
        self._flow.abandon()
        if self._io.acquire(timeout=0.05):
            self._close_pipe()
        else:  # an attempt is stuck in the pipe: close it once that attempt lets go
            threading.Thread(target=self._close_pipe, args=(False,), daemon=True).start()

    def orphan(self) -> None:
        """The recorder was dropped unclosed: close as ``close`` does, from a thread of
        the flusher's own (whoever dropped it may be anywhere, even inside a loop)."""
        deadline = time.monotonic() + self.settings.close_timeout_s
        threading.Thread(
            target=self.close, args=(deadline,), name="openrl-recorder-close", daemon=True
        ).start()

    def _close_pipe(self, locked: bool = True) -> None:
        if not locked:
            self._io.acquire()
        try:
            self.pipe.close()
        except Exception:
            log.debug("recorder: closing its client failed", exc_info=True)
        finally:
            self._io.release()

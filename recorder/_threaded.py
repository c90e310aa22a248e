"""``Recorder``: the synchronous recorder, flushed by a daemon thread."""

from __future__ import annotations

import atexit
import functools
import threading
import time
from collections.abc import Callable
from types import TracebackType

import redis
from openrl_inspect.recorder import _wire as wire
from openrl_inspect.recorder._buffer import log
from openrl_inspect.recorder._client import ClientRecorder, sync_client
from openrl_inspect.recorder._config import RecorderSettings, RecorderStats
from openrl_inspect.recorder._flow import Outcome, Pending


def _close_at_exit(rec: Recorder) -> None:
    rec.close(min(rec.settings.close_timeout_s, 5.0))


class Recorder(ClientRecorder[redis.Redis | redis.RedisCluster]):
    """Synchronous recorder: a daemon thread flushes with a blocking client.

    ``Recorder(client)`` uses the given client (``redis.Redis`` or ``redis.RedisCluster``;
    give it socket timeouts); ``Recorder.from_settings(settings)`` builds its own. The
    thread starts at once unless ``start=False`` (then only ``flush()`` writes).
    """

    def _new_client(self, s: RecorderSettings) -> redis.Redis | redis.RedisCluster:
        return sync_client(s)

    def _init_flusher(self, start: bool) -> None:
        self._io = threading.Lock()
        self._wake_event = threading.Event()
        self._buffer.wake = self._wake_event.set
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._exit_hook: Callable[[], None] | None = None
        if start:
            self.start()

    def start(self) -> None:
        """Start the flusher thread (idempotent)."""
        if self._thread is not None or self._buffer.closed:
            return
        self._thread = threading.Thread(target=self._run, name="openrl-recorder", daemon=True)
        self._thread.start()
        if self.settings.flush_at_exit:
            self._exit_hook = functools.partial(_close_at_exit, self)
            atexit.register(self._exit_hook)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self) -> None:
        interval = self.settings.flush_interval_s
        while not self._stop.is_set():
            self._wake_event.wait(interval)
            self._wake_event.clear()
            self._buffer.wake_sent = False
            if self._stop.is_set():
                break
            try:
                self._drain(None, None)
                self._flow.warn_drops()
            except Exception:  # the flusher must outlive anything
                log.exception("recorder: flusher cycle failed")
                self._stop.wait(interval)

    def _attempt(self, p: Pending | None) -> Outcome:
        a = self._flow.attempt(p)
        if not a.commands:
            return "ok"
        try:
            results = wire.execute_sync(self._client, a.commands, self._flow.prefetch)
        except Exception as exc:
            return self._flow.on_failure(p, exc)
        return self._flow.on_results(a, results)

    def _drain(self, target: int | None, deadline: float | None) -> bool:
        """Send batches until the buffer is empty or ``target`` records are settled.

        ``deadline`` None: the background thread, which stops when asked to. Otherwise
        a caller (``flush``/``close``) that gives up at ``deadline`` (monotonic).
        """
        background = deadline is None
        while True:
            if background and self._stop.is_set():
                return False
            if target is not None and self._buffer.settled >= target:
                return True
            if background:
                self._io.acquire()
            else:
                assert deadline is not None
                left = deadline - time.monotonic()
                if left <= 0 or not self._io.acquire(timeout=left):
                    return False
            try:
                p = self._flow.take()
                if p is None:
                    outcome = self._attempt(None) if self._status.due() else "ok"
                    if outcome == "ok":
                        return True
                else:
                    outcome = self._attempt(p)
            finally:
                self._io.release()
            if outcome != "failed":
                continue
            delay = self._flow.backoff()
            if background:
                if self._stop.wait(delay):
                    return False
            else:
                assert deadline is not None
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                time.sleep(min(delay, left))

    def _drain_bounded(self, target: int | None, deadline: float) -> None:
        """``_drain`` that returns at ``deadline`` even if a socket call is stuck.

        The drain runs in a helper thread; one stuck in a send or receive finishes (or
        fails) on its own later, and its batch's accounting is settled exactly once.
        """
        helper = threading.Thread(
            target=self._drain, args=(target, deadline), name="openrl-recorder-drain", daemon=True
        )
        helper.start()
        helper.join(max(0.0, deadline - time.monotonic()) + 0.05)

    def flush(self, timeout_s: float | None = None) -> int:
        """Write every record made before this call; returns how many were written.

        Returns within ``timeout_s`` (default ``settings.flush_timeout_s``); records not
        written by then stay pending for the flusher. Never raises.
        """
        try:
            target, before, deadline = self._flush_mark(timeout_s)
            self._drain_bounded(target, deadline)
            return self._written_since(before)
        except Exception:
            log.exception("recorder: flush failed")
            return 0

    def close(self, timeout_s: float | None = None) -> RecorderStats:
        """Stop the flusher, write what is pending within ``timeout_s``, drop the rest."""
        deadline = self._close_deadline(timeout_s)
        try:
            if self._exit_hook is not None:
                atexit.unregister(self._exit_hook)
                self._exit_hook = None
            self._buffer.close()
            self._stop.set()
            self._wake_event.set()
            if self._thread is not None:
                self._thread.join(max(0.0, deadline - time.monotonic()))
            self._drain_bounded(None, deadline)
            self._flow.abandon()
            if self._owns_client:
                self._client.close()
        except Exception:
            log.exception("recorder: close failed")
        return self.stats()

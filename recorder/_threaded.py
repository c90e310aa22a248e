"""The thread flusher, and ``Recorder``: the synchronous recorder it flushes.

``ThreadFlusher`` drives the flow (``_flow``) with a blocking client from a daemon
thread: it wakes on the time trigger (``flush_interval_s``), the size trigger (a full
batch waiting) or ``flush_soon()``, and drains the buffer. ``flush``/``close`` drain
from a helper thread bounded by their deadline. ``AsyncRecorder`` uses it too when it
builds its own client, so no flush work runs on the caller's event loop.
"""

from __future__ import annotations

import atexit
import functools
import threading
import time
from collections.abc import Callable
from types import TracebackType

import redis
from openrl_inspect.recorder import _wire as wire
from openrl_inspect.recorder._buffer import Buffer, log
from openrl_inspect.recorder._client import ClientRecorder
from openrl_inspect.recorder._config import RecorderSettings, RecorderStats
from openrl_inspect.recorder._connect import sync_client
from openrl_inspect.recorder._flow import Flow, Outcome, Pending
from openrl_inspect.recorder._process import ProcessFlusher
from openrl_inspect.recorder._status import Status


class ThreadFlusher:
    """Flushes a buffer's batches with a blocking client from a daemon thread."""

    def __init__(
        self,
        settings: RecorderSettings,
        buffer: Buffer,
        flow: Flow,
        status: Status,
        client: redis.Redis | redis.RedisCluster,
    ) -> None:
        self.settings = settings
        self._buffer = buffer
        self._flow = flow
        self._status = status
        self.client = client
        self._io = threading.Lock()
        self._wake_event = threading.Event()
        buffer.wake = self._wake_event.set
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the flusher thread (idempotent)."""
        if self._thread is not None or self._buffer.closed:
            return
        self._thread = threading.Thread(target=self._run, name="openrl-recorder", daemon=True)
        self._thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def wake(self) -> None:
        """Flush now, in the background (returns at once)."""
        self._wake_event.set()

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
            results = wire.execute_sync(self.client, a.commands, self._flow.prefetch)
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

    def flush(self, target: int, deadline: float) -> None:
        """Settle ``target`` records (by count taken), giving up at ``deadline``."""
        self._drain_bounded(target, deadline)

    def close(self, deadline: float) -> None:
        """Stop the thread and write what is pending, giving up at ``deadline``."""
        self._stop.set()
        self._wake_event.set()
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))
        self._drain_bounded(None, deadline)


def _close_at_exit(rec: Recorder) -> None:
    rec.close(min(rec.settings.close_timeout_s, 5.0))


class Recorder(ClientRecorder[redis.Redis | redis.RedisCluster]):
    """Synchronous recorder: a daemon thread flushes with a blocking client.

    ``Recorder(client)`` uses the given client (``redis.Redis`` or ``redis.RedisCluster``;
    give it socket timeouts); ``Recorder.from_settings(settings)`` builds its own. The
    thread starts at once unless ``start=False`` (then only ``flush()`` writes).
    """

    def _init_flusher(self, client: redis.Redis | redis.RedisCluster | None, start: bool) -> None:
        self._flusher: ThreadFlusher | ProcessFlusher
        if self._process is not None:
            self._flusher = self._process
        else:
            own = client if client is not None else sync_client(self.settings)
            self._flusher = ThreadFlusher(
                self.settings, self._buffer, self._flow, self._status, own
            )
        self._exit_hook: Callable[[], None] | None = None
        if start:
            self.start()

    def start(self) -> None:
        """Start the flusher (idempotent)."""
        if self._door.closed:
            return
        self._flusher.start()
        if self.settings.flush_at_exit and self._exit_hook is None:
            self._exit_hook = functools.partial(_close_at_exit, self)
            atexit.register(self._exit_hook)

    def flush_soon(self) -> None:
        """Have the flusher thread write what is buffered now, and return at once.

        For a sync point: a trainer that calls it just before waiting on its GPU gets
        the flush done while it waits, not while its own Python code runs.
        """
        self._flusher.wake()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def flush(self, timeout_s: float | None = None) -> int:
        """Write every record made before this call; returns how many were written.

        Returns within ``timeout_s`` (default ``settings.flush_timeout_s``); records not
        written by then stay pending for the flusher. Never raises.
        """
        try:
            target, before, deadline = self._flush_mark(timeout_s)
            self._flusher.flush(target, deadline)
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
            self._door.close()
            self._flusher.close(deadline)
            self._flow.abandon()
            if self._owns_client and isinstance(self._flusher, ThreadFlusher):
                self._flusher.client.close()
        except Exception:
            log.exception("recorder: close failed")
        return self.stats()

"""``AsyncRecorder``: the asyncio recorder.

Built from settings (its own client), it flushes from a thread (``ThreadFlusher``) with a
blocking client, so no flush work runs on the caller's event loop; ``flush`` and
``close`` wait for that thread without blocking the loop. Given an asyncio client, it
flushes from a task on the running loop with that client.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import TracebackType

import redis.asyncio as aioredis
from openrl_inspect.recorder import _wire as wire
from openrl_inspect.recorder._buffer import log
from openrl_inspect.recorder._client import ClientRecorder
from openrl_inspect.recorder._config import RecorderStats
from openrl_inspect.recorder._connect import sync_client
from openrl_inspect.recorder._flow import Outcome, Pending
from openrl_inspect.recorder._threaded import ThreadFlusher


class AsyncRecorder(ClientRecorder[aioredis.Redis | aioredis.RedisCluster]):
    """Asyncio recorder: a task on the running loop flushes with redis.asyncio.

    ``AsyncRecorder.from_settings(settings)`` flushes from a thread of its own (started
    at once unless ``start=False``). ``AsyncRecorder(client)`` flushes with the given
    asyncio client from a task that starts when the recorder is made inside a running
    loop (or on ``start()``, ``async with`` or the first ``flush()``), unless
    ``start=False``. Record methods may be called from any thread.
    """

    def _init_flusher(
        self, client: aioredis.Redis | aioredis.RedisCluster | None, start: bool
    ) -> None:
        self._client = client
        self._threaded: ThreadFlusher | None = None
        if self._process is not None:
            return
        if client is None:
            own = sync_client(self.settings)
            self._threaded = ThreadFlusher(
                self.settings, self._buffer, self._flow, self._status, own
            )
            if start:
                self._threaded.start()
            return
        self._autostart = start
        self._io: asyncio.Lock | None = None
        self._wake_ev: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._buffer.wake = self._wake
        if start:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass
            else:
                self.start()

    def _ensure_loop(self) -> asyncio.Lock:
        if self._io is None:
            self._loop = asyncio.get_running_loop()
            self._io = asyncio.Lock()
            self._wake_ev = asyncio.Event()
        return self._io

    def start(self) -> None:
        """Start the flusher (idempotent); a task needs a running loop."""
        if self._process is not None:
            if not self._door.closed:
                self._process.start()
            return
        if self._threaded is not None:
            if not self._buffer.closed:
                self._threaded.start()
            return
        if self._task is not None or self._buffer.closed:
            return
        self._ensure_loop()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="openrl-recorder")

    async def __aenter__(self) -> AsyncRecorder:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def flush_soon(self) -> None:
        """Have the flusher write what is buffered now, and return at once.

        For a sync point: a sampler that calls it just before awaiting its GPU gets the
        flush done (by the flusher thread) while it waits.
        """
        if self._process is not None:
            self._process.wake()
        elif self._threaded is not None:
            self._threaded.wake()
        else:
            self._wake()

    def _wake(self) -> None:
        loop, ev = self._loop, self._wake_ev
        if loop is not None and ev is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                loop.call_soon_threadsafe(ev.set)

    async def _run(self) -> None:
        interval = self.settings.flush_interval_s
        ev = self._wake_ev
        assert ev is not None
        # The loop ends on ``_closed``, not only on cancellation: on Python 3.11 a
        # cancellation can be lost inside redis-py (``asyncio.wait_for``).
        while not self._buffer.closed:
            _deliver_lost_cancel()
            try:
                async with asyncio.timeout(interval):
                    await ev.wait()
            except TimeoutError:
                pass
            ev.clear()
            self._buffer.wake_sent = False
            try:
                await self._drain(None, None)
                self._flow.warn_drops()
            except Exception:  # the flusher must outlive anything
                log.exception("recorder: flusher cycle failed")
                await asyncio.sleep(interval)

    async def _attempt(self, p: Pending | None, deadline: float | None) -> Outcome:
        a = self._flow.attempt(p)
        if not a.commands:
            return "ok"
        limit = self.settings.attempt_timeout_s
        if deadline is not None:
            limit = max(0.0, min(limit, deadline - time.monotonic()))
        try:
            async with asyncio.timeout(limit):
                results = await wire.execute_async(self._client, a.commands, self._flow.prefetch)
        except Exception as exc:
            return self._flow.on_failure(p, exc)
        return self._flow.on_results(a, results)

    async def _drain(self, target: int | None, deadline: float | None) -> bool:
        """See ``Recorder._drain``; here every wait is bounded by ``deadline`` too."""
        io = self._ensure_loop()
        while True:
            _deliver_lost_cancel()
            if deadline is None and self._buffer.closed:
                return False
            if target is not None and self._buffer.settled >= target:
                return True
            if deadline is None:
                await io.acquire()
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                try:
                    async with asyncio.timeout(left):
                        await io.acquire()
                except TimeoutError:
                    return False
            try:
                p = self._flow.take()
                if p is None:
                    outcome = await self._attempt(None, deadline) if self._status.due() else "ok"
                    if outcome == "ok":
                        return True
                else:
                    outcome = await self._attempt(p, deadline)
            finally:
                io.release()
            if outcome != "failed":
                continue
            delay = self._flow.backoff()
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                delay = min(delay, left)
            await asyncio.sleep(delay)

    async def flush(self, timeout_s: float | None = None) -> int:
        """Write every record made before this call; returns how many were written.

        Waits at most ``timeout_s`` (default ``settings.flush_timeout_s``); records not
        written by then stay pending for the flusher. Never raises (but is cancellable).
        """
        try:
            target, before, deadline = self._flush_mark(timeout_s)
            if self._process is not None:
                await self._process.aflush(target, deadline)
                return self._written_since(before)
            if self._threaded is not None:
                await asyncio.to_thread(self._threaded.flush, target, deadline)
                return self._written_since(before)
            if self._autostart:
                self.start()
            await self._drain(target, deadline)
            return self._written_since(before)
        except Exception:
            log.exception("recorder: flush failed")
            return 0

    async def close(self, timeout_s: float | None = None) -> RecorderStats:
        """Stop the flusher, write what is pending within ``timeout_s``, drop the rest."""
        deadline = self._close_deadline(timeout_s)
        try:
            self._door.close()
            if self._process is not None:
                await asyncio.to_thread(self._process.close, deadline)
                return self.stats()
            if self._threaded is not None:
                await asyncio.to_thread(self._threaded.close, deadline)
                self._flow.abandon()
                self._threaded.client.close()
                return self.stats()
            task, self._task = self._task, None
            if task is not None:
                task.cancel()
                left = max(0.0, deadline - time.monotonic())
                await asyncio.wait({task}, timeout=left)
            await self._drain(None, deadline)
            self._flow.abandon()
            if self._owns_client and self._client is not None:
                await self._client.aclose()
        except Exception:
            log.exception("recorder: close failed")
        return self.stats()


def _deliver_lost_cancel() -> None:
    """Raise ``CancelledError`` if this task was asked to stop and has not stopped.

    redis-py (8.1, with Python 3.11) swallows a cancellation that lands mid-pipeline
    more often than not (measured: 153 of 200 cancels of a flushing task); the request
    stays counted in ``Task.cancelling()``. A flusher that carried on would keep
    ``asyncio.run`` or a test runner, which cancel every task at shutdown and wait for
    them, waiting for ever. (``asyncio.timeout`` uncancels what it raised itself, so a
    count left over is always someone else's request.)
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError

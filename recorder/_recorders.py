"""``Recorder`` and ``AsyncRecorder``: the record methods over one flusher thread.

Both flush from the same daemon thread (``_flusher``); they differ in what the caller
awaits. ``AsyncRecorder.flush`` and ``close`` wait for the thread from a worker thread
(``asyncio.to_thread``), so the caller's event loop runs on meanwhile and none of the
flush runs on it.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import time
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Self

import redis
import redis.asyncio as aioredis
from openrl_inspect.recorder._buffer import log
from openrl_inspect.recorder._calls import RecorderBase
from openrl_inspect.recorder._config import (
    RecorderSettings,
    RecorderStats,
    Retention,
    WorkerInfo,
    check,
)
from openrl_inspect.recorder._flusher import Flusher
from openrl_inspect.recorder._send import pipe_for, sync_client

# What a recorder writes through: redis-py's clients, sync or asyncio, standalone or
# Cluster (an asyncio one through a copy of it on the flusher's own loop, see ``_send``).
Client = redis.Redis | redis.RedisCluster | aioredis.Redis | aioredis.RedisCluster


class FlushedRecorder(RecorderBase):
    """The record methods with the flusher thread: the constructor and what a flush
    waits for, shared by both recorders."""

    def __init__(
        self,
        client: Client | None = None,
        retention: Retention | None = None,
        *,
        settings: RecorderSettings | None = None,
        batch_size: int | None = None,
        capacity: int | None = None,
        worker: WorkerInfo | None = None,
        clock: Callable[[], float] = time.time,
        start: bool = True,
    ) -> None:
        check(settings or RecorderSettings())
        super().__init__(
            retention,
            settings=settings,
            batch_size=batch_size,
            capacity=capacity,
            worker=worker,
            clock=clock,
        )
        owned = client is None
        pipe = pipe_for(sync_client(self.settings) if client is None else client, owned)
        self._flusher = Flusher(self.settings, self._buffer, self._flow, self._status, pipe)
        # Dropped without close (a crashed caller's, a test's): the flusher writes what
        # it holds and closes its connections all the same, from a thread of its own.
        self._unclosed = weakref.finalize(self, self._flusher.orphan)
        self._unclosed.atexit = False  # at exit: the sync recorder's flush_at_exit
        if start:
            self.start()

    @classmethod
    def from_settings(
        cls,
        settings: RecorderSettings,
        retention: Retention | None = None,
        *,
        worker: WorkerInfo | None = None,
        start: bool = True,
    ) -> Self:
        """A recorder with a client of its own, built from ``settings``."""
        return cls(None, retention, settings=settings, worker=worker, start=start)

    def start(self) -> None:
        """Start the flusher thread (idempotent)."""
        self._flusher.start()

    def flush_soon(self) -> None:
        """Have the flusher thread write what is buffered now, and return at once.

        For a sync point: a trainer that calls it just before waiting on its GPU gets
        the flush done while it waits, not while its own Python code runs.
        """
        self._flusher.wake()

    def _flush(self, timeout_s: float | None) -> int:
        """Write every record made before this call, within ``timeout_s``; how many were
        written meanwhile. Never raises."""
        try:
            timeout = self.settings.flush_timeout_s if timeout_s is None else timeout_s
            buf = self._buffer
            with buf.lock:
                target = buf.taken + len(buf.queue)
                before = buf.written
            self._flusher.flush(target, time.monotonic() + timeout)
            with buf.lock:
                return buf.written - before
        except Exception:
            log.exception("recorder: flush failed")
            return 0

    def _close(self, timeout_s: float | None) -> RecorderStats:
        """Refuse new records, write what is pending within ``timeout_s``, count the rest
        as dropped (``shutdown``), close the recorder's connections."""
        timeout = self.settings.close_timeout_s if timeout_s is None else timeout_s
        try:
            self._unclosed.detach()
            self._flusher.close(time.monotonic() + timeout)
        except Exception:
            log.exception("recorder: close failed")
        return self.stats()


def _close_at_exit(rec: Recorder) -> None:
    rec.close(min(rec.settings.close_timeout_s, 5.0))


class Recorder(FlushedRecorder):
    """Synchronous recorder: a daemon thread flushes.

    ``Recorder(client)`` writes through the given client (``redis.Redis`` or
    ``redis.RedisCluster``; give it socket timeouts); ``Recorder.from_settings(settings)``
    builds its own. The thread starts at once unless ``start=False`` (then only
    ``flush()`` and ``close()`` write). Record methods may be called from any thread.
    """

    _exit_hook: Callable[[], None] | None = None

    def start(self) -> None:
        """Start the flusher thread (idempotent), and its flush at interpreter exit."""
        if self._buffer.closed:
            return
        super().start()
        if self.settings.flush_at_exit and self._exit_hook is None:
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

    def flush(self, timeout_s: float | None = None) -> int:
        """Write every record made before this call; returns how many were written.

        Returns within ``timeout_s`` (default ``settings.flush_timeout_s``); records not
        written by then stay pending for the flusher. Never raises.
        """
        return self._flush(timeout_s)

    def close(self, timeout_s: float | None = None) -> RecorderStats:
        """Stop the flusher, write what is pending within ``timeout_s``, drop the rest."""
        if self._exit_hook is not None:
            atexit.unregister(self._exit_hook)
            self._exit_hook = None
        return self._close(timeout_s)


class AsyncRecorder(FlushedRecorder):
    """Asyncio recorder: the same flusher thread, awaited without blocking the loop.

    ``AsyncRecorder(client)`` writes to the server(s) of the given client: an asyncio
    one (``redis.asyncio.Redis`` or ``RedisCluster``; the flusher uses a copy of it with
    connections of its own, on a loop of its own, and leaves the caller's alone) or a
    redis-py one. ``AsyncRecorder.from_settings(settings)`` builds its own. The thread
    starts at once unless ``start=False`` (then only ``flush()`` and ``close()`` write).
    Record methods may be called from any thread.
    """

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

    async def flush(self, timeout_s: float | None = None) -> int:
        """Write every record made before this call; returns how many were written.

        Waits at most ``timeout_s`` (default ``settings.flush_timeout_s``); records not
        written by then stay pending for the flusher. Never raises (but is cancellable;
        a cancelled flush leaves the flusher to finish on its own).
        """
        return await asyncio.to_thread(self._flush, timeout_s)

    async def close(self, timeout_s: float | None = None) -> RecorderStats:
        """Stop the flusher, write what is pending within ``timeout_s``, drop the rest."""
        return await asyncio.to_thread(self._close, timeout_s)

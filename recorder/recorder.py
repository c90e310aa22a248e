"""Recorder: the API OpenRL's processes call to write their state into Redis.

**Hot path.** A record method (``op_started``, ``sampler_batch``, ...) builds one tuple
and appends it to a bounded ``collections.deque``: no lock (``deque.append`` is atomic in
CPython), no I/O, no formatting, and it never raises into the caller. The time is taken
as a float (``time.time()``) unless the caller passes ``at``.

**Flusher.** A background flusher takes records from the buffer in batches of
``batch_size``, turns each batch into few commands (``writes.Batch`` combines the writes
of a batch per key) and sends them as one pipeline. It runs when ``batch_size`` records
are waiting (size trigger) or every ``flush_interval_s`` (time trigger). ``Recorder``
flushes from a daemon thread with its own blocking client, ``AsyncRecorder`` from an
asyncio task; both share the record methods and the accounting of ``RecorderBase``.
An explicit ``flush(timeout_s)`` writes everything recorded before the call (within the
deadline) and returns how many records it saw written; ``close(timeout_s)`` stops the
flusher and writes what is left within its deadline.

**Failures.** A failed pipeline (connection refused or reset, timeout, Cluster down,
loading, out of memory...) keeps its batch: the flusher retries the same batch, with
exponential backoff and jitter, before taking the next one, so records reach Redis in
the order they were recorded. Every write is idempotent, so a batch that was applied but
whose answer was lost is simply applied again. A command that Redis *rejects* (a wrong
type, a script error) is not retried: the batch is sent once more record by record, to
find which records were rejected, and those are counted as dropped (``rejected``).

**Drop policy** (the buffer holds at most ``capacity`` records, at least ``batch_size``):

- below the *shed level* (``capacity * shed_fraction``) every record is kept;
- from the shed level on, new low-value records (heartbeats, sampler batches, client
  logs: each is superseded or summarised by the next) are dropped;
- at ``capacity`` every new record is dropped (drop-newest: what is already buffered is
  kept and written in order, lifecycle records are never dropped before the hard cap);
- records still unwritten when ``close``'s deadline passes are dropped (``shutdown``),
  as are records made after ``close`` (``closed``); a call whose arguments cannot even
  be captured (``dict(payload)`` of a non-mapping...) is dropped at once (``malformed``),
  a record a write function cannot encode later (``invalid``), a record whose command
  Redis rejects too (``rejected``).

Nothing is lost silently: ``stats()`` counts, exactly, records ``recorded``, ``written``
(their pipeline succeeded; a record retried is counted once, when it succeeds),
``dropped`` (by reason and by kind), ``pending`` (buffered or in flight) and ``retried``
(record sends beyond the first), with ``recorded == written + dropped + pending`` at all
times. The counters ride along with the pipelines into ``oi:recorder:<recorder id>``
(at most every ``counters_every_s``, and at close), so they reach Redis as soon as it
is back; a recorder given a ``WorkerInfo`` sends the worker's heartbeat every
``heartbeat_every_s`` with the counters in its payload.
Drops and failures are logged (rate-limited) on the ``openrl_inspect.recorder`` logger.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import redis
import redis.asyncio as aioredis
from openrl_inspect.recorder import wire
from openrl_inspect.recorder.base import (
    DROP_REASONS,
    LOW_VALUE,
    Outcome,
    RecorderBase,
    RecorderSettings,
    RecorderStats,
    WorkerInfo,
    _Pending,
    log,
)
from openrl_inspect.recorder.writes import Retention
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = [
    "DROP_REASONS",
    "LOW_VALUE",
    "AsyncRecorder",
    "Recorder",
    "RecorderBase",
    "RecorderSettings",
    "RecorderStats",
    "WorkerInfo",
]


def _sync_client(s: RecorderSettings) -> redis.Redis | redis.RedisCluster:
    common: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": s.socket_timeout_s,
        "socket_connect_timeout": s.connect_timeout_s,
        "retry": Retry(NoBackoff(), 0),  # the flusher retries, with its own backoff
    }
    if s.cluster:
        return redis.RedisCluster.from_url(s.url, **common)
    return redis.Redis.from_url(s.url, **common)


def _async_client(s: RecorderSettings) -> aioredis.Redis | aioredis.RedisCluster:
    from redis.asyncio.retry import Retry as AsyncRetry

    common: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": s.socket_timeout_s,
        "socket_connect_timeout": s.connect_timeout_s,
        "retry": AsyncRetry(NoBackoff(), 0),
    }
    if s.cluster:
        return aioredis.RedisCluster.from_url(s.url, **common)
    return aioredis.Redis.from_url(s.url, **common)


def _close_at_exit(rec: Recorder) -> None:
    rec.close(min(rec.settings.close_timeout_s, 5.0))


C = TypeVar("C")


class _ClientRecorder(RecorderBase, Generic[C]):
    """What both flushers share: the constructor, the client, the flush bookkeeping.

    A subclass builds its own client (``_new_client``) and flusher (``_init_flusher``).
    """

    def __init__(
        self,
        client: C | None = None,
        retention: Retention | None = None,
        *,
        settings: RecorderSettings | None = None,
        batch_size: int | None = None,
        capacity: int | None = None,
        worker: WorkerInfo | None = None,
        clock: Callable[[], float] = time.time,
        start: bool = True,
    ) -> None:
        super().__init__(
            retention,
            settings=settings,
            batch_size=batch_size,
            capacity=capacity,
            worker=worker,
            clock=clock,
        )
        self._owns_client = client is None
        self._client: C = client if client is not None else self._new_client(self.settings)
        self._init_flusher(start)

    def _new_client(self, s: RecorderSettings) -> C:
        raise NotImplementedError

    def _init_flusher(self, start: bool) -> None:
        raise NotImplementedError

    @classmethod
    def from_settings(
        cls,
        settings: RecorderSettings,
        retention: Retention | None = None,
        *,
        worker: WorkerInfo | None = None,
        start: bool = True,
    ) -> Self:
        return cls(None, retention, settings=settings, worker=worker, start=start)

    def _flush_mark(self, timeout_s: float | None) -> tuple[int, int, float]:
        """What a flush waits for: (records to settle, written before, deadline)."""
        with self._lock:
            target = self._taken + len(self._buf)
            before = self._written
        timeout = self.settings.flush_timeout_s if timeout_s is None else timeout_s
        return target, before, time.monotonic() + timeout

    def _written_since(self, before: int) -> int:
        with self._lock:
            return self._written - before

    def _close_deadline(self, timeout_s: float | None) -> float:
        timeout = self.settings.close_timeout_s if timeout_s is None else timeout_s
        return time.monotonic() + timeout


class Recorder(_ClientRecorder[redis.Redis | redis.RedisCluster]):
    """Synchronous recorder: a daemon thread flushes with a blocking client.

    ``Recorder(client)`` uses the given client (``redis.Redis`` or ``redis.RedisCluster``;
    give it socket timeouts); ``Recorder.from_settings(settings)`` builds its own. The
    thread starts at once unless ``start=False`` (then only ``flush()`` writes).
    """

    def _new_client(self, s: RecorderSettings) -> redis.Redis | redis.RedisCluster:
        return _sync_client(s)

    def _init_flusher(self, start: bool) -> None:
        self._io = threading.Lock()
        self._wake_event = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._exit_hook: Callable[[], None] | None = None
        if start:
            self.start()

    def start(self) -> None:
        """Start the flusher thread (idempotent)."""
        if self._thread is not None or self._closed:
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

    def _wake(self) -> None:
        self._wake_event.set()

    def _run(self) -> None:
        interval = self.settings.flush_interval_s
        while not self._stop.is_set():
            self._wake_event.wait(interval)
            self._wake_event.clear()
            self._wake_sent = False
            if self._stop.is_set():
                break
            try:
                self._drain(None, None)
                self._warn_drops()
            except Exception:  # the flusher must outlive anything
                log.exception("recorder: flusher cycle failed")
                self._stop.wait(interval)

    def _attempt(self, p: _Pending | None) -> Outcome:
        cmds, n_batch, sent, expected = self._attempt_commands(p)
        if not cmds:
            return "ok"
        try:
            results = wire.execute_sync(self._client, cmds, self._prefetch)
        except Exception as exc:
            return self._on_failure(p, exc)
        return self._on_results(p, results, n_batch, sent, expected)

    def _drain(self, target: int | None, deadline: float | None) -> bool:
        """Send batches until the buffer is empty or ``target`` records are settled.

        ``deadline`` None: the background thread, which stops when asked to. Otherwise
        a caller (``flush``/``close``) that gives up at ``deadline`` (monotonic).
        """
        background = deadline is None
        while True:
            if background and self._stop.is_set():
                return False
            if target is not None and self._settled >= target:
                return True
            if background:
                self._io.acquire()
            else:
                assert deadline is not None
                left = deadline - time.monotonic()
                if left <= 0 or not self._io.acquire(timeout=left):
                    return False
            try:
                p = self._take()
                if p is None:
                    outcome = self._attempt(None) if self._status_due() else "ok"
                    if outcome == "ok":
                        return True
                else:
                    outcome = self._attempt(p)
            finally:
                self._io.release()
            if outcome != "failed":
                continue
            delay = self._backoff()
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
            self._begin_close()
            self._stop.set()
            self._wake_event.set()
            if self._thread is not None:
                self._thread.join(max(0.0, deadline - time.monotonic()))
            self._drain_bounded(None, deadline)
            self._abandon()
            if self._owns_client:
                self._client.close()
        except Exception:
            log.exception("recorder: close failed")
        return self.stats()


class AsyncRecorder(_ClientRecorder[aioredis.Redis | aioredis.RedisCluster]):
    """Asyncio recorder: a task on the running loop flushes with redis.asyncio.

    The task starts when the recorder is made inside a running loop (or on ``start()``,
    ``async with`` or the first ``flush()``), unless ``start=False``. Record methods may
    be called from any thread.
    """

    def _new_client(self, s: RecorderSettings) -> aioredis.Redis | aioredis.RedisCluster:
        return _async_client(s)

    def _init_flusher(self, start: bool) -> None:
        self._autostart = start
        self._io: asyncio.Lock | None = None
        self._wake_ev: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
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
        """Start the flusher task on the running loop (idempotent)."""
        if self._task is not None or self._closed:
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
        while not self._closed:
            try:
                async with asyncio.timeout(interval):
                    await ev.wait()
            except TimeoutError:
                pass
            ev.clear()
            self._wake_sent = False
            try:
                await self._drain(None, None)
                self._warn_drops()
            except Exception:  # the flusher must outlive anything
                log.exception("recorder: flusher cycle failed")
                await asyncio.sleep(interval)

    async def _attempt(self, p: _Pending | None, deadline: float | None) -> Outcome:
        cmds, n_batch, sent, expected = self._attempt_commands(p)
        if not cmds:
            return "ok"
        limit = self.settings.attempt_timeout_s
        if deadline is not None:
            limit = max(0.0, min(limit, deadline - time.monotonic()))
        try:
            async with asyncio.timeout(limit):
                results = await wire.execute_async(self._client, cmds, self._prefetch)
        except Exception as exc:
            return self._on_failure(p, exc)
        return self._on_results(p, results, n_batch, sent, expected)

    async def _drain(self, target: int | None, deadline: float | None) -> bool:
        """See ``Recorder._drain``; here every wait is bounded by ``deadline`` too."""
        io = self._ensure_loop()
        while True:
            if deadline is None and self._closed:
                return False
            if target is not None and self._settled >= target:
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
                p = self._take()
                if p is None:
                    outcome = await self._attempt(None, deadline) if self._status_due() else "ok"
                    if outcome == "ok":
                        return True
                else:
                    outcome = await self._attempt(p, deadline)
            finally:
                io.release()
            if outcome != "failed":
                continue
            delay = self._backoff()
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
            if self._autostart:
                self.start()
            target, before, deadline = self._flush_mark(timeout_s)
            await self._drain(target, deadline)
            return self._written_since(before)
        except Exception:
            log.exception("recorder: flush failed")
            return 0

    async def close(self, timeout_s: float | None = None) -> RecorderStats:
        """Stop the flusher, write what is pending within ``timeout_s``, drop the rest."""
        deadline = self._close_deadline(timeout_s)
        try:
            self._begin_close()
            task, self._task = self._task, None
            if task is not None:
                task.cancel()
                left = max(0.0, deadline - time.monotonic())
                await asyncio.wait({task}, timeout=left)
            await self._drain(None, deadline)
            self._abandon()
            if self._owns_client:
                await self._client.aclose()
        except Exception:
            log.exception("recorder: close failed")
        return self.stats()

"""What both flushers share: building the client, the constructor, flush bookkeeping."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Generic, Self, TypeVar

import redis
import redis.asyncio as aioredis
from openrl_inspect.recorder._calls import RecorderBase
from openrl_inspect.recorder._config import RecorderSettings, Retention, WorkerInfo
from redis.backoff import NoBackoff
from redis.retry import Retry


def sync_client(s: RecorderSettings) -> redis.Redis | redis.RedisCluster:
    common: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": s.socket_timeout_s,
        "socket_connect_timeout": s.connect_timeout_s,
        "retry": Retry(NoBackoff(), 0),  # the flusher retries, with its own backoff
    }
    if s.cluster:
        return redis.RedisCluster.from_url(s.url, **common)
    return redis.Redis.from_url(s.url, **common)


def async_client(s: RecorderSettings) -> aioredis.Redis | aioredis.RedisCluster:
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


C = TypeVar("C")


class ClientRecorder(RecorderBase, Generic[C]):
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
        self._init_flusher(client, start)

    def _init_flusher(self, client: C | None, start: bool) -> None:
        """Set up the flusher, with ``client`` or (None) a client of its own."""
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
        buf = self._buffer
        with buf.lock:
            target = buf.taken + len(buf.queue)
            before = buf.written
        timeout = self.settings.flush_timeout_s if timeout_s is None else timeout_s
        return target, before, time.monotonic() + timeout

    def _written_since(self, before: int) -> int:
        with self._buffer.lock:
            return self._buffer.written - before

    def _close_deadline(self, timeout_s: float | None) -> float:
        timeout = self.settings.close_timeout_s if timeout_s is None else timeout_s
        return time.monotonic() + timeout

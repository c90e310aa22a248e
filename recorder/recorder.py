"""Recorder: the API OpenRL's processes call to write their state into Redis.

Each call appends a record to a buffer; ``flush`` writes the buffer as one pipelined
round trip. ``Recorder`` flushes with a synchronous redis client, ``AsyncRecorder`` with
redis.asyncio; both share the record methods of ``RecorderBase``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis
import redis.asyncio as aioredis
from openrl_inspect.recorder import writes
from openrl_inspect.recorder.writes import Retention

Write = Callable[..., None]


class RecorderBase:
    """Record methods; each is cheap (an append) and never touches the network."""

    def __init__(
        self,
        retention: Retention | None = None,
        *,
        batch_size: int = 512,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.retention = retention or Retention()
        self.batch_size = batch_size
        self._clock = clock
        self._buffer: deque[tuple[Write, tuple[Any, ...]]] = deque()
        self._lock = threading.Lock()
        self._buffer.append((writes.schema_version, ()))

    def _add(self, write: Write, *args: Any) -> None:
        self._buffer.append((write, args))
        if len(self._buffer) >= self.batch_size:
            self._full()

    def _full(self) -> None:
        """Called when the buffer reaches ``batch_size``; subclasses flush."""

    def _take(self) -> list[tuple[Write, tuple[Any, ...]]]:
        with self._lock:
            batch = list(self._buffer)
            self._buffer.clear()
        return batch

    def _queue(self, pipe: Any, batch: Sequence[tuple[Write, tuple[Any, ...]]]) -> None:
        for write, args in batch:
            write(pipe, self.retention, *args)

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def _now(self, at: float | None) -> float:
        return self._clock() if at is None else at

    # -- sessions and models ---------------------------------------------------------

    def session_opened(
        self, sid: str, owner: str, client: Mapping[str, Any] | None = None, at: float | None = None
    ) -> None:
        self._add(writes.session_opened, sid, owner, dict(client or {}), self._now(at))

    def session_closed(self, sid: str, at: float | None = None) -> None:
        self._add(writes.session_closed, sid, self._now(at))

    def model_created(
        self,
        mid: str,
        sid: str,
        base_model: str,
        lora: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> None:
        self._add(
            writes.model_created,
            mid,
            sid,
            base_model,
            dict(lora or {}),
            dict(settings or {}),
            self._now(at),
        )

    def model_state(
        self, mid: str, state: str, reason: str | None = None, at: float | None = None
    ) -> None:
        self._add(writes.model_state, mid, state, self._now(at), reason)

    # -- ops and steps -----------------------------------------------------------------

    def op_accepted(
        self,
        mid: str,
        oid: str,
        kind: str,
        step: int,
        session_id: str | None = None,
        at: float | None = None,
    ) -> None:
        self._add(writes.op_accepted, mid, oid, kind, step, self._now(at), session_id)

    def op_enqueued(self, mid: str, oid: str, at: float | None = None) -> None:
        self._add(writes.op_enqueued, mid, oid, self._now(at))

    def op_started(self, mid: str, oid: str, worker_id: str, at: float | None = None) -> None:
        self._add(writes.op_started, mid, oid, worker_id, self._now(at))

    def op_finished(
        self,
        mid: str,
        oid: str,
        status: str = "succeeded",
        metrics: Mapping[str, Any] | None = None,
        error: str | None = None,
        at: float | None = None,
    ) -> None:
        self._add(writes.op_finished, mid, oid, status, self._now(at), metrics, error)

    def step_metrics(
        self,
        mid: str,
        step: int,
        metrics: Mapping[str, Any],
        finished: bool = False,
        at: float | None = None,
    ) -> None:
        self._add(writes.step_metrics, mid, step, dict(metrics), self._now(at), finished)

    # -- workers and placements --------------------------------------------------------

    def heartbeat(
        self,
        wid: str,
        role: str,
        pod: str,
        node: str,
        model_id: str | None = None,
        gpu_ids: Sequence[str] = (),
        payload: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> None:
        self._add(
            writes.heartbeat,
            wid,
            role,
            pod,
            node,
            model_id,
            list(gpu_ids),
            dict(payload or {}),
            self._now(at),
        )

    def placement_admitted(
        self,
        mid: str,
        pid: str,
        workload: str,
        namespace: str,
        pods: Sequence[str],
        node: str,
        gpu_ids: Sequence[str],
        at: float | None = None,
    ) -> None:
        self._add(
            writes.placement_admitted,
            mid,
            pid,
            workload,
            namespace,
            list(pods),
            node,
            list(gpu_ids),
            self._now(at),
        )

    def placement_released(self, mid: str, pid: str, at: float | None = None) -> None:
        self._add(writes.placement_released, mid, pid, self._now(at))


class Recorder(RecorderBase):
    """Synchronous recorder: flushes with a blocking redis client when the buffer fills."""

    def __init__(self, client: redis.Redis | redis.RedisCluster, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._client = client

    def _full(self) -> None:
        self.flush()

    def flush(self) -> int:
        batch = self._take()
        if not batch:
            return 0
        pipe = self._client.pipeline(transaction=False)
        self._queue(pipe, batch)
        pipe.execute()
        return len(batch)


class AsyncRecorder(RecorderBase):
    """Asyncio recorder: records are buffered; ``flush`` (awaited) writes them."""

    def __init__(self, client: aioredis.Redis | aioredis.RedisCluster, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._client = client

    async def flush(self) -> int:
        batch = self._take()
        if not batch:
            return 0
        pipe: Any = self._client.pipeline(transaction=False)
        self._queue(pipe, batch)
        await pipe.execute()
        return len(batch)

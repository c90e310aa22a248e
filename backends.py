"""Opening the backends for ``serve`` (real ones) and ``demo`` (simulated ones)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from openrl_inspect.adapters.cloud_logging import CloudLoggingSource
from openrl_inspect.adapters.kubernetes import (
    KubernetesSettings,
    PodLogSettings,
    PodLogSource,
    open_kubernetes,
)
from openrl_inspect.adapters.logs import CloudLoggingSettings
from openrl_inspect.adapters.prometheus import (
    PrometheusSettings,
    PromGpuMetrics,
    RawQuerySettings,
    make_metrics_source,
)
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore, connect
from openrl_inspect.context import Backends
from openrl_inspect.recorder import AsyncRecorder
from openrl_inspect.simulator import SimConfig, Simulation
from openrl_inspect.simulator.kube_twin import mirror_kubernetes
from openrl_inspect.simulator.logs_twin import mirror_logs
from openrl_inspect.simulator.metrics_twin import mirror_metrics

log = logging.getLogger("openrl_inspect.backends")


@dataclass(frozen=True)
class BackendSettings:
    """Which backends ``serve`` opens; ``None`` leaves one out."""

    redis: RedisSettings = field(default_factory=RedisSettings)
    kubernetes: KubernetesSettings | None = None
    prometheus: PrometheusSettings | None = None
    cloud_logging: CloudLoggingSettings | None = None
    # The pod-logs fallback, used when ``kubernetes`` is configured.
    pod_logs: PodLogSettings = field(default_factory=PodLogSettings)
    # The guarded raw PromQL field (off unless enabled), used when ``prometheus`` is set.
    raw_query: RawQuerySettings = field(default_factory=RawQuerySettings)


@asynccontextmanager
async def real_backends(config: BackendSettings) -> AsyncIterator[Backends]:
    async with AsyncExitStack() as stack:
        store = RedisStateStore.from_settings(config.redis)
        stack.push_async_callback(store.aclose)
        backends = Backends(state=store)
        if config.kubernetes is not None:
            kube = await stack.enter_async_context(open_kubernetes(config.kubernetes))
            backends.kubernetes = kube
            backends.pod_logs = PodLogSource.for_cluster(
                kube, config.pod_logs, bounds=config.cloud_logging
            )
        if config.prometheus is not None:
            source = make_metrics_source(config.prometheus)
            stack.push_async_callback(source.aclose)
            backends.prometheus = source
            backends.metrics = PromGpuMetrics.from_settings(config.prometheus, source)
            backends.raw_query = config.raw_query
        if config.cloud_logging is not None:
            logs = CloudLoggingSource(config.cloud_logging)
            stack.push_async_callback(logs.aclose)
            backends.logs = logs
        yield backends


@dataclass(frozen=True)
class DemoSettings:
    """The embedded demo. Env prefix ``OPENRL_INSPECT_DEMO_``."""

    seed: int = 7
    sessions: int = 4
    models_per_session: int = 3
    steps_per_model: int = 15
    tick_s: float = 0.5
    # A real Redis to fill instead of the in-process fakeredis.
    redis_url: str | None = None


# Each in-memory twin of the demo has a mirror that copies the simulation into it (and
# puts the twin into ``backends`` on its first call): called once after the history is
# written, then on every tick.
Mirror = Callable[[Simulation, Backends, float], Awaitable[None]]
MIRRORS: tuple[Mirror, ...] = (mirror_kubernetes, mirror_logs, mirror_metrics)


async def _mirror(sim: Simulation, backends: Backends, now: float) -> None:
    for mirror in MIRRORS:
        await mirror(sim, backends, now)


async def _drive(sim: Simulation, rec: AsyncRecorder, backends: Backends, tick_s: float) -> None:
    while True:
        await asyncio.sleep(tick_s)
        now = time.time()
        sim.advance(now)
        try:
            await rec.flush()
            await _mirror(sim, backends, now)
        except Exception:  # the demo's writer must outlive a Redis restart
            log.warning("demo: writing simulated telemetry failed; will retry", exc_info=True)


@asynccontextmanager
async def demo_backends(demo: DemoSettings) -> AsyncIterator[Backends]:
    """A simulated OpenRL cluster, written live into fakeredis (or ``demo.redis_url``)."""
    writer: Any
    if demo.redis_url:
        settings = RedisSettings(url=demo.redis_url)
        writer, store = connect(settings), RedisStateStore.from_settings(settings)
    else:
        import fakeredis

        server = fakeredis.FakeServer()
        writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
        store = RedisStateStore.in_memory(server)
    rec = AsyncRecorder(writer, batch_size=1 << 30)
    config = SimConfig(
        seed=demo.seed,
        sessions=demo.sessions,
        models_per_session=demo.models_per_session,
        steps_per_model=demo.steps_per_model,
    )
    sim = Simulation(config, rec)
    now = time.time()
    sim.populate(now)
    await rec.flush()
    backends = Backends(state=store)
    await _mirror(sim, backends, now)
    task = asyncio.create_task(_drive(sim, rec, backends, demo.tick_s))
    try:
        yield backends
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await rec.close(1.0)  # stops its flusher task; the demo's writes need no drain
        await store.aclose()
        await writer.aclose()

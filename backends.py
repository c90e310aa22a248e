"""Opening the backends for ``serve`` (real ones) and ``demo`` (simulated ones)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from openrl_inspect.adapters.redis_client import RedisSettings, connect
from openrl_inspect.adapters.redis_state import RedisStateStore
from openrl_inspect.context import Backends
from openrl_inspect.recorder import AsyncRecorder
from openrl_inspect.simulator import SimConfig, Simulation

log = logging.getLogger("openrl_inspect.demo")


@asynccontextmanager
async def real_backends(redis: RedisSettings) -> AsyncIterator[Backends]:
    store = RedisStateStore.from_settings(redis)
    try:
        yield Backends(state=store)
    finally:
        await store.aclose()


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


async def _drive(sim: Simulation, rec: AsyncRecorder, tick_s: float) -> None:
    while True:
        await asyncio.sleep(tick_s)
        sim.advance(time.time())
        try:
            await rec.flush()
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
    sim.populate(time.time())
    await rec.flush()
    task = asyncio.create_task(_drive(sim, rec, demo.tick_s))
    try:
        yield Backends(state=store)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await store.aclose()
        await writer.aclose()

"""Plan and stock execution alike over a real redis-server (run by
tests/api/test_plan_execution_redis.py, in a process of its own).

The same generated documents and faults as over fakeredis, here with redis-py's real
connection pool, hiredis replies and real network errors: Redis unreachable is a store
whose server refuses connections, not a flag on a fake. Not collected by itself (its name
does not start with ``test_``): CPython 3.11.7 can leave the interpreter unable to parse
the next test module after this world (gh-106905, "AST constructor recursion depth
mismatch"), so it runs apart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.simulator import SimConfig
from support.equivalence import (
    FAULTS,
    World,
    build_world,
    check_nested,
    check_seeded,
    check_siblings,
    spoil,
)
from support.harness import populate
from support.ports import free_port
from support.redis_server import RedisServer


async def _build(url: str) -> tuple[World, list[RedisStateStore]]:
    writer = aioredis.Redis.from_url(url, decode_responses=True)
    await writer.flushall()
    now = time.time()
    sim = await populate(writer, SimConfig(seed=5, sessions=2, models_per_session=3), now)
    ops = await spoil(writer, sim)
    await sim.rec.close(5.0)  # type: ignore[attr-defined]
    await writer.aclose()
    store = RedisStateStore.from_settings(RedisSettings(url=url))
    # Nothing listens on this port: connections are refused, as when Redis is down.
    dead = RedisStateStore.from_settings(RedisSettings(url=f"redis://127.0.0.1:{free_port()}/0"))

    def redis_down(backends: Backends, down: bool) -> None:
        backends.state = dead if down else store

    return await build_world(sim, store, now, ops, redis_down), [store, dead]


@pytest.fixture(scope="module")
def world(redis_server: RedisServer) -> Iterator[World]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    stores: list[RedisStateStore] = []
    try:
        built, stores = loop.run_until_complete(_build(redis_server.url))
        yield built
    finally:
        for store in stores:
            loop.run_until_complete(store.aclose())
        loop.close()
        asyncio.set_event_loop(None)


def test_plan_and_stock_answer_alike_over_redis_server(world: World) -> None:
    for seed in range(100):  # 100 generated documents, each under a chosen fault
        check_seeded(world, seed)


@pytest.mark.parametrize("fault", sorted(set(FAULTS)))
def test_the_nested_query_over_redis_server(world: World, fault: str) -> None:
    check_nested(world, fault)


def test_siblings_cancelled_by_a_failed_field_leave_shared_keys_alone(world: World) -> None:
    check_siblings(world)

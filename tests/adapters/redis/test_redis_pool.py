"""A full Redis connection pool is "busy", not "unreachable" (real redis-server)."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.simulator import SimConfig
from support.harness import GRAPHQL, app_client, populate
from support.redis_server import RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.redis_server]

QUERY = "{ sessions { totalCount nodes { id } } }"


async def _hold(store: RedisStateStore, n: int, seconds: float) -> list[asyncio.Task[object]]:
    """``n`` tasks that each keep one pooled connection busy (BLPOP on an empty list)."""
    client = store.client
    assert isinstance(client, aioredis.Redis)

    async def hold(i: int) -> object:
        return await client.blpop([f"oi-test-empty-{i}"], timeout=seconds)

    tasks: list[asyncio.Task[object]] = [asyncio.create_task(hold(i)) for i in range(n)]
    await asyncio.sleep(0.1)
    return tasks


async def _codes(client: object, n: int) -> list[str]:
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    answers = await asyncio.gather(*(client.post(GRAPHQL, json={"query": QUERY}) for _ in range(n)))
    return [e["extensions"]["code"] for a in answers for e in (a.json().get("errors") or ())]


async def test_a_full_pool_answers_busy_and_a_short_wait_is_absorbed(
    redis_server: RedisServer,
) -> None:
    writer = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    await writer.flushdb()
    await populate(writer, SimConfig(seed=2, sessions=2))
    await writer.aclose()

    settings = RedisSettings(url=redis_server.url, max_connections=2, pool_timeout_s=0.3)
    store = RedisStateStore.from_settings(settings)
    async with app_client(store) as client:
        held = await _hold(store, 2, 1.5)
        busy = await _codes(client, 5)
        await asyncio.gather(*held)
        # the pool frees up: 20 concurrent requests on 2 connections all wait their turn
        calm = await _codes(client, 20)
    await store.aclose()
    assert busy and set(busy) == {"BACKEND_BUSY"}, busy
    assert calm == [], calm

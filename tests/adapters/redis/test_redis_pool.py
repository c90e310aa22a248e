"""A full Redis connection pool is "busy", not "unreachable" (real redis-server)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import redis.asyncio as aioredis
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.core.settings import Bounds, Settings, Switches
from openrl_inspect.simulator import SimConfig
from support.gone_client import GoneClient
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


async def _answers(client: object, n: int, query: str = QUERY) -> list[httpx.Response]:
    assert isinstance(client, httpx.AsyncClient)
    asks = (client.post(GRAPHQL, json={"query": query}, timeout=30.0) for _ in range(n))
    return list(await asyncio.gather(*asks))


def _codes_of(answers: list[httpx.Response]) -> list[str]:
    return [e["extensions"]["code"] for a in answers for e in (a.json().get("errors") or ())]


async def _codes(client: object, n: int) -> list[str]:
    return _codes_of(await _answers(client, n))


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
        refused = await _answers(client, 5)
        busy = _codes_of(refused)
        await asyncio.gather(*held)
        # the pool frees up: 20 concurrent requests on 2 connections all wait their turn
        calm = await _codes(client, 20)
    await store.aclose()
    assert busy and set(busy) == {"BACKEND_BUSY"}, busy
    # Nothing to show and worth a retry: 429 with Retry-After, as BUSY.
    assert {(a.status_code, a.headers.get("retry-after")) for a in refused} == {(429, "1")}
    assert calm == [], calm


OVERVIEW = """{ models(state: ACTIVE, first: 100) { totalCount nodes { id
  summary(steps: 20) { verdict reasons stepsPerMinute medianStepSeconds failedOps stuckOps lostOps }
} } }"""


@pytest.mark.parametrize("single_flight", [False, True])
async def test_fifty_concurrent_pollers_on_a_small_pool_all_get_answers(
    redis_server: RedisServer, single_flight: bool
) -> None:
    writer = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    await writer.flushdb()
    await populate(writer, SimConfig(seed=3, sessions=4))
    await writer.aclose()
    # Four connections for fifty requests: the rest queue for one (within the wait),
    # they are not answered BACKEND_BUSY or "unreachable".
    settings = RedisSettings(url=redis_server.url, max_connections=4, pool_timeout_s=20.0)
    store = RedisStateStore.from_settings(settings)
    limits = Settings(
        bounds=Bounds(request_deadline_s=60.0), switches=Switches(single_flight=single_flight)
    )
    async with app_client(store, limits) as client:
        alone = await _answers(client, 1, OVERVIEW)
        answers = await _answers(client, 50, OVERVIEW)
    await store.aclose()
    assert alone[0].status_code == 200 and "errors" not in alone[0].json(), alone[0].text
    assert alone[0].json()["data"]["models"]["totalCount"] > 0
    assert [a.status_code for a in answers] == [200] * 50
    assert _codes_of(answers) == []
    # Summaries move with the clock (rates, ages): the same models, each summarised.
    ids = [m["id"] for m in alone[0].json()["data"]["models"]["nodes"]]
    for a in answers:
        nodes = a.json()["data"]["models"]["nodes"]
        assert [m["id"] for m in nodes] == ids
        assert all(m["summary"]["verdict"] for m in nodes)


# Holds Redis for 3.5 s (under the 5 s after which it answers others BUSY); DEBUG SLEEP
# is off in a default redis-server.
BUSY_SCRIPT = """
local t = redis.call('TIME')
local start = tonumber(t[1]) + tonumber(t[2]) / 1e6
repeat
  t = redis.call('TIME')
until tonumber(t[1]) + tonumber(t[2]) / 1e6 - start > 3.5
return 1
"""


async def test_a_client_that_leaves_mid_round_trip_gives_its_connection_back(
    redis_server: RedisServer,
) -> None:
    writer = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    await writer.flushdb()
    await populate(writer, SimConfig(seed=2, sessions=2))
    # One connection, a short wait for it: a connection not given back leaves the next
    # request BACKEND_BUSY.
    settings = RedisSettings(url=redis_server.url, max_connections=1, pool_timeout_s=0.5)
    store = RedisStateStore.from_settings(settings)
    client = store.client
    assert isinstance(client, aioredis.Redis)
    pool = client.connection_pool

    def in_use() -> int:
        return len(list(pool._get_in_use_connections()))

    gone = GoneClient(GRAPHQL, json.dumps({"query": QUERY}).encode())
    try:
        async with app_client(store) as http:
            # Redis is single-threaded: while it runs a script, the request's round trip is sent
            # and unanswered, its connection checked out.
            sleeping = asyncio.ensure_future(writer.eval(BUSY_SCRIPT, 0))
            app = http._transport.app  # type: ignore[attr-defined]  # the ASGI app under the client
            calling = asyncio.ensure_future(gone.call(app))
            async with asyncio.timeout(10):
                while in_use() == 0:  # noqa: ASYNC110 # the pool has no event to wait on
                    await asyncio.sleep(0.01)
                gone.gone.set()
                await calling
                # The shared execution is cancelled after the request has returned.
                while in_use() > 0:  # noqa: ASYNC110 # the pool has no event to wait on
                    await asyncio.sleep(0.01)
            assert gone.sent == []
            assert not sleeping.done()  # given back at the cancellation, not at the answer
            async with asyncio.timeout(15):
                await sleeping
            codes = await _codes(http, 1)
    finally:
        await store.aclose()
        await writer.aclose()
    assert codes == [], codes


async def test_the_inspector_speaks_resp2_whatever_redis_py_defaults_to(
    redis_server: RedisServer,
) -> None:
    # redis-py 8 speaks RESP3 unless told and reshapes replies in Python; the
    # inspector asks for RESP2 (the shapes its decoding was written for, and faster).
    store = RedisStateStore.from_settings(RedisSettings(url=redis_server.url))
    client = store.client
    assert isinstance(client, aioredis.Redis)
    await client.zadd("oi-test-resp", {"a": 1.5})
    conn = await client.connection_pool.get_connection()  # type: ignore[no-untyped-call]
    try:
        assert conn.protocol in (2, "2")
    finally:
        await client.connection_pool.release(conn)
    assert await client.zrange("oi-test-resp", 0, -1, withscores=True) == [("a", 1.5)]
    await client.delete("oi-test-resp")
    await store.aclose()

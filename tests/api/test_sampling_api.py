"""Model.samplerBatchStats and Model.samplerBatches over the Redis twin."""

from __future__ import annotations

import json
import time
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisSamplerBatches, RedisStateStore
from openrl_inspect.core.errors import BackendTimeout
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.state.sampling_reads import WINDOW_BATCHES
from openrl_inspect.state import keys
from openrl_inspect.state.paging import Position, encode_cursor
from support.harness import app_client, gql

pytestmark = pytest.mark.anyio

STATS = """
query($id: ID!, $w: Float! = 900) { model(id: $id) { id samplerBatchStats(windowSeconds: $w) {
  batches batchesRead truncated undecodable generatedTokens promptTokens tokensPerSecond
  batchTokensPerSecond batchSizeMedian batchSizeP90 latencyMedianSeconds latencyP90Seconds
  queueDepthLatest queueDepthMedian windowSeconds baselineBatches baselineTokensPerSecond
  ratioToBaseline workersTruncated workers { worker batchesRead tokensPerSecond queueDepthLatest }
} } }
"""

PAGE = """
query($id: ID!, $first: Int, $after: String) { model(id: $id) { samplerBatches(first: $first,
  after: $after) { totalCount truncated pageInfo { hasNextPage hasPreviousPage endCursor }
  edges { cursor node { id at worker opId batchSize generatedTokens latencySeconds
  tokensPerSecond } } } } }
"""


def recorder(client: Any) -> AsyncRecorder:
    return AsyncRecorder(
        client,
        batch_size=1 << 30,
        settings=RecorderSettings(publish_counters=False, recorder_id="t"),
    )


@pytest.fixture
def server() -> fakeredis.FakeServer:
    return fakeredis.FakeServer()


@pytest.fixture
def client(server: fakeredis.FakeServer) -> Any:
    return fakeredis.FakeAsyncRedis(server=server, decode_responses=True)


@pytest.fixture
def store(server: fakeredis.FakeServer) -> RedisStateStore:
    # A frozen clock: the schema check (every 10 s) never lands inside a counted query.
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    return RedisStateStore(client, clock=lambda: 0.0)


async def a_model(client: Any, now: float) -> str:
    """A model whose sampler slowed down: 2000 tokens/s before the last 15 minutes, 500 in
    them, from two workers."""
    rec = recorder(client)
    rec.session_opened("s-1", "alice", at=now - 3600)
    rec.model_created("m-1", "s-1", "Qwen/Qwen3-8B", {}, {}, at=now - 3600)
    for i in range(20):  # 2 s batches back to back, from now - 2000 s
        end = now - 2000 + 2 * (i + 1)
        rec.sampler_batch("m-1", 64, 100, 4000, 2.0, 2, worker_id="s-a", at=end)
    for i in range(10):  # in the window, from now - 100 s
        end = now - 100 + 2 * (i + 1)
        worker = "s-a" if i % 2 else "s-b"
        rec.sampler_batch("m-1", 32, 100, 1000, 2.0, i, worker_id=worker, op_id="op-1", at=end)
    await rec.flush()
    return "m-1"


async def test_stats_of_a_model_against_its_baseline(client: Any, store: RedisStateStore) -> None:
    mid = await a_model(client, time.time())
    async with app_client(store) as http:
        body = await gql(http, STATS, id=mid)
    assert "errors" not in body, body
    s = body["data"]["model"]["samplerBatchStats"]
    assert (s["batches"], s["batchesRead"], s["truncated"], s["undecodable"]) == (10, 10, False, 0)
    assert (s["generatedTokens"], s["promptTokens"]) == (10_000, 1000)
    assert s["tokensPerSecond"] == pytest.approx(500)
    assert s["batchTokensPerSecond"] == pytest.approx(500)
    assert (s["batchSizeMedian"], s["latencyMedianSeconds"]) == (32, 2.0)
    assert (s["queueDepthLatest"], s["queueDepthMedian"]) == (9, 4.5)
    assert (s["baselineBatches"], s["baselineTokensPerSecond"]) == (20, pytest.approx(2000))
    assert s["ratioToBaseline"] == pytest.approx(0.25)
    a, b = s["workers"]
    assert (a["worker"], a["batchesRead"], a["queueDepthLatest"]) == ("s-a", 5, 9)
    assert (b["worker"], b["batchesRead"], b["queueDepthLatest"]) == ("s-b", 5, 8)
    # s-a: batches ending at now - 96, ..., now - 80 (2 s each): 5000 tokens over 18 s.
    assert a["tokensPerSecond"] == pytest.approx(5000 / 18)
    assert not s["workersTruncated"] and s["windowSeconds"] == 900


async def test_a_window_of_a_day_holds_everything_and_has_no_baseline(
    client: Any, store: RedisStateStore
) -> None:
    mid = await a_model(client, time.time())
    async with app_client(store) as http:
        body = await gql(http, STATS, id=mid, w=86_400.0)
    s = body["data"]["model"]["samplerBatchStats"]
    assert (s["batches"], s["baselineBatches"], s["ratioToBaseline"]) == (30, 0, None)


@pytest.mark.parametrize("window", [0.0, -5.0, 86_401.0, 1e308])
async def test_a_window_out_of_bounds_is_bad_input(
    client: Any, store: RedisStateStore, window: float
) -> None:
    mid = await a_model(client, time.time())
    async with app_client(store) as http:
        body = await gql(http, STATS, id=mid, w=window)
    assert body["data"]["model"]["samplerBatchStats"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_INPUT" and "windowSeconds" in error["message"]


async def test_redis_failing_nulls_the_stats_with_a_code_and_the_model_stands(
    client: Any, store: RedisStateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    mid = await a_model(client, time.time())

    async def down(self: Any, requests: Any) -> Any:
        raise BackendTimeout("redis", "Redis did not answer in time")

    monkeypatch.setattr(RedisSamplerBatches, "sampler_batches", down)
    async with app_client(store) as http:
        body = await gql(http, STATS, id=mid)
    assert body["data"]["model"] == {"id": mid, "samplerBatchStats": None}
    (error,) = body["errors"]
    assert error["extensions"] == {"code": "BACKEND_TIMEOUT", "backend": "redis"}
    assert error["path"] == ["model", "samplerBatchStats"]


async def test_batches_page_newest_first_and_a_bad_one_is_null_with_its_error(
    client: Any, store: RedisStateStore
) -> None:
    now = time.time()
    mid = await a_model(client, now)
    await client.zadd(keys.sampler_batches(mid), {"{broken": now - 99.5})
    async with app_client(store) as http:
        first = await gql(http, PAGE, id=mid, first=3)
        conn = first["data"]["model"]["samplerBatches"]
        assert (conn["totalCount"], conn["truncated"]) == (31, True)
        assert conn["pageInfo"]["hasNextPage"] and not conn["pageInfo"]["hasPreviousPage"]
        ats = [e["node"]["at"] for e in conn["edges"]]
        assert ats == sorted(ats, reverse=True)
        newest = conn["edges"][0]["node"]
        assert (newest["worker"], newest["opId"], newest["tokensPerSecond"]) == ("s-a", "op-1", 500)
        # Walk to the end: 31 members, 3 a page, each seen once.
        seen, after, errors = len(conn["edges"]), conn["pageInfo"]["endCursor"], []
        for _ in range(20):
            page = await gql(http, PAGE, id=mid, first=3, after=after)
            errors += page.get("errors", [])
            conn = page["data"]["model"]["samplerBatches"]
            seen += len(conn["edges"])
            after = conn["pageInfo"]["endCursor"]
            if not conn["pageInfo"]["hasNextPage"]:
                break
    assert seen == 31
    (error,) = errors
    assert error["extensions"]["code"] == "BAD_RECORD" and "not JSON" in error["message"]
    assert error["path"][-1] == "node"


@pytest.mark.parametrize("cursor", [encode_cursor("steps", Position(3.0, "3")), "not-a-cursor"])
async def test_a_cursor_of_another_list_is_refused(
    client: Any, store: RedisStateStore, cursor: str
) -> None:
    mid = await a_model(client, time.time())
    async with app_client(store) as http:
        body = await gql(http, PAGE, id=mid, first=2, after=cursor)
    assert body["data"]["model"] is None  # the connection is non-null, as every list's
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_INPUT" and "cursor" in error["message"]


async def _many_models(client: Any, count: int, now: float) -> None:
    await client.flushdb()
    rec = recorder(client)
    for s in range(10):
        rec.session_opened(f"s-{s}", "bob", at=now - 600)
        for m in range(count // 10):
            mid = f"m-{s}-{m}"
            rec.model_created(mid, f"s-{s}", "Qwen/Qwen3-8B", {}, {}, at=now - 600)
            for i in range(4):
                rec.sampler_batch(mid, 8, 10, 100, 0.5, 1, worker_id="w", at=now - 60 + i)
    await rec.flush()


MANY = """{ sessions(first: 10) { nodes { models(first: 100) { nodes { id %s } } } } }"""


async def _trips(client: Any, store: RedisStateStore, count: int, fields: str) -> tuple[int, int]:
    await _many_models(client, count, time.time())
    async with app_client(store) as http:
        await gql(http, "{ sessions(first: 1) { totalCount } }")  # warm: the schema check
        before = store.trips.count
        body = await gql(http, MANY % fields)
    assert "errors" not in body, body
    models = [m for s in body["data"]["sessions"]["nodes"] for m in s["models"]["nodes"]]
    if fields:
        assert all(m["samplerBatchStats"]["batches"] == 4 for m in models)
    return len(models), store.trips.count - before


async def test_stats_for_10_and_200_models_cost_the_same_round_trips(
    client: Any, store: RedisStateStore
) -> None:
    stats = "samplerBatchStats { batches tokensPerSecond workers { worker } }"
    n10, bare10 = await _trips(client, store, 10, "")
    _, with10 = await _trips(client, store, 10, stats)
    n200, bare200 = await _trips(client, store, 200, "")
    _, with200 = await _trips(client, store, 200, stats)
    assert (n10, n200) == (10, 200)
    assert with10 == with200 == bare10 + 1 == bare200 + 1


async def test_an_undecodable_batch_is_skipped_and_counted(
    client: Any, store: RedisStateStore
) -> None:
    now = time.time()
    mid = await a_model(client, now)
    await client.zadd(keys.sampler_batches(mid), {json.dumps({"t": "soon"}): now - 50})
    async with app_client(store) as http:
        body = await gql(http, STATS, id=mid)
    s = body["data"]["model"]["samplerBatchStats"]
    assert (s["batches"], s["batchesRead"], s["undecodable"]) == (11, 10, 1)
    assert "errors" not in body


async def test_a_busy_window_is_read_newest_first_up_to_its_bound(
    client: Any, store: RedisStateStore
) -> None:
    now = time.time()
    rec = recorder(client)
    rec.session_opened("s-1", "alice", at=now - 3600)
    rec.model_created("m-busy", "s-1", "Qwen/Qwen3-8B", {}, {}, at=now - 3600)
    for i in range(WINDOW_BATCHES + 50):  # a batch every second, newest at now - 1
        rec.sampler_batch("m-busy", 8, 10, 100, 1.0, 0, worker_id="w", at=now - 500 + i)
    await rec.flush()
    async with app_client(store) as http:
        body = await gql(http, STATS, id="m-busy")
    s = body["data"]["model"]["samplerBatchStats"]
    assert (s["batches"], s["batchesRead"], s["truncated"]) == (
        WINDOW_BATCHES + 50,
        WINDOW_BATCHES,
        True,
    )
    assert s["tokensPerSecond"] == pytest.approx(100)  # 400 batches over their 400 s

"""Sampler batches in Redis: written by the recorder, read in batches by ``RedisSamplerBatches``."""

from __future__ import annotations

import json
import math
from typing import Any

import fakeredis
import pytest
import redis.asyncio as aioredis
from openrl_inspect.adapters.redis import (
    RedisSamplerBatches,
    RedisStateStore,
    SamplerBatchRequest,
    SamplerBatchSlice,
)
from openrl_inspect.core.errors import BadRecord, InvalidInput
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.state import keys
from openrl_inspect.state.records import SamplerBatchRecord
from support.redis_server import RedisServer

pytestmark = pytest.mark.anyio

T0 = 1_772_366_400.0


@pytest.fixture
def server() -> fakeredis.FakeServer:
    return fakeredis.FakeServer()


@pytest.fixture
def redis(server: fakeredis.FakeServer) -> Any:
    return fakeredis.FakeAsyncRedis(server=server, decode_responses=True)


@pytest.fixture
def store(server: fakeredis.FakeServer) -> RedisStateStore:
    return RedisStateStore.in_memory(server)


def reader_of(store: RedisStateStore) -> RedisSamplerBatches:
    reader = RedisSamplerBatches.of(store)
    assert reader is not None
    return reader


def batch(at: float, **fields: Any) -> dict[str, Any]:
    """A member as the recorder writes it (``recorder/_entries.py`` ``sampler_batch``)."""
    entry = {
        "id": f"rec-1/{int(at * 10)}",
        "t": at,
        "batch_size": 32,
        "prompt_tokens": 1024,
        "generated_tokens": 4000,
        "latency_s": 0.5,
        "queue_depth": 3,
        "worker": "sampler-0",
        "op_id": "op-1",
    }
    entry.update(fields)
    return entry


async def put(redis: Any, mid: str, at: float, member: str | bytes | dict[str, Any]) -> None:
    raw = json.dumps(member, sort_keys=True) if isinstance(member, dict) else member
    await redis.zadd(keys.sampler_batches(mid), {raw: at})


async def read(store: RedisStateStore, *requests: SamplerBatchRequest) -> list[SamplerBatchSlice]:
    return await reader_of(store).sampler_batches(list(requests))


async def test_what_the_recorder_writes_is_read_back(redis: Any, store: RedisStateStore) -> None:
    rec = AsyncRecorder(
        redis, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    rec.sampler_batch("m-1", 64, 2048, 9000, 0.75, 4, worker_id="s-1", op_id="op-9", at=T0 + 1)
    rec.sampler_batch("m-1", 32, 1024, 3000, 0.25, 0, at=T0 + 2)
    await rec.flush()
    (found,) = await read(store, SamplerBatchRequest("m-1"))
    newest, oldest = found.records()
    assert (newest.at, newest.batch_size, newest.generated_tokens) == (T0 + 2, 32, 3000)
    assert newest.worker is None and newest.op_id is None
    assert oldest == SamplerBatchRecord(
        id=oldest.id,
        model_id="m-1",
        at=T0 + 1,
        worker="s-1",
        op_id="op-9",
        batch_size=64,
        prompt_tokens=2048,
        generated_tokens=9000,
        latency_s=0.75,
        queue_depth=4,
    )
    assert oldest.id and oldest.id != newest.id
    assert (found.in_window, found.truncated, found.undecodable, found.problem) == (
        2,
        False,
        0,
        None,
    )


async def test_a_window_gives_its_newest_batches_and_says_when_more_exist(
    redis: Any, store: RedisStateStore
) -> None:
    for i in range(10):
        await put(redis, "m", T0 + i, batch(T0 + i))
    window, newest3, exact = await read(
        store,
        SamplerBatchRequest("m", T0 + 2, T0 + 5, limit=10),
        SamplerBatchRequest("m", limit=3),
        SamplerBatchRequest("m", T0 + 7, math.inf, limit=3),
    )
    assert [r.at for r in window.records()] == [T0 + 5, T0 + 4, T0 + 3, T0 + 2]
    assert (window.in_window, window.truncated) == (4, False)
    assert [r.at for r in newest3.records()] == [T0 + 9, T0 + 8, T0 + 7]
    assert (newest3.in_window, newest3.truncated) == (10, True)
    assert (exact.in_window, exact.truncated) == (3, False)


async def test_resuming_after_a_position_skips_it_and_its_newer_ties(
    redis: Any, store: RedisStateStore
) -> None:
    for name in ("a", "b", "c", "d"):  # four batches at one instant: ordered by member
        await put(redis, "m", T0, batch(T0, id=name))
    await put(redis, "m", T0 - 1, batch(T0 - 1, id="older"))
    (first,) = await read(store, SamplerBatchRequest("m", limit=2))
    assert [r.id for r in first.records()] == ["d", "c"] and first.truncated
    last = first.entries[-1]
    (second,) = await read(
        store, SamplerBatchRequest("m", limit=2, after=(last.score, last.member))
    )
    assert [r.id for r in second.records()] == ["b", "a"] and second.truncated
    last = second.entries[-1]
    (third,) = await read(store, SamplerBatchRequest("m", limit=2, after=(last.score, last.member)))
    assert [r.id for r in third.records()] == ["older"] and not third.truncated


BAD_MEMBERS: list[tuple[str | bytes, str]] = [
    ("not json {", "not JSON"),
    ("[1, 2, 3]", "not a JSON object"),
    ('{"id": "no-time", "batch_size": 3}', "field t"),
    ('{"id": "nan-time", "t": NaN}', "field t"),
    ('{"id": "far", "t": 1e300}', "not a time in range"),
    (b'{"id": "\xff\xfe", "t": 1772366400.0}', "not UTF-8"),
]


@pytest.mark.parametrize(("member", "problem"), BAD_MEMBERS)
async def test_a_bad_member_spoils_only_itself(
    redis: Any, store: RedisStateStore, member: str | bytes, problem: str
) -> None:
    await put(redis, "m", T0 - 1, batch(T0 - 1, id="before"))
    await put(redis, "m", T0, member)
    await put(redis, "m", T0 + 1, batch(T0 + 1, id="after"))
    (found,) = await read(store, SamplerBatchRequest("m"))
    assert [r.id for r in found.records()] == ["after", "before"]
    assert found.undecodable == 1 and found.in_window == 3
    bad = found.entries[1].record
    assert isinstance(bad, BadRecord) and problem in str(bad)


async def test_bad_fields_go_none_one_by_one(redis: Any, store: RedisStateStore) -> None:
    odd = batch(
        T0,
        batch_size=-4,
        prompt_tokens="many",
        generated_tokens=10**400,
        latency_s=-0.5,
        queue_depth=2**40,
        worker=7,
        op_id=None,
    )
    with_nan = json.dumps(odd).replace('"latency_s": -0.5', '"latency_s": NaN')
    assert "NaN" in with_nan  # a writer using json, not orjson, can write it
    await put(redis, "m", T0, with_nan)
    await put(redis, "m", T0 + 1, batch(T0 + 1, latency_s=-0.5, generated_tokens=True))
    (found,) = await read(store, SamplerBatchRequest("m"))
    negative, nan = found.records()
    assert found.undecodable == 0
    assert (nan.batch_size, nan.prompt_tokens, nan.generated_tokens) == (None, None, None)
    assert (nan.latency_s, nan.queue_depth, nan.worker, nan.op_id) == (None, None, None, None)
    assert (negative.latency_s, negative.generated_tokens, negative.batch_size) == (None, None, 32)


async def test_a_key_of_another_type_fails_its_model_only(
    redis: Any, store: RedisStateStore
) -> None:
    await redis.set(keys.sampler_batches("broken"), "not a zset")
    await put(redis, "fine", T0, batch(T0))
    broken, fine = await read(store, SamplerBatchRequest("broken"), SamplerBatchRequest("fine"))
    assert isinstance(broken.problem, BadRecord) and broken.entries == ()
    assert "wrong Redis type" in str(broken.problem)
    assert fine.problem is None and len(fine.records()) == 1


@pytest.mark.parametrize(
    "request_",
    [
        SamplerBatchRequest("bad id{x}"),
        SamplerBatchRequest("m", T0, T0 - 1),
        SamplerBatchRequest("m", math.nan, T0),
        SamplerBatchRequest("m", limit=0),
        SamplerBatchRequest("m", limit=2001),
        SamplerBatchRequest("m", after=(math.nan, "x")),
    ],
)
async def test_a_bad_request_is_refused_before_redis(
    store: RedisStateStore, request_: SamplerBatchRequest
) -> None:
    before = store.trips.count
    with pytest.raises(InvalidInput):
        await read(store, request_)
    assert store.trips.count == before


async def _one_trip_for_many(redis: Any, store: RedisStateStore) -> None:
    models = [f"m-{i}" for i in range(50)]
    for i, mid in enumerate(models):
        for j in range(i % 4):
            await put(redis, mid, T0 + j, batch(T0 + j))
    await read(store, SamplerBatchRequest("warm"))  # the schema version check is done
    trips = store.trips.count
    found = await read(store, *(SamplerBatchRequest(m, T0, T0 + 10, limit=5) for m in models))
    assert store.trips.count == trips + 1
    assert [s.in_window for s in found] == [i % 4 for i in range(len(models))]
    assert [len(s.records()) for s in found] == [i % 4 for i in range(len(models))]


async def test_many_models_are_one_round_trip_on_the_twin(
    redis: Any, store: RedisStateStore
) -> None:
    await _one_trip_for_many(redis, store)


@pytest.mark.redis_server
async def test_many_models_are_one_round_trip_on_a_real_server(
    redis_server: RedisServer,
) -> None:
    writer = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    await writer.flushdb()
    store = RedisStateStore(aioredis.Redis.from_url(redis_server.url, decode_responses=True))
    try:
        await _one_trip_for_many(writer, store)
        # Undecoded reads work on the real wire too: a non-UTF-8 member spoils itself.
        await put(writer, "m-1", T0 + 5, b"\xff{")
        (found,) = await read(store, SamplerBatchRequest("m-1"))
        assert found.undecodable == 1 and len(found.records()) == 1
    finally:
        await writer.aclose()
        await store.aclose()

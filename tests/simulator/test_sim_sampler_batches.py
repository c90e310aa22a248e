"""The simulator records sampler batches for its sampler workers' sample ops."""

from __future__ import annotations

import json
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.simulator import SimConfig
from openrl_inspect.state import keys
from support.harness import app_client, gql, populate

pytestmark = pytest.mark.anyio

NOW = 1_772_366_400.0


async def _batches(seed: int) -> dict[str, Any]:
    client = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), decode_responses=True)
    sim = await populate(client, SimConfig(seed=seed, sessions=1, models_per_session=2), NOW)
    return {
        mid: await client.zrange(keys.sampler_batches(mid), 0, -1, withscores=True)
        for mid in sim.models
    }


async def test_sample_ops_leave_batches_from_the_sampler_worker() -> None:
    found = await _batches(3)
    ran = {mid: rows for mid, rows in found.items() if rows}
    assert len(ran) >= 2
    for mid, rows in ran.items():
        entries = [json.loads(member) for member, _ in rows]
        assert {e["worker"] for e in entries} == {f"sampler-{mid}"}
        assert all(e["t"] == score for e, (_, score) in zip(entries, rows, strict=True))
        assert all(e["generated_tokens"] > 0 and e["latency_s"] > 0 for e in entries)
        # Several batches for each sample op (about 2 s, in batches of about 0.6 s).
        ops = {e["op_id"] for e in entries}
        assert len(entries) >= 2 * len(ops)


async def test_same_seed_same_batches() -> None:
    assert await _batches(3) == await _batches(3)


async def test_the_demo_shows_sampling_stats() -> None:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(client, SimConfig(seed=3, sessions=1, models_per_session=2))
    mid = next(m for m in sim.models if m not in sim.scenario_ids.values())
    async with app_client(RedisStateStore.in_memory(server)) as http:
        body = await gql(
            http,
            "query($id: ID!) { model(id: $id) { samplerBatchStats { batches tokensPerSecond "
            "workers { worker } } } }",
            id=mid,
        )
    stats = body["data"]["model"]["samplerBatchStats"]
    assert stats["batches"] > 0 and stats["tokensPerSecond"] > 0
    assert [w["worker"] for w in stats["workers"]] == [f"sampler-{mid}"]


async def test_live_sample_ops_record_batches_as_they_finish() -> None:
    client = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), decode_responses=True)
    sim = await populate(client, SimConfig(seed=5, sessions=1, models_per_session=2), NOW)
    live = [m for m in sim.models.values() if m.live and m.workers]
    before = {m.id: int(await client.zcard(keys.sampler_batches(m.id))) for m in live}
    for tick in range(1, 120):
        sim.advance(NOW + tick * 0.5)
    await sim.rec.flush()  # type: ignore[attr-defined]
    newest: dict[str, float] = {}
    for m in live:
        rows: Any = await client.zrange(keys.sampler_batches(m.id), -1, -1, withscores=True)
        newest[m.id] = float(rows[0][1])
    after = {mid: int(await client.zcard(keys.sampler_batches(mid))) for mid in before}
    grown = [mid for mid in before if after[mid] > before[mid]]
    assert grown
    assert all(NOW < newest[mid] <= NOW + 60 for mid in grown)

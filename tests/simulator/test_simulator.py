"""The simulator is deterministic for a seed and keeps its timings realistic."""

from __future__ import annotations

from typing import Any

import fakeredis
import pytest
from openrl_inspect.simulator import SimConfig
from support.harness import populate

pytestmark = pytest.mark.anyio


async def _dump(seed: int, now: float) -> dict[str, Any]:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(client, SimConfig(seed=seed), now)
    for tick in range(1, 200):
        sim.advance(now + tick * 0.5)
    await sim.rec.flush()  # type: ignore[attr-defined]
    out: dict[str, Any] = {}
    async for key in client.scan_iter(count=1000):
        kind = await client.type(key)
        if kind == "hash":
            out[key] = await client.hgetall(key)
        elif kind == "zset":
            out[key] = await client.zrange(key, 0, -1, withscores=True)
        else:
            out[key] = await client.get(key)
    return out


async def test_same_seed_same_records_other_seed_other_records() -> None:
    a = await _dump(11, 1_700_000_000.0)
    b = await _dump(11, 1_700_000_000.0)
    c = await _dump(12, 1_700_000_000.0)
    assert a == b
    assert a != c
    assert len(a) > 500


async def test_live_models_progress_and_end() -> None:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(client, SimConfig(seed=5, sessions=2, models_per_session=2), 1e9)
    start = {m.id: m.step for m in sim.models.values() if m.live}
    for tick in range(1, 2000):
        sim.advance(1e9 + tick)
    live = [m for m in sim.models.values() if m.live and m.id in start]
    assert all(m.step > start[m.id] for m in live)
    assert any(m.state in ("ended", "failed") for m in live)

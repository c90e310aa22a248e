"""Rollups against the scan: the same history, written by the real recorder through the
simulator, summarised from the rollups and by scanning every op, gives the same summary
for every model (healthy, failing, stuck, waiting, ...), on fakeredis and on a real
redis-server; without rollup keys (data written before rollups) the summaries stay the
same; a model's rollup spares the op reads of everything but its open and failed ops."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import fakeredis
import pytest
import redis.asyncio as aioredis
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.cli.demo import DemoTwins
from openrl_inspect.core.domain import OpStatus, Verdict
from openrl_inspect.core.errors import BadRecord
from openrl_inspect.core.settings import Bounds
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.resolvers.summary.model import ModelSummary, model_summary
from openrl_inspect.simulator import SimConfig, Simulation, populate
from openrl_inspect.state import keys, rollup
from openrl_inspect.state.records import ModelRecord
from support.redis_server import RedisServer, require_redis

pytestmark = pytest.mark.anyio

PAGE = Bounds().max_page_size


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class CountingStore(RedisStateStore):
    """Notes every op hash a request reads; with ``hide_rollups`` it answers as a Redis
    holding no rollups (data written before them), so summaries take the scan."""

    def __init__(self, client: Any) -> None:
        super().__init__(client, clock=lambda: 0.0)
        self.op_reads: list[tuple[str, str]] = []
        self.hide_rollups = False

    async def rollups(self, wanted: Any) -> Any:
        if self.hide_rollups:
            return [None for _ in wanted]
        return await super().rollups(wanted)

    async def ops(self, op_keys: Any) -> Any:
        self.op_reads += list(op_keys)
        return await super().ops(op_keys)


@dataclass
class World:
    sim: Simulation
    store: CountingStore
    backends: Backends
    now: float
    client: Any  # a decoded client on the same data


async def _world(client: Any, reader: Any) -> World:
    # Small batches: a step's ops are written by several pipelines, so each rollup entry
    # is rebuilt from what earlier batches left, not only from one batch's records.
    rec = AsyncRecorder(client, batch_size=64, settings=RecorderSettings(publish_counters=False))
    now = time.time()
    sim = Simulation(SimConfig(seed=11, sessions=3, models_per_session=4), rec)
    populate(sim, now)
    await rec.flush()
    store = CountingStore(reader)
    backends = Backends(state=store)
    twins = await DemoTwins.build(sim, store, now)
    twins.install(backends)
    return World(sim, store, backends, now + 5.0, client)


@pytest.fixture(scope="module")
async def fake_world() -> World:
    server = fakeredis.FakeServer()
    return await _world(
        fakeredis.FakeAsyncRedis(server=server, decode_responses=True),
        fakeredis.FakeAsyncRedis(server=server, decode_responses=True),
    )


@pytest.fixture(scope="module")
async def real_world() -> AsyncIterator[World]:
    require_redis()
    server = RedisServer().start()
    try:
        writer = aioredis.Redis.from_url(server.url, decode_responses=True)
        reader = aioredis.Redis.from_url(server.url, decode_responses=True)
        yield await _world(writer, reader)
        await writer.aclose()
        await reader.aclose()
    finally:
        server.cleanup()


async def _records(w: World) -> list[ModelRecord]:
    ctx = Context.build(w.backends)
    recs = await ctx.state.models.load_many(sorted(w.sim.models))
    return [r for r in recs if isinstance(r, ModelRecord)]


async def _summaries(w: World, use_rollups: bool, steps: int) -> list[ModelSummary]:
    recs = await _records(w)
    w.store.hide_rollups = not use_rollups
    try:
        ctx = Context.build(w.backends)
        ctx.now = w.now  # both paths judge at the same moment
        return list(await asyncio.gather(*(model_summary(ctx, r, steps) for r in recs)))
    finally:
        w.store.hide_rollups = False


async def _rollups_used(w: World, steps: int) -> int:
    recs = await _records(w)
    rollups = await w.store.rollups([(r.id, steps) for r in recs])
    return sum(
        1
        for r, ru in zip(recs, rollups, strict=True)
        if ru is not None
        and not isinstance(ru, BadRecord)
        and ru.window(r.latest_step, r.kept_steps, steps, PAGE)
    )


async def _check_equivalence(w: World) -> None:
    recs = await _records(w)
    stepping = sum(1 for r in recs if r.latest_step is not None)
    assert stepping >= 10
    for steps in (20, 5, 1):
        # Every model that has steps is summarised from its rollup: the comparison
        # below compares two paths, not the scan with itself.
        assert await _rollups_used(w, steps) == len(recs)
        fast = await _summaries(w, True, steps)
        slow = await _summaries(w, False, steps)
        for a, b in zip(fast, slow, strict=True):
            assert a == b, a.model.id
    verdicts = {s.verdict for s in fast}
    assert {Verdict.PROGRESSING, Verdict.FAILED, Verdict.STUCK, Verdict.WAITING} <= verdicts
    assert any(s.failed_ops for s in fast) and any(s.kinds for s in fast)


async def _check_op_reads(w: World) -> None:
    """From rollups, only open ops (judged for health) and failed ops (their error
    quoted) are read from their hashes; the scan reads every op of every step."""
    w.store.op_reads.clear()
    await _summaries(w, True, 20)
    fast = list(w.store.op_reads)
    w.store.op_reads.clear()
    await _summaries(w, False, 20)
    slow = list(w.store.op_reads)
    assert len(fast) * 3 < len(slow), (len(fast), len(slow))
    for (mid, oid), rec in zip(fast, await w.store.ops(fast), strict=True):
        is_open = await w.client.zscore(keys.open_ops(mid), oid) is not None
        assert rec is not None and not isinstance(rec, BadRecord)
        assert is_open or rec.status == OpStatus.FAILED, (mid, oid, rec.status)


async def _check_old_data(w: World) -> None:
    """Data written before rollups: no rollup keys, the scan, the same summaries."""
    before = await _summaries(w, False, 20)
    for mid in w.sim.models:
        await w.client.delete(keys.rollup(mid), keys.rollup_steps(mid))
    assert await _rollups_used(w, 20) == 0
    assert await _summaries(w, True, 20) == before


async def _check_late_rollup(w: World, models: Sequence[str]) -> None:
    """A rollup begun after the model was created (a recorder upgraded mid-run) has not
    seen the model's older steps: it is not used."""
    rec = AsyncRecorder(w.client, batch_size=64, settings=RecorderSettings(publish_counters=False))
    mid = models[0]
    model = w.sim.models[mid]
    rec.step_metrics(mid, model.step, {"loss": 1.0}, at=w.now - 1)
    await rec.flush()
    assert await w.client.exists(keys.rollup_steps(mid))
    assert await _rollups_used(w, 20) == 0


async def test_rollups_and_scan_agree_on_fakeredis(fake_world: World) -> None:
    await _check_equivalence(fake_world)
    await _check_op_reads(fake_world)


async def test_rollups_and_scan_agree_on_redis_server(real_world: World) -> None:
    await _check_equivalence(real_world)
    await _check_op_reads(real_world)


async def _check_counters(w: World) -> None:
    """The lifetime counters match the finished ops stored, per kind."""
    counted = 0
    for mid in sorted(w.sim.models):
        truth: dict[str, list[Any]] = {}
        for n in await w.client.zrange(keys.steps(mid), 0, -1):
            for oid in await w.client.zrange(keys.step_ops(mid, int(n)), 0, -1):
                op = await w.client.hgetall(keys.op(mid, oid))
                if "finished_at" not in op:
                    continue
                t = truth.setdefault(op["kind"], [0, 0, 0.0, 0])
                t[0] += 1
                t[1] += op["status"] == OpStatus.FAILED
                if "started_at" in op:
                    t[2] += float(op["finished_at"]) - float(op["started_at"])
                    t[3] += 1
        totals = rollup.kind_totals(await w.client.hgetall(keys.rollup(mid)))
        got = {k.kind: [k.count, k.failed, k.duration_sum_s, sum(k.buckets)] for k in totals}
        assert got.keys() == truth.keys(), mid
        for kind, (count, failed, dur, timed) in truth.items():
            assert got[kind][:2] == [count, failed], (mid, kind)
            assert got[kind][2] == pytest.approx(dur, rel=1e-9, abs=1e-6), (mid, kind)
            assert got[kind][3] == timed, (mid, kind)
        counted += sum(t[0] for t in truth.values())
    assert counted > 100


async def test_lifetime_counters_match_the_ops(fake_world: World, real_world: World) -> None:
    for w in (fake_world, real_world):
        await _check_counters(w)


# Last: it deletes the rollups of the module's worlds.
async def test_old_data_summarises_the_same(fake_world: World, real_world: World) -> None:
    for w in (fake_world, real_world):
        await _check_old_data(w)
        await _check_late_rollup(w, sorted(w.sim.models))

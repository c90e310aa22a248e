"""The demo holds a steady state for hours: its clock run forward two hours, tick by
tick as the demo's loop runs it, into a real redis-server, and judged as the API judges.

Every cause kind staged at the start is still on some model, each staged scenario still
has its cause, the healthy models kept stepping with no cause, stalled and waiting
models did not pile up, and capacity stays mixed (held and free). Before, the slow
models read as stalled within minutes, OOM kills aged out of the diagnosis, and new
models took every GPU.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis.asyncio as aioredis
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.cli.demo import DemoSettings, DemoTwins
from openrl_inspect.core.domain import CauseKind, ModelState, Verdict
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.resolvers.summary.model import ModelSummary, model_summary
from openrl_inspect.simulator import SimConfig, Simulation, populate
from openrl_inspect.simulator.sim import FREE_RESERVE_GPUS
from support.redis_server import RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOURS = 2.0
TICK_S = 5.0
HEALTHY = ("healthy_trainer", "healthy_sampler_heavy", "healthy_checkpointing")
# Post-mortems of one moment (simulator.scenarios.past): as that moment recedes past the
# diagnosis's windows, their causes fade, as they should on a real cluster.
PAST = ("device_taint_evicted", "preempted_readmitted", "oom_chain")


@dataclass
class Moment:
    summaries: dict[str, ModelSummary]  # the models not ended, by id
    held: int
    free: int

    def verdicts(self) -> collections.Counter[Verdict]:
        return collections.Counter(s.verdict for s in self.summaries.values())

    def kinds(self, leaving_out: set[str]) -> set[CauseKind]:
        return {
            c.kind
            for s in self.summaries.values()
            if s.model.id not in leaving_out
            for c in s.diagnosis.causes
        }


def chunks(ids: list[str], n: int) -> Iterator[list[str]]:
    for i in range(0, len(ids), n):
        yield ids[i : i + n]


async def judge(sim: Simulation, store: RedisStateStore, now: float) -> Moment:
    """Every model the simulation has not ended (failed ones are judged), judged at ``now`` over the twins as the
    demo builds them, a page of 100 per request as the API pages them."""
    backends = Backends(state=store)
    (await DemoTwins.build(sim, store, now)).install(backends)
    ids = [m.id for m in sim.models.values() if m.state != ModelState.ENDED]
    found: dict[str, ModelSummary] = {}
    for page in chunks(ids, 100):
        ctx = Context.build(backends)
        ctx.now = now
        records = await ctx.state.models.load_many(page)
        for s in await asyncio.gather(*(model_summary(ctx, r, 20) for r in records if r)):
            found[s.model.id] = s
    held = sum(len(n.held) for n in sim.cluster.nodes if not n.partitioned)
    return Moment(found, held, sim.free_gpus())


async def test_the_demo_holds_its_steady_state_for_hours(redis_server: RedisServer) -> None:
    url = f"{redis_server.url}/11"
    writer = aioredis.Redis.from_url(url, decode_responses=True)
    await writer.flushdb()
    settings = RecorderSettings(publish_counters=False, recorder_id="sim")
    rec = AsyncRecorder(writer, batch_size=1 << 30, settings=settings)
    # Generous timeouts: the judgement of every model is not what is measured here (a
    # connection opened while redis-server applies the recorder's batch waited > 1 s in CI).
    store = RedisStateStore.from_settings(
        RedisSettings(url=url, timeout_s=30.0, pool_timeout_s=30.0, connect_timeout_s=30.0)
    )
    demo = DemoSettings()
    config = SimConfig(
        seed=demo.seed,
        sessions=demo.sessions,
        models_per_session=demo.models_per_session,
        steps_per_model=demo.steps_per_model,
    )
    end = time.time()
    start = end - HOURS * 3600
    sim = Simulation(config, rec)
    try:
        populate(sim, start)
        await rec.flush()
        before = await judge(sim, store, start)
        steps = {name: sim.models[sim.scenario_ids[name]].step for name in HEALTHY}
        tops = {
            name: before.summaries[mid].diagnosis.causes[0].kind
            for name, mid in sim.scenario_ids.items()
            if before.summaries[mid].diagnosis.causes
        }
        now, ticks = start, 0
        while now < end:
            now = min(end, now + TICK_S)
            sim.advance(now)
            ticks += 1
            if ticks % 12 == 0:
                await rec.flush()
        await rec.flush()
        after = await judge(sim, store, end)
    finally:
        await rec.close(5.0)
        await store.aclose()
        await writer.flushdb()
        await writer.aclose()

    # The world moved on: models arrived and ended while it ran.
    assert len(sim.models) > len(before.summaries) + 100
    # Every cause kind staged at the start is still shown, and each scenario keeps its own.
    past = {sim.scenario_ids[name] for name in PAST if name in sim.scenario_ids}
    assert before.kinds(past) <= after.kinds(past), before.kinds(past) - after.kinds(past)
    for name, kind in tops.items():
        if name in PAST:
            continue
        judged = after.summaries[sim.scenario_ids[name]]
        assert kind in {c.kind for c in judged.diagnosis.causes}, (name, judged.verdict)
    # The healthy ones kept stepping (a step takes about 5 s) and have no cause.
    for name in HEALTHY:
        model = sim.models[sim.scenario_ids[name]]
        assert model.step - steps[name] > HOURS * 3600 / 20, name
        judged = after.summaries[model.id]
        assert judged.verdict == Verdict.PROGRESSING and not judged.diagnosis.causes, name
    # Nothing piles up: no more stalled models, at most a new arrival more waiting.
    was, now_ = before.verdicts(), after.verdicts()
    assert now_[Verdict.STALLED] <= was[Verdict.STALLED], (was, now_)
    assert now_[Verdict.WAITING] <= was[Verdict.WAITING] + 1, (was, now_)
    assert now_[Verdict.PROGRESSING] >= len(HEALTHY) + 3, now_
    # Capacity stays mixed: GPUs held, and room kept for what arrives.
    assert after.held > 0 and after.free >= FREE_RESERVE_GPUS, (after.held, after.free)

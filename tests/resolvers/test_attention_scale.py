"""Attention over every live model: a model stuck for a long time, wherever it sits
among many moving ones (the oldest, the middle, the newest), is found and ranked first,
``scanned`` counts every live model, and the paging says how many more need a person."""

from __future__ import annotations

import asyncio
import time

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.domain import Verdict
from openrl_inspect.recorder import Recorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.resolvers.summary import rollup

QUIET = RecorderSettings(publish_counters=False, recorder_id="attention", flush_at_exit=False)
MODELS = 150  # more than the old attention judged of one state (its `scan`, 50 at most 100)


def world(stuck_at: int, now: float) -> fakeredis.FakeServer:
    """``MODELS`` active models created a second apart, each moving a few seconds ago;
    model ``stuck_at`` has had one op running for an hour on a live worker instead."""
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    rec = Recorder(client, settings=QUIET, start=False)
    rec.session_opened("s1", "alice", at=now - 10_000)
    for i in range(MODELS):
        mid = f"m{i:03d}"
        created = now - 9_000 + i
        rec.model_created(mid, "s1", "llama", at=created)
        rec.model_state(mid, "active", at=created + 1)
        started = now - 3_600 if i == stuck_at else now - 5
        rec.op_accepted(mid, f"{mid}-o", "forward_backward", 0, at=started - 1)
        rec.op_started(mid, f"{mid}-o", f"w{i}", at=started)
        if i != stuck_at:
            rec.op_finished(mid, f"{mid}-o", "succeeded", at=now - 2)
        rec.heartbeat(f"w{i}", "trainer", "pod", "node", mid, [], {}, at=now - 1)
    rec.flush()
    assert rec.stats().written == rec.stats().recorded
    return server


@pytest.mark.parametrize("stuck_at", [0, MODELS // 2, MODELS - 1])
def test_a_stuck_model_is_found_wherever_it_sits_among_many(stuck_at: int) -> None:
    now = time.time()
    store = RedisStateStore.in_memory(world(stuck_at, now))

    async def ask(after: str | None = None) -> rollup.Attention:
        ctx = Context.build(Backends(state=store))
        return await rollup.attention(ctx, 10, after)

    found = asyncio.run(ask())
    assert found.scanned == MODELS
    assert [s.model.id for s in found.models] == [f"m{stuck_at:03d}"]
    assert found.models[0].verdict == Verdict.STUCK
    assert (found.needing, found.remaining, found.has_next) == (1, 0, False)


def test_attention_pages_on_and_says_how_many_more_need_a_person() -> None:
    now = time.time()
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    rec = Recorder(client, settings=QUIET, start=False)
    rec.session_opened("s1", "alice", at=now - 100)
    for i in range(5):  # five models waiting for GPUs since long ago: each needs a person
        rec.model_created(f"w{i}", "s1", "llama", at=now - 5_000 - i)
    rec.flush()
    store = RedisStateStore.in_memory(server)

    async def ask(after: str | None) -> rollup.Attention:
        ctx = Context.build(Backends(state=store))
        return await rollup.attention(ctx, 2, after)

    pages, after = [], None
    for _ in range(5):
        found = asyncio.run(ask(after))
        pages.append(([s.model.id for s in found.models], found.remaining, found.has_next))
        if not found.has_next:
            break
        after = found.end_cursor
    assert [r for _, r, _ in pages] == [3, 1, 0]
    assert sorted(m for ids, _, _ in pages for m in ids) == [f"w{i}" for i in range(5)]


def test_the_demos_slow_model_is_on_the_list() -> None:
    """The demo's slow model, its slowdown in its last steps, is judged SLOW and listed: it
    is quiet past the heartbeat timeout between the demo's stagings. (A model that keeps
    moving slowly, never quiet, is not judged by attention: see the note of issue 29.)"""
    from openrl_inspect.recorder import AsyncRecorder
    from openrl_inspect.simulator import SimConfig, Simulation, populate

    server = fakeredis.FakeServer()
    writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = Simulation(SimConfig(seed=7), AsyncRecorder(writer, batch_size=1 << 30))
    now = time.time()
    populate(sim, now)

    async def needing() -> dict[str, Verdict]:
        await sim.rec.flush()  # type: ignore[attr-defined]
        ctx = Context.build(Backends(state=RedisStateStore.in_memory(server)))
        ctx.now = now + 60
        found: rollup.Attention | None = None
        after: str | None = None
        out: dict[str, Verdict] = {}
        while found is None or found.has_next:
            found = await rollup.attention(ctx, rollup.MAX_WORST, after)
            out |= {s.model.id: s.verdict for s in found.models}
            after = found.end_cursor
        return out

    judged = asyncio.run(needing())
    assert judged.get(sim.scenario_ids["trainer_slow"]) == Verdict.SLOW

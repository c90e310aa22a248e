"""The demo's worker logs: derived from the simulation, deterministic, incremental."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.logs import LogQuery, parse_timestamp
from openrl_inspect.adapters.logs.memory import InMemoryLogSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.cli.demo import DemoSettings, demo_backends
from openrl_inspect.simulator import SimConfig, Simulation
from openrl_inspect.simulator.logs_twin import LogMirror
from openrl_inspect.state.records import ModelRecord
from support.harness import populate

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0
LABEL = "openrl.ai/model-id"


async def world(seed: int = 3) -> tuple[Simulation, RedisStateStore]:
    server = fakeredis.FakeServer()
    sim = await populate(
        fakeredis.FakeAsyncRedis(server=server, decode_responses=True), SimConfig(seed=seed), NOW
    )
    return sim, RedisStateStore.in_memory(server)


def of(lines: list[dict[str, Any]], mid: str) -> list[dict[str, Any]]:
    mine = [line for line in lines if line.get("labels", {}).get(LABEL) == mid]
    return sorted(mine, key=lambda line: (line["timestamp"], line["insertId"]))


def text(line: dict[str, Any]) -> str:
    return str(line.get("textPayload") or line["jsonPayload"].get("message"))


def at(line: dict[str, Any]) -> float:
    return parse_timestamp(line["timestamp"]).timestamp()


async def test_the_same_simulation_gives_the_same_lines() -> None:
    a = await LogMirror().step(*await world(), NOW)
    b = await LogMirror().step(*await world(), NOW)
    assert a == b and len(a) > 500
    assert len({line["insertId"] for line in a}) == len(a)


async def test_scenarios_leave_their_traces() -> None:
    sim, store = await world()
    lines = await LogMirror().step(sim, store, NOW)
    ids = sim.scenario_ids

    failed = of(lines, ids["failed"])
    (model,) = await store.models([ids["failed"]])
    assert isinstance(model, ModelRecord)
    errors = [line for line in failed if line["severity"] == "ERROR"]
    assert text(errors[1]) == "Traceback (most recent call last):"
    assert text(errors[-1]).startswith("torch.OutOfMemoryError: CUDA out of memory")
    (exit_,) = [line for line in failed if line["severity"] == "CRITICAL"]
    assert at(exit_) == pytest.approx(model.transitions["failed"], abs=1e-3)
    assert all(line["labels"]["openrl.ai/role"] == "trainer" for line in errors)

    lost = of(lines, ids["lost"])
    assert lost and max(at(line) for line in lost) <= NOW - 600  # silent since then

    stuck = of(lines, ids["stuck"])
    waits = [line for line in stuck if text(line).startswith("still waiting on NCCL allreduce")]
    assert len(waits) == 29 and all(line["severity"] == "WARNING" for line in waits)
    gaps = {round(at(b) - at(a)) for a, b in itertools.pairwise(waits)}
    assert gaps == {60} and at(waits[-1]) <= NOW

    assert of(lines, ids["waiting"]) == []  # never placed: no worker wrote anything
    starts = [line for line in lines if text(line).startswith("op ")]
    assert all(line["jsonPayload"]["op_id"] for line in starts)


async def test_each_call_adds_only_new_lines() -> None:
    sim, store = await world()
    mirror = LogMirror()
    first = await mirror.step(sim, store, NOW)
    assert await mirror.step(sim, store, NOW) == []
    later = await mirror.step(sim, store, NOW + 130)
    assert [text(line) for line in later] == [
        "still waiting on NCCL allreduce (bucket 8/8, 1800 s)",
        "still waiting on NCCL allreduce (bucket 8/8, 1860 s)",
        "still waiting on NCCL allreduce (bucket 8/8, 1920 s)",
    ]
    states = {m.id: m.state for m in sim.models.values()}
    for tick in range(1, 41):
        sim.advance(NOW + 130 + tick * 0.5)
    await sim.rec.flush()  # type: ignore[attr-defined]
    live = await mirror.step(sim, store, NOW + 150)
    assert live
    # Lines of what moved: live models, and the slow ones the demo stages again (the
    # new ones and those they replace).
    moved = {m.id for m in sim.models.values() if m.live or states.get(m.id) != m.state}
    assert {line["labels"][LABEL] for line in live} <= moved
    seen = {line["insertId"] for line in first + later}
    assert not seen & {line["insertId"] for line in live}


async def test_the_log_mirror_fills_a_bounded_twin() -> None:
    sim, store = await world()
    logs = LogMirror()
    await logs.update(sim, store, NOW)
    twin = logs.twin
    assert isinstance(twin, InMemoryLogSource) and 500 < len(twin) <= 20_000
    await logs.update(sim, store, NOW + 70)
    assert logs.twin is twin
    mirror = LogMirror(capacity=100)
    mirror.twin.append(*await mirror.step(sim, store, NOW))
    assert len(mirror.twin) == 100
    start = datetime.fromtimestamp(NOW, tz=UTC) - timedelta(minutes=2)
    page = await twin.entries(
        LogQuery(
            start=start,
            end=start + timedelta(minutes=3),
            model_id=sim.scenario_ids["stuck"],
            severity_floor="WARNING",
        )
    )
    assert [e.message for e in page.entries][-1].endswith("1800 s)")


async def test_the_demo_mirrors_logs() -> None:
    demo = DemoSettings(sessions=1, models_per_session=1, steps_per_model=2, tick_s=60)
    async with demo_backends(demo) as backends:
        assert isinstance(backends.logs, InMemoryLogSource) and len(backends.logs) > 0

"""Model.timeline and Session.timeline through the API, on the demo's world: newest first
from every source, for a model whose pods, Workload and Events are all gone (the events
log keeps the eviction); bounded and paged with one cursor; a source left out or not
configured is said, never shown as nothing."""

from __future__ import annotations

import time
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.cli.demo import DemoTwins
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.simulator import SimConfig, Simulation, populate
from openrl_inspect.simulator.scenarios import past
from support.harness import app_client, gql

pytestmark = pytest.mark.anyio

QUERY = """query($id: ID!, $first: Int, $after: String, $sources: [TimelineSource!]) {
  model(id: $id) { timeline(first: $first, after: $after, sources: $sources) {
    pageInfo { hasNextPage endCursor } truncated truncatedSources until
    unavailable { source code }
    entries { at source kind statement refs next { graphql nodes logs { filter } } } } } }"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def world() -> tuple[Simulation, Backends]:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        client, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    now = time.time()
    sim = Simulation(SimConfig(seed=5), rec)
    populate(sim, now)
    await rec.flush()
    store = RedisStateStore.in_memory(server)
    backends = Backends(state=store)
    twins = await DemoTwins.build(sim, store, now)
    twins.install(backends)
    return sim, backends


def _others(b: Backends, **changes: Any) -> dict[str, Any]:
    found = {
        "kubernetes": b.kubernetes,
        "logs": b.logs,
        "gpu_metrics": b.gpu_metrics,
        "prometheus": b.prometheus,
    }
    return {**found, **changes}


async def _timeline(b: Backends, mid: str, **variables: Any) -> dict[str, Any]:
    async with app_client(b.state, **_others(b)) as http:
        body = await gql(http, QUERY, id=mid, **variables)
    assert "errors" not in body, body["errors"]
    result: dict[str, Any] = body["data"]["model"]["timeline"]
    return result


async def test_a_model_whose_pods_are_gone_has_its_eviction_in_the_timeline(
    world: tuple[Simulation, Backends],
) -> None:
    sim, b = world
    mid = sim.scenario_ids["device_taint_evicted"]
    t = await _timeline(b, mid, first=100)
    entries = t["entries"]
    assert t["unavailable"] == [] and not t["pageInfo"]["hasNextPage"]
    assert [e["at"] for e in entries] == sorted((e["at"] for e in entries), reverse=True)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_kind.setdefault(e["kind"], []).append(e)
    eviction = [e for e in by_kind["POD_EVENT"] if "DeviceTaintManagerEviction" in e["statement"]]
    assert len(eviction) == 1 and eviction[0]["source"] == "KUBERNETES"
    assert any(r.startswith("insertId past-") for r in eviction[0]["refs"])  # the events log
    (taint,) = by_kind["DEVICE_TAINT"]
    assert "gpu.nvidia.com/xid=79:NoExecute" in taint["statement"]
    assert f"DeviceTaintRule {past.XID_RULE}" in taint["refs"]
    assert by_kind["OP_FAILED"][0]["statement"].startswith("forward_backward at step ")
    assert {"PLACEMENT_ADMITTED", "PLACEMENT_RELEASED", "STATE", "LOG_ERROR"} <= set(by_kind)
    # The taint came before the eviction, the eviction before the op's failure.
    order = [e["kind"] for e in reversed(entries)]
    assert order.index("DEVICE_TAINT") < order.index("OP_FAILED")
    assert eviction[0]["at"] < by_kind["OP_FAILED"][0]["at"]


async def test_the_preemption_and_the_readmission_elsewhere(
    world: tuple[Simulation, Backends],
) -> None:
    sim, b = world
    mid = sim.scenario_ids["preempted_readmitted"]
    t = await _timeline(b, mid, sources=["REDIS", "KUBERNETES"])
    entries = t["entries"]
    assert {e["source"] for e in entries} <= {"REDIS", "KUBERNETES"}
    preempted = [
        e for e in entries if e["kind"] == "WORKLOAD_EVENT" and ": Preempted:" in e["statement"]
    ]
    admitted = [e for e in entries if e["kind"] == "PLACEMENT_ADMITTED"]
    assert len(preempted) == 1 and len(admitted) == 2
    newest, older = admitted
    assert newest["at"] > preempted[0]["at"] > older["at"]
    assert newest["next"]["nodes"] != older["next"]["nodes"]


async def test_pages_follow_each_other_from_one_moment(world: tuple[Simulation, Backends]) -> None:
    sim, b = world
    mid = sim.scenario_ids["oom_chain"]
    whole = await _timeline(b, mid, first=500)
    first = await _timeline(b, mid, first=4)
    assert first["pageInfo"]["hasNextPage"] and first["truncated"] and len(first["entries"]) == 4
    second = await _timeline(b, mid, first=500, after=first["pageInfo"]["endCursor"])
    assert second["until"] == first["until"]
    got = [e["statement"] for e in first["entries"] + second["entries"]]
    assert got == [e["statement"] for e in whole["entries"]]


async def test_bounds_and_cursors_are_refused_with_a_code(
    world: tuple[Simulation, Backends],
) -> None:
    sim, b = world
    mid = sim.scenario_ids["oom_chain"]
    async with app_client(b.state, **_others(b)) as http:
        for variables in ({"first": 501}, {"first": -1}, {"after": "not-a-cursor"}):
            body = await gql(http, QUERY, id=mid, **variables)
            assert body["errors"][0]["extensions"]["code"] == "BAD_INPUT", variables


async def test_a_source_not_configured_is_said(world: tuple[Simulation, Backends]) -> None:
    sim, b = world
    mid = sim.scenario_ids["oom_chain"]
    async with app_client(
        b.state, **_others(b, logs=None, prometheus=None, gpu_metrics=None)
    ) as http:
        body = await gql(http, QUERY, id=mid)
    t = body["data"]["model"]["timeline"]
    assert {(u["source"], u["code"]) for u in t["unavailable"]} == {
        ("CLOUD_LOGGING", "BACKEND_NOT_CONFIGURED"),
        ("PROMETHEUS", "BACKEND_NOT_CONFIGURED"),
    }
    assert {e["source"] for e in t["entries"]} == {"REDIS", "KUBERNETES"}


async def test_a_session_timeline_merges_its_models(world: tuple[Simulation, Backends]) -> None:
    sim, b = world
    mid = sim.scenario_ids["oom_chain"]
    session = sim.models[mid].session_id
    query = """query($id: ID!) { session(id: $id) { timeline(first: 20, sources: [REDIS]) {
      truncated entries { at modelId kind } } } }"""
    async with app_client(b.state, **_others(b)) as http:
        body = await gql(http, query, id=session)
    assert "errors" not in body, body["errors"]
    entries = body["data"]["session"]["timeline"]["entries"]
    assert len(entries) == 20 and len({e["modelId"] for e in entries}) >= 1
    assert [e["at"] for e in entries] == sorted((e["at"] for e in entries), reverse=True)


async def test_one_query_reads_a_bounded_number_of_timelines(
    world: tuple[Simulation, Backends],
) -> None:
    _, b = world
    query = """{ sessions(first: 20) { nodes { models(first: 20) { nodes {
      timeline(first: 1, sources: [REDIS]) { entries { kind } } } } } } }"""
    async with app_client(b.state, **_others(b)) as http:
        body = await gql(http, query)
    codes = {e["extensions"]["code"] for e in body["errors"]}
    assert codes == {"BAD_INPUT"}
    assert "at most 20 models" in body["errors"][0]["message"]

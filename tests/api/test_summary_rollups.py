"""Summaries through the API: the causes with every field, their budgets, unknown backends,
the session rollup, the models that need a person, and backend calls that do not grow
with the number of models."""

from __future__ import annotations

import json
import time
from typing import Any

import fakeredis
import pytest
from graphql import GraphQLList, GraphQLNamedType, GraphQLNonNull, GraphQLObjectType
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.cli.demo import DemoTwins
from openrl_inspect.core.errors import BackendUnavailable
from openrl_inspect.core.settings import Settings, Thresholds
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.simulator import SimConfig, Simulation, populate
from support.harness import app_client, gql
from support.types import api_types

pytestmark = pytest.mark.anyio


def _unwrap(t: Any) -> Any:
    while isinstance(t, GraphQLNonNull | GraphQLList):
        t = t.of_type
    return t


def full_selection(type_name: str, skip: frozenset[str] = frozenset({"Model"})) -> str:
    """Every field of the type, recursively (objects in ``skip`` only by ``id``): what
    "a summary with every field selected" means, kept in step with the schema."""
    schema = api_types()

    def select(t: GraphQLNamedType, depth: int) -> str:
        assert isinstance(t, GraphQLObjectType) and depth < 8
        parts = []
        for name, f in t.fields.items():
            if any(isinstance(a.type, GraphQLNonNull) for a in f.args.values()):
                continue
            inner = _unwrap(f.type)
            if isinstance(inner, GraphQLObjectType):
                body = "id" if inner.name in skip else select(inner, depth + 1)
                parts.append(f"{name} {{ {body} }}")
            else:
                parts.append(name)
        return " ".join(parts)

    named = schema.get_type(type_name)
    assert named is not None
    return select(named, 0)


def tokens(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"))) // 4


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


def _others(b: Backends) -> dict[str, Any]:
    return {
        "kubernetes": b.kubernetes,
        "logs": b.logs,
        "gpu_metrics": b.gpu_metrics,
        "prometheus": b.prometheus,
    }


async def test_every_model_summary_fits_its_budget(world: tuple[Simulation, Backends]) -> None:
    sim, backends = world
    fields = full_selection("ModelSummary")
    query = "query($id: ID!) { model(id: $id) { summary { " + fields + " } } }"
    async with app_client(backends.state, **_others(backends)) as http:
        for mid in sim.models:
            body = await gql(http, query, id=mid)
            assert "errors" not in body, body["errors"]
            summary = body["data"]["model"]["summary"]
            assert tokens(summary) <= 1500, (mid, tokens(summary))


async def test_a_waiting_model_is_told_its_quota_with_a_log_filter(
    world: tuple[Simulation, Backends],
) -> None:
    sim, backends = world
    query = """query($id: ID!) { model(id: $id) { summary { verdict reasons unknown { backend }
      causes { kind rank statement facts next { graphql } } } } }"""
    async with app_client(backends.state, **_others(backends)) as http:
        body = await gql(http, query, id=sim.scenario_ids["waiting"])
    summary = body["data"]["model"]["summary"]
    assert summary["verdict"] == "WAITING" and summary["unknown"] == []
    top = summary["causes"][0]
    assert top["kind"] == "QUOTA" and top["rank"] == 1
    facts = top["facts"]
    assert facts["resource"] == "nvidia.com/gpu" and facts["shortfall"] == 2
    assert summary["reasons"][0] == top["statement"]
    assert top["next"]["graphql"].startswith("{")


async def test_without_kubernetes_and_metrics_their_causes_are_unknown(
    world: tuple[Simulation, Backends],
) -> None:
    sim, backends = world
    query = """query($id: ID!) { model(id: $id) { summary { verdict reasons
      causes { kind } unknown { backend code } } } }"""
    async with app_client(backends.state) as http:
        body = await gql(http, query, id=sim.scenario_ids["waiting"])
    summary = body["data"]["model"]["summary"]
    assert summary["verdict"] == "WAITING" and summary["causes"] == []
    assert {u["backend"]: u["code"] for u in summary["unknown"]} == {
        "kubernetes": "BACKEND_NOT_CONFIGURED",
        "prometheus": "BACKEND_NOT_CONFIGURED",
    }
    assert "kubernetes not judged: BACKEND_NOT_CONFIGURED" in summary["reasons"]


async def test_a_failing_cluster_spoils_only_its_own_causes(
    world: tuple[Simulation, Backends],
) -> None:
    sim, backends = world
    broken = MemoryKubernetesSource()
    broken.failure = BackendUnavailable("kubernetes", "the API server is away")
    query = """query($id: ID!) { model(id: $id) { summary { verdict
      causes { kind } unknown { backend code } } } }"""
    others = {**_others(backends), "kubernetes": broken}
    async with app_client(backends.state, **others) as http:
        body = await gql(http, query, id=sim.scenario_ids["stuck"])
    summary = body["data"]["model"]["summary"]
    assert summary["verdict"] == "STUCK" and summary["causes"][0]["kind"] == "OP_STUCK"
    assert {"backend": "kubernetes", "code": "BACKEND_UNAVAILABLE"} in summary["unknown"]


async def test_session_summary_and_attention(world: tuple[Simulation, Backends]) -> None:
    sim, backends = world
    sid = sim.models[sim.scenario_ids["stuck"]].session_id
    fields = full_selection("SessionSummary")
    query = (
        "query($sid: ID!) { session(id: $sid) { summary { " + fields + " } } "
        "attention(first: 20) { scanned needing truncated "
        "models { verdict model { id } topCause { kind } } } }"
    )
    async with app_client(backends.state, **_others(backends)) as http:
        body = await gql(http, query, sid=sid)
    assert "errors" not in body, body["errors"]
    summary = body["data"]["session"]["summary"]
    assert tokens(summary) <= 4000
    assert sum(v["count"] for v in summary["byVerdict"]) == summary["models"]
    worst = [m["verdict"] for m in summary["worst"]]
    assert worst[0] == "FAILED" and "PROGRESSING" not in worst
    need = body["data"]["attention"]
    ids = [m["model"]["id"] for m in need["models"]]
    for name in ("stuck", "lost", "failed", "waiting"):
        assert sim.scenario_ids[name] in ids, name
    assert all(m["verdict"] not in ("PROGRESSING", "ENDED") for m in need["models"])
    assert ids.index(sim.scenario_ids["failed"]) < ids.index(sim.scenario_ids["waiting"])


class CountingKube(MemoryKubernetesSource):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def _resolve(self, needs: Any) -> Any:
        self.reads += 1
        return await super()._resolve(needs)


class CountingLogs:
    """The logs twin, counting its reads (the events log of models whose pods are gone)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reads = 0

    async def entries(self, query: Any, cursor: str | None = None) -> Any:
        self.reads += 1
        return await self.inner.entries(query, cursor)

    def describe(self, query: Any) -> Any:
        return self.inner.describe(query)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _calls(models: int) -> tuple[int, int, int, int]:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        client, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    now = time.time()
    sessions = 10
    # The staged scenarios in both: every kind of model, whatever the count.
    config = SimConfig(seed=9, sessions=sessions, models_per_session=models // sessions,
                       steps_per_model=3, nodes_per_pool=(("h100", 60), ("h200", 60)))  # fmt: skip
    sim = Simulation(config, rec)
    populate(sim, now)
    await rec.flush()
    # A frozen clock: the schema-version check (every 10 s) must not land inside the
    # counted query when a loaded machine makes the 200-model world slow to build.
    store = RedisStateStore(
        fakeredis.FakeAsyncRedis(server=server, decode_responses=True), clock=lambda: 0.0
    )
    backends = Backends(state=store)
    twins = await DemoTwins.build(sim, store, now)
    twins.install(backends)
    kube = CountingKube()
    kube.view = twins.kubernetes.view
    query = """{ sessions(first: 20) { nodes { summary(worst: 3) { models }
      models(first: 100) { nodes { summary(steps: 5) { verdict causes { kind } } } } } } }"""
    # Health thresholds far away: the answer must not change as the clock moves on.
    steady = Settings(thresholds=Thresholds(heartbeat_stale_s=1e9, stuck_after_s=1e9))
    logs = CountingLogs(backends.logs)
    others = {**_others(backends), "kubernetes": kube, "logs": logs}
    async with app_client(store, steady, **others) as http:
        await gql(http, "{ sessions(first: 1) { totalCount } }")
        trips, reads, logged = store.trips.count, kube.reads, logs.reads
        body = await gql(http, query)
    assert "errors" not in body, body["errors"]
    counted = sum(len(s["models"]["nodes"]) for s in body["data"]["sessions"]["nodes"])
    return counted, store.trips.count - trips, kube.reads - reads, logs.reads - logged


async def test_backend_calls_do_not_grow_with_the_models() -> None:
    n10, trips10, kube10, logs10 = await _calls(10)
    n200, trips200, kube200, logs200 = await _calls(200)
    assert n200 - n10 == 190
    assert (trips10, kube10, logs10) == (trips200, kube200, logs200)
    # The staged models whose pods are long gone read their past: once for all of them.
    assert logs10 == 1


async def test_a_huge_stored_error_keeps_the_summary_in_budget() -> None:
    """An op's error can be a 64 KiB traceback, its kind any text: the summary quotes
    a bounded part of each."""
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        client, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    now = time.time()
    rec.session_opened("s-1", "alice", {}, at=now - 100)
    rec.model_created("m-1", "s-1", "Qwen/Qwen3-8B", {}, {}, at=now - 100)
    for i in range(14):
        kind = "forward_backward" if i % 2 else f"kind-{i}-" + "x" * 5000
        rec.op_accepted("m-1", f"op-{i}", kind, 1, "s-1", at=now - 50 + i)
        rec.op_finished(
            "m-1", f"op-{i}", status="failed", error="Traceback\n" * 6000, at=now - 49 + i
        )
    await rec.flush()
    fields = full_selection("ModelSummary")
    async with app_client(RedisStateStore.in_memory(server)) as http:
        body = await gql(http, '{ model(id: "m-1") { summary { ' + fields + " } } }")
    summary = body["data"]["model"]["summary"]
    assert summary["failedOps"] == 14 and tokens(summary) <= 1500, tokens(summary)

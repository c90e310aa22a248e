"""The demo's metrics mirror: DCGM and vLLM series that agree with the simulated ops."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.prometheus import _gpu
from openrl_inspect.adapters.prometheus.memory import InMemoryGpuMetrics, InMemoryMetricsSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.cli.demo import DemoTwins
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.simulator import SimConfig, Simulation, metrics_twin, populate
from openrl_inspect.state.paging import ListRef, PageRequest
from openrl_inspect.state.records import PlacementRecord
from support.harness import app_client, gql

pytestmark = pytest.mark.anyio

LIVE_S = 60.0
TICK_S = 0.5


@dataclass
class Demo:
    sim: Simulation
    store: RedisStateStore
    backends: Backends
    demo: metrics_twin.DemoMetrics
    end: float
    active: set[str]  # models active when the live part began
    start: float  # end of the history, start of the live part (a minute ago)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope, so that one demo serves the read-only tests


async def make_demo() -> Demo:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        client, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    # The live part ends about now, so that the API's windows (which end at the
    # request's now) cover it.
    start = float(int(time.time() - LIVE_S))
    sim = Simulation(SimConfig(seed=3), rec)
    populate(sim, start)
    await rec.flush()
    store = RedisStateStore.in_memory(server)
    backends = Backends(state=store)
    twins = await DemoTwins.build(sim, store, start)
    twins.install(backends)
    d = twins.metrics
    active = {mid for mid, m in sim.models.items() if m.state == "active"}
    t = start
    for _ in range(int(LIVE_S / TICK_S)):
        t += TICK_S
        sim.advance(t)
        await rec.flush()
        d.tick(t)
    backends.gpu_metrics = d.twin  # a tick past the kept history rebuilds the twin
    return Demo(sim, store, backends, d, t, active, start)


@pytest.fixture(scope="module")
async def demo() -> Demo:
    return await make_demo()


def gr_samples(d: Demo, uuid: str) -> list[tuple[float, float]]:
    gpu = d.demo.gpus[uuid]
    return list(d.demo.series[(_gpu.GR_ENGINE_ACTIVE, metrics_twin.gpu_labels(gpu))])


async def test_the_demo_installs_the_metrics_twins(demo: Demo) -> None:
    b = demo.backends
    assert isinstance(b.gpu_metrics, InMemoryGpuMetrics) and b.gpu_metrics is demo.demo.twin
    assert isinstance(b.prometheus, InMemoryMetricsSource)
    assert b.raw_query.raw_query is True
    gpus = [g for n in demo.sim.cluster.nodes for g in n.gpus]
    # Every GPU exports every interval of the history and of the live part.
    intervals = int(metrics_twin.HISTORY_S // metrics_twin.SCRAPE_S) + int(
        LIVE_S // metrics_twin.SCRAPE_S
    )
    for g in gpus:
        times = [t for t, _ in gr_samples(demo, g.uuid)]
        assert len(times) == min(intervals, metrics_twin.KEPT)
        assert times == sorted(times) and times[-1] > demo.end - metrics_twin.SCRAPE_S
        assert all(b - a == metrics_twin.SCRAPE_S for a, b in itertools.pairwise(times))


async def _ops_of(store: RedisStateStore, mid: str) -> list[Any]:
    steps = await store.pages([PageRequest(ListRef("steps", (mid,)), 1000)])
    keys = [(mid, int(p.score)) for p in steps[0].items]
    pages = await store.pages(
        [PageRequest(ListRef("step_ops", (m, str(n))), 100, None, False) for m, n in keys]
    )
    ops = await store.ops([(mid, p.member) for page in pages for p in page.items])
    return [o for o in ops if o is not None]


async def _admitted(store: RedisStateStore, mid: str) -> float | None:
    page = (await store.pages([PageRequest(ListRef("placements", (mid,)), 10)]))[0]
    recs = await store.placements([(mid, p.member) for p in page.items])
    times = [
        r.admitted_at for r in recs if isinstance(r, PlacementRecord) and r.admitted_at is not None
    ]
    return min(times) if times else None


async def test_history_duty_follows_the_recorded_ops(demo: Demo) -> None:
    """Each 15 s sample of a trainer GPU lies between the busy fraction its ops imply
    times the lowest and highest op duty (plus the idle floor)."""
    sim = demo.sim
    staged = set(sim.scenario_ids.values())
    checked = busy_buckets = idle_buckets = 0
    for mid, model in sim.models.items():
        placed = await _admitted(demo.store, mid)
        if mid in staged or not model.workers or placed is None or placed > demo.start:
            continue  # staged, never placed, or placed in the live part (no history)
        wid, role, _pod, gpu_ids = model.workers[0]
        assert role == "trainer"
        ops = [o for o in await _ops_of(demo.store, mid) if o.worker_id == wid and o.finished_at]
        kinds = {o.kind for o in ops}
        lo_duty = min(metrics_twin.duty_of(k) for k in kinds) * (1 - metrics_twin.JITTER)
        hi_duty = max(metrics_twin.duty_of(k) for k in kinds) * (1 + metrics_twin.JITTER)
        for t, v in gr_samples(demo, gpu_ids[0]):
            if t > demo.start or t - metrics_twin.SCRAPE_S < placed:
                continue  # live part, or not held by this model yet
            busy = sum(max(0.0, min(o.finished_at, t) - max(o.started_at, t - 15)) for o in ops)
            f = busy / metrics_twin.SCRAPE_S
            assert f * lo_duty - 1e-3 <= v <= f * hi_duty + metrics_twin.IDLE_DUTY + 1e-3, (
                mid,
                t,
                f,
                v,
            )
            busy_buckets += f > 0.5
            idle_buckets += f == 0
            checked += 1
    assert checked and busy_buckets and idle_buckets


ACTIVITY = """query($id: ID!, $w: Float!) { model(id: $id) {
  gpuActivity(windowSeconds: $w) { duty gpus { uuid duty } }
  workers { nodes { role gpuDuty(windowSeconds: $w) { uuid value } } }
} }"""


async def _activity(client: Any, mid: str, w: float) -> dict[str, Any]:
    body = await gql(client, ACTIVITY, id=mid, w=w)
    assert "errors" not in body, body
    model: dict[str, Any] = body["data"]["model"]
    return model


async def test_scenarios_show_in_the_duty(demo: Demo) -> None:
    ids = demo.sim.scenario_ids
    b = demo.backends
    async with app_client(
        demo.store, gpu_metrics=b.gpu_metrics, prometheus=b.prometheus, raw_query=b.raw_query
    ) as client:
        idle = await _activity(client, ids["idle_placement"], 1800)
        stuck = await _activity(client, ids["stuck"], 600)
        lost = await _activity(client, ids["lost"], 300)
        active = [
            await _activity(client, mid, LIVE_S)
            for mid, m in demo.sim.models.items()
            if m.state == "active" and mid in demo.active and mid not in ids.values()
        ]
        node = demo.sim.cluster.nodes[0].name
        raw = await gql(
            client,
            "query($q: String!) { prometheusQuery(query: $q) { resultType series { labels points { value } } } }",
            q=f'{_gpu.GR_ENGINE_ACTIVE}{{Hostname="{node}"}}',
        )
    # The idle placement holds its GPUs but runs nothing: near 0.
    assert (
        idle["gpuActivity"]["gpus"] and idle["gpuActivity"]["duty"] <= metrics_twin.IDLE_DUTY + 1e-9
    )
    # The stuck op pins its trainer's GPU; the sampler idles.
    roles = {w["role"]: w["gpuDuty"][0]["value"] for w in stuck["workers"]["nodes"]}
    assert roles == {
        "trainer": metrics_twin.PINNED_DUTY,
        "sampler": pytest.approx(metrics_twin.IDLE_DUTY),
    }
    # The lost model's workers are dead: its GPUs are silent.
    assert lost["gpuActivity"]["duty"] == 0.0
    # Models running ops keep their GPUs busy.
    assert active
    for a in active:
        assert a["gpuActivity"]["duty"] > 0.2, a
    series = raw["data"]["prometheusQuery"]["series"]
    assert raw["data"]["prometheusQuery"]["resultType"] == "vector"
    assert sorted(s["labels"]["gpu"] for s in series) == [str(i) for i in range(8)]
    assert {s["labels"]["Hostname"] for s in series} == {node}


async def test_sampler_pods_report_vllm(demo: Demo) -> None:
    b = demo.backends
    sim = demo.sim
    active = [m for mid, m in sim.models.items() if m.state == "active" and mid in demo.active]
    active = [m for m in active if m.live]
    assert active
    query = """query($id: ID!) { model(id: $id) { sampling(windowSeconds: 120) {
        pod stats { requestsRunning kvCacheUsage generationTokensPerSecond ttftP95Seconds } } } }"""
    async with app_client(demo.store, gpu_metrics=b.gpu_metrics) as client:
        found = [(await gql(client, query, id=m.id))["data"]["model"]["sampling"] for m in active]
        lost = await gql(client, query, id=sim.scenario_ids["lost"])
    for m, sampling in zip(active, found, strict=True):
        assert [s["pod"] for s in sampling] == [m.workers[1][2]]
        stats = sampling[0]["stats"]
        assert stats is not None and stats["generationTokensPerSecond"] > 0
        assert 0 < stats["kvCacheUsage"] <= 1
    # A dead sampler reports nothing.
    assert lost["data"]["model"]["sampling"][0]["stats"] is None


async def test_live_ticks_append_once_per_scrape_and_history_stays_bounded() -> None:
    demo = await make_demo()  # its own: this test moves it on
    d = demo.demo
    before = d.emitted
    twin = d.twin
    t = demo.end
    for _ in range(int(metrics_twin.SCRAPE_S / TICK_S) * 2):
        t += TICK_S
        demo.sim.advance(t)
        d.tick(t)
    assert d.emitted - before in (2, 3)  # one per 15 s interval crossed
    assert d.twin is twin  # appended to, not rebuilt
    # Hours later: the buffers keep two hours, the twin is rebuilt from them.
    later = t + 3 * 3600
    d.tick(later)
    assert d.twin is not twin
    assert all(len(buf) <= metrics_twin.KEPT for buf in d.series.values())


async def test_kubernetes_gpus_and_nodes_carry_their_duty(demo: Demo) -> None:
    from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
    from openrl_inspect.simulator.kube_twin import mirror_kubernetes

    b = demo.backends
    b.kubernetes = MemoryKubernetesSource()
    mirror_kubernetes(demo.sim, b.kubernetes)
    stuck = demo.sim.models[demo.sim.scenario_ids["stuck"]]
    pinned = stuck.workers[0][3][0]
    node = next(n for n in demo.sim.cluster.nodes if pinned in {g.uuid for g in n.gpus})
    query = """query($uuid: String!, $node: String!) {
      gpu(uuid: $uuid) { uuid duty(windowSeconds: 300) { uuid value metric }
        series(step: 60) { metric stepSeconds points { value } } }
      node(name: $node) { duty(windowSeconds: 300) { node value gpus } }
      gpus(node: $node, first: 8) { nodes { uuid duty(windowSeconds: 300) { value } } }
    }"""
    async with app_client(demo.store, kubernetes=b.kubernetes, gpu_metrics=b.gpu_metrics) as client:
        body = await gql(client, query, uuid=pinned, node=node.name)
    assert "errors" not in body, body
    d = body["data"]
    assert d["gpu"]["duty"] == {"uuid": pinned, "value": 1.0, "metric": _gpu.GR_ENGINE_ACTIVE}
    points = d["gpu"]["series"]["points"]
    assert d["gpu"]["series"]["stepSeconds"] == 60.0 and len(points) >= 50
    assert {p["value"] for p in points[-20:]} == {1.0}  # pinned for the last twenty minutes
    per_gpu = {g["uuid"]: g["duty"]["value"] for g in d["gpus"]["nodes"]}
    assert set(per_gpu) == {g.uuid for g in node.gpus}
    assert d["node"]["duty"]["gpus"] == 8
    assert d["node"]["duty"]["value"] == pytest.approx(sum(per_gpu.values()) / 8)

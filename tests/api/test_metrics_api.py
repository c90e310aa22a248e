"""GPU metric fields through the whole app, against a real Prometheus holding DCGM series
of known values and a Redis (fakeredis) holding placements and workers on those GPUs.

Samples are every 15 s at T0 + 7.5 + 15k (k = 0..79, twenty minutes), half a scrape away
from every bound the tests use. The data lies 2 to 4 hours before "now", so windows
of 5 hours (``WINDOW``) end now and still cover all of it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import fakeredis
import httpx
import pytest
from openrl_inspect.adapters.prometheus import (
    PrometheusSettings,
    PromGpuMetrics,
    RawQuerySettings,
    VllmStats,
    _gpu,
)
from openrl_inspect.adapters.prometheus._http import HttpMetricsSource
from openrl_inspect.adapters.prometheus.memory import InMemoryGpuMetrics
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from support.harness import app_client, gql
from support.ports import free_port
from support.prometheus_server import (
    OpenMetrics,
    PrometheusServer,
    StubPrometheus,
    StubReply,
    require_prometheus,
)

pytestmark = pytest.mark.anyio

T0 = float(int(time.time() // 3600) * 3600 - 3 * 3600)
SCRAPE = 15.0
TIMES = [T0 + SCRAPE / 2 + SCRAPE * k for k in range(80)]
HALF = T0 + 600.0
WINDOW = 5 * 3600.0

# Model A: placement 1 holds GA0 and GA1 over the whole data set; placement 2 holds GA2
# from HALF on and is still held. Model B holds GB0 for ten minutes.
GA0 = ("GPU-a0", "node-a", 0, 0.8)  # DCGM_FI_PROF_GR_ENGINE_ACTIVE
GA1 = ("GPU-a1", "node-a", 1, 0.5)  # only DCGM_FI_DEV_GPU_UTIL (50)
GA2 = ("GPU-a2", "node-b", 0, (0.9, 0.3))  # GR 0.9 before HALF, 0.3 after
GB0 = ("GPU-b0", "node-b", 1, 0.4)
SYN = 64  # GPU-syn-00..63, GR (i % 10) / 10, four per model of session "many"


def syn_uuid(i: int) -> str:
    return f"GPU-syn-{i:02d}"


def syn_duty(i: int) -> float:
    return (i % 10) / 10


def labels(uuid: str, node: str, index: int) -> dict[str, str]:
    return {"UUID": uuid, "Hostname": node, "gpu": str(index), "modelName": "NVIDIA H100"}


def dataset() -> OpenMetrics:
    om = OpenMetrics()
    gr, util = _gpu.GR_ENGINE_ACTIVE, _gpu.GPU_UTIL
    om.add(gr, labels(*GA0[:3]), [(t, GA0[3]) for t in TIMES])
    om.add(util, labels(*GA0[:3]), [(t, 100.0) for t in TIMES])  # a decoy: GR wins
    om.add(util, labels(*GA1[:3]), [(t, 100 * GA1[3]) for t in TIMES])
    first, second = GA2[3]
    om.add(gr, labels(*GA2[:3]), [(t, first if t < HALF else second) for t in TIMES])
    om.add(gr, labels(*GB0[:3]), [(t, GB0[3]) for t in TIMES])
    for i in range(SYN):
        om.add(gr, labels(syn_uuid(i), f"syn-{i // 8}", i % 8), [(t, syn_duty(i)) for t in TIMES])
    return om


def approx(x: float) -> Any:
    return pytest.approx(x, rel=1e-9, abs=1e-9)


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).isoformat()


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    require_prometheus()
    server = PrometheusServer(dataset()).start()
    yield server
    server.cleanup()


@dataclass
class World:
    store: RedisStateStore
    models: list[str]  # of session "many", each with four synthetic GPUs


async def build_world(many: int = 16) -> World:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        client, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    now = time.time()
    rec.session_opened("sess-1", "alice", {"sdk": "test"}, at=T0 - 60)
    rec.model_created("model-a", "sess-1", "Qwen/Qwen3-8B", {"rank": 8}, {}, at=T0 - 30)
    rec.model_state("model-a", "active", at=T0)
    rec.placement_admitted(
        "model-a", "plc-a1", "wl-a", "openrl", ["trainer-a-0", "sampler-a-0"], "node-a",
        [GA0[0], GA1[0]], at=T0,
    )  # fmt: skip
    rec.placement_released("model-a", "plc-a1", at=T0 + 1200)
    rec.placement_admitted(
        "model-a", "plc-a2", "wl-a2", "openrl", ["trainer-a-1"], "node-b", [GA2[0]], at=HALF
    )
    rec.heartbeat("w-a-train", "trainer", "trainer-a-0", "node-a", "model-a", [GA0[0]], {}, at=now)
    rec.heartbeat("w-a-samp", "sampler", "sampler-a-0", "node-a", "model-a", [GA1[0]], {}, at=now)
    rec.model_created("model-b", "sess-1", "Qwen/Qwen3-8B", {"rank": 8}, {}, at=T0)
    rec.placement_admitted(
        "model-b", "plc-b", "wl-b", "openrl", ["trainer-b-0"], "node-b", [GB0[0]], at=T0 + 300
    )
    rec.placement_released("model-b", "plc-b", at=T0 + 900)
    rec.session_opened("sess-many", "bob", {"sdk": "test"}, at=T0 - 60)
    models = []
    for m in range(many):
        mid = f"model-syn-{m:02d}"
        models.append(mid)
        gpus = [syn_uuid(4 * m + j) for j in range(4)]
        rec.model_created(mid, "sess-many", "Qwen/Qwen3-8B", {"rank": 8}, {}, at=T0 - 10 + m)
        rec.placement_admitted(
            mid, f"plc-{m}", f"wl-{m}", "openrl", [], f"syn-{m // 2}", gpus, at=T0
        )
        rec.placement_released(mid, f"plc-{m}", at=T0 + 1200 - 10 * m)  # all different
        rec.heartbeat(f"w-{m}-t", "trainer", f"t-{m}", f"syn-{m // 2}", mid, gpus[:2], {}, at=now)
        rec.heartbeat(f"w-{m}-s", "sampler", f"s-{m}", f"syn-{m // 2}", mid, gpus[2:], {}, at=now)
    await rec.flush()
    return World(RedisStateStore.in_memory(server), models)


@pytest.fixture
async def world() -> World:
    return await build_world()


@dataclass
class Counted:
    metrics: PromGpuMetrics
    source: HttpMetricsSource
    paths: list[str]


@asynccontextmanager
async def counted(url: str, **settings: Any) -> AsyncIterator[Counted]:
    """The real Prometheus path, every HTTP request recorded."""
    paths: list[str] = []

    async def hook(request: httpx.Request) -> None:
        paths.append(request.url.path)

    async with httpx.AsyncClient(event_hooks={"request": [hook]}) as client:
        s = PrometheusSettings(url=url, **settings)
        source = HttpMetricsSource(s, client=client)
        yield Counted(PromGpuMetrics.from_settings(s, source), source, paths)


def errors_by_path(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {".".join(map(str, e["path"])): e.get("extensions", {}) for e in body.get("errors", [])}


# ---------------------------------------------------------------- done when

ACTIVITY = """
query($id: ID!, $w: Float!) {
  model(id: $id) {
    id state
    gpuActivity(windowSeconds: $w) {
      duty heldGpuSeconds coveredGpuSeconds gpuCount metrics stepSeconds truncated
      gpus { uuid node duty metric heldSeconds coveredSeconds spans { placementId start end } }
    }
    placements { nodes { id gpuIds } }
  }
}
"""


async def test_model_gpu_activity_matches_the_known_values(
    prometheus: PrometheusServer, world: World
) -> None:
    async with (
        counted(prometheus.url) as c,
        app_client(world.store, gpu_metrics=c.metrics, prometheus=c.source) as client,
    ):
        before = time.time()
        body = await gql(client, ACTIVITY, id="model-a", w=WINDOW)
        after = time.time()
    assert "errors" not in body, body
    act = body["data"]["model"]["gpuActivity"]
    gpus = {g["uuid"]: g for g in act["gpus"]}
    assert list(gpus) == [GA0[0], GA1[0], GA2[0]]
    assert gpus[GA0[0]]["duty"] == approx(GA0[3])
    assert gpus[GA0[0]]["metric"] == _gpu.GR_ENGINE_ACTIVE
    assert gpus[GA1[0]]["duty"] == approx(GA1[3])
    assert gpus[GA1[0]]["metric"] == _gpu.GPU_UTIL
    # GA2 was held from HALF on: only its second value counts.
    assert gpus[GA2[0]]["duty"] == approx(GA2[3][1])
    assert [g["node"] for g in gpus.values()] == ["node-a", "node-a", "node-b"]
    assert gpus[GA0[0]]["heldSeconds"] == gpus[GA0[0]]["coveredSeconds"] == 1200.0
    # Still held: held until now, but only the twenty minutes of data are covered.
    assert gpus[GA2[0]]["coveredSeconds"] == 600.0
    assert (before - HALF) <= gpus[GA2[0]]["heldSeconds"] <= (after - HALF)
    assert gpus[GA2[0]]["spans"][0]["placementId"] == "plc-a2"
    # All together, weighted by covered time held.
    expected = (GA0[3] * 1200 + GA1[3] * 1200 + GA2[3][1] * 600) / 3000
    assert act["duty"] == approx(expected)
    assert act["coveredGpuSeconds"] == 3000.0 and act["gpuCount"] == 3
    assert act["metrics"] == [_gpu.GR_ENGINE_ACTIVE, _gpu.GPU_UTIL]
    assert act["stepSeconds"] == 30.0 and act["truncated"] is False
    # One activity call: one range query per duty metric.
    assert c.paths == ["/api/v1/query_range"] * 2


async def test_duty_fields_on_workers_placements_and_the_root(
    prometheus: PrometheusServer, world: World
) -> None:
    query = """
    query($w: Float!, $uuids: [String!]!) {
      a: model(id: "model-a") {
        workers { nodes { id role gpuDuty(windowSeconds: $w) { uuid value metric joinedBy windowSeconds } } }
        placements { nodes { id gpuDuty(windowSeconds: 600) { uuid value windowEnd } } }
      }
      b: model(id: "model-b") { placements { nodes { gpuDuty(windowSeconds: 600) { uuid value } } } }
      gpuDuty(uuids: $uuids, windowSeconds: $w) { uuid value metric }
      nodeDuty(nodes: ["node-a", "node-b", "node-z"], windowSeconds: $w) { node value gpus metric }
    }"""
    uuids = [GA2[0], "GPU-unknown", GA0[0]]
    async with (
        counted(prometheus.url) as c,
        app_client(world.store, gpu_metrics=c.metrics, prometheus=c.source) as client,
    ):
        body = await gql(client, query, w=WINDOW, uuids=uuids)
    assert "errors" not in body, body
    d = body["data"]
    workers = {w["role"]: w["gpuDuty"] for w in d["a"]["workers"]["nodes"]}
    assert workers["trainer"] == [
        {
            "uuid": GA0[0],
            "value": approx(GA0[3]),
            "metric": _gpu.GR_ENGINE_ACTIVE,
            "joinedBy": "uuid",
            "windowSeconds": WINDOW,
        }
    ]
    assert workers["sampler"][0]["value"] == approx(GA1[3])
    assert workers["sampler"][0]["metric"] == _gpu.GPU_UTIL
    # A released placement: the window ends at its release.
    placements = {p["id"]: p["gpuDuty"] for p in d["a"]["placements"]["nodes"]}
    assert [g["value"] for g in placements["plc-a1"]] == [approx(GA0[3]), approx(GA1[3])]
    assert placements["plc-a1"][0]["windowEnd"] == iso(T0 + 1200)
    assert placements["plc-a2"][0]["value"] is None  # still held: no samples in the last 10 min
    assert d["b"]["placements"]["nodes"][0]["gpuDuty"] == [{"uuid": GB0[0], "value": approx(0.4)}]
    # The root field keeps the order asked for, null where nothing was found.
    assert [(g["uuid"], g["value"]) for g in d["gpuDuty"]] == [
        (GA2[0], approx(sum(GA2[3]) / 2)),
        ("GPU-unknown", None),
        (GA0[0], approx(GA0[3])),
    ]
    # node-a: only GA0 exports the profiling metric, so the node's duty comes from it.
    assert d["nodeDuty"] == [
        {"node": "node-a", "value": approx(GA0[3]), "gpus": 1, "metric": _gpu.GR_ENGINE_ACTIVE},
        {
            "node": "node-b",
            "value": approx((sum(GA2[3]) / 2 + GB0[3]) / 2),
            "gpus": 2,
            "metric": _gpu.GR_ENGINE_ACTIVE,
        },
        {"node": "node-z", "value": None, "gpus": 0, "metric": None},
    ]


async def test_gpu_series_for_charts(prometheus: PrometheusServer, world: World) -> None:
    query = """
    query($start: DateTime!, $end: DateTime!) {
      duty: gpuSeries(uuid: "GPU-a2", start: $start, end: $end, step: 60) {
        uuid requested metric stepSeconds truncated points { at value }
      }
      util: gpuSeries(uuid: "GPU-a1", metric: GPU_UTIL, start: $start, end: $end, step: 60) {
        metric points { value }
      }
      none: gpuSeries(uuid: "GPU-none", start: $start, end: $end) { metric points { value } }
    }"""
    async with (
        counted(prometheus.url) as c,
        app_client(world.store, gpu_metrics=c.metrics, prometheus=c.source) as client,
    ):
        body = await gql(client, query, start=iso(T0), end=iso(T0 + 1200))
    assert "errors" not in body, body
    duty = body["data"]["duty"]
    assert (duty["requested"], duty["metric"], duty["stepSeconds"]) == (
        "DUTY",
        _gpu.GR_ENGINE_ACTIVE,
        60.0,
    )
    first, second = GA2[3]
    assert [p["at"] for p in duty["points"]] == [iso(T0 + 60 * k) for k in range(1, 21)]
    assert [p["value"] for p in duty["points"]] == [
        approx(first if T0 + 60 * k <= HALF else second) for k in range(1, 21)
    ]
    util = body["data"]["util"]
    assert util["metric"] == _gpu.GPU_UTIL and {p["value"] for p in util["points"]} == {50.0}
    assert body["data"]["none"] == {"metric": None, "points": []}


# ---------------------------------------------------------------- one query per metric

MANY = """
query($w: Float!) {
  session(id: "sess-many") {
    models(first: 50) { nodes {
      id
      gpuActivity(windowSeconds: $w) { duty gpus { uuid duty } }
      workers { nodes { gpuDuty(windowSeconds: $w) { uuid value } } }
    } }
  }
}"""


PLACEMENTS = """
{ session(id: "sess-many") { models(first: 50) { nodes {
    id placements { nodes { gpuDuty(windowSeconds: 1200) { uuid value metric } } }
} } } }"""


async def _many_models(
    url: str, models: int, query: str = MANY
) -> tuple[list[str], dict[str, Any]]:
    w = await build_world(models)
    async with (
        counted(url) as c,
        app_client(w.store, gpu_metrics=c.metrics, prometheus=c.source) as client,
    ):
        body = await gql(client, query, w=WINDOW)
    assert "errors" not in body, body
    return c.paths, body


async def test_one_prometheus_query_per_metric_whatever_the_number_of_models(
    prometheus: PrometheusServer,
) -> None:
    few_paths, _ = await _many_models(prometheus.url, 1)
    paths, body = await _many_models(prometheus.url, 16)
    nodes = body["data"]["session"]["models"]["nodes"]
    assert len(nodes) == 16
    for node in nodes:
        m = int(node["id"].rsplit("-", 1)[1])
        expected = [syn_duty(4 * m + j) for j in range(4)]
        act = node["gpuActivity"]
        assert [g["uuid"] for g in act["gpus"]] == [syn_uuid(4 * m + j) for j in range(4)]
        assert [g["duty"] for g in act["gpus"]] == [approx(x) for x in expected]
        assert act["duty"] == approx(sum(expected) / 4)
        duties = sorted(
            (g["uuid"], g["value"]) for w in node["workers"]["nodes"] for g in w["gpuDuty"]
        )
        assert duties == [(syn_uuid(4 * m + j), approx(expected[j])) for j in range(4)]
    # Activity: one range query per duty metric; duty: one instant query per metric.
    expected_paths = [
        "/api/v1/query",
        "/api/v1/query",
        "/api/v1/query_range",
        "/api/v1/query_range",
    ]
    assert sorted(paths) == sorted(few_paths) == expected_paths
    # Placements released at different times still share one activity call.
    few_paths, _ = await _many_models(prometheus.url, 1, PLACEMENTS)
    paths, body = await _many_models(prometheus.url, 16, PLACEMENTS)
    for node in body["data"]["session"]["models"]["nodes"]:
        m = int(node["id"].rsplit("-", 1)[1])
        (placement,) = node["placements"]["nodes"]
        assert placement["gpuDuty"] == [
            {
                "uuid": syn_uuid(4 * m + j),
                "value": approx(syn_duty(4 * m + j)),
                "metric": _gpu.GR_ENGINE_ACTIVE,
            }
            for j in range(4)
        ]
    assert paths == few_paths == ["/api/v1/query_range"] * 2


async def test_session_gpu_activity_spans_its_models(
    prometheus: PrometheusServer, world: World
) -> None:
    query = """{ session(id: "sess-1") { gpuActivity(windowSeconds: 18000) {
        duty gpuCount gpus { uuid duty spans { modelId placementId } } } } }"""
    async with (
        counted(prometheus.url) as c,
        app_client(world.store, gpu_metrics=c.metrics, prometheus=c.source) as client,
    ):
        body = await gql(client, query)
    assert "errors" not in body, body
    act = body["data"]["session"]["gpuActivity"]
    by_uuid = {g["uuid"]: g for g in act["gpus"]}
    assert set(by_uuid) == {GA0[0], GA1[0], GA2[0], GB0[0]}
    assert by_uuid[GB0[0]]["duty"] == approx(GB0[3])
    assert by_uuid[GB0[0]]["spans"] == [{"modelId": "model-b", "placementId": "plc-b"}]
    expected = (GA0[3] * 1200 + GA1[3] * 1200 + GA2[3][1] * 600 + GB0[3] * 600) / 3600
    assert act["duty"] == approx(expected)


# ---------------------------------------------------------------- failures cost only the metric fields

PARTIAL = """
{
  model(id: "model-a") {
    id state
    placements { nodes { id gpuIds } }
    gpuActivity(windowSeconds: 600) { duty }
    workers { nodes { id gpuDuty { value } } }
  }
  gpuDuty(uuids: ["GPU-a0"]) { value }
  sessions { totalCount }
}"""


def _assert_only_metrics_failed(body: dict[str, Any], code: str) -> None:
    d = body["data"]
    assert d["model"]["id"] == "model-a" and d["model"]["state"] == "ACTIVE"
    assert {p["id"] for p in d["model"]["placements"]["nodes"]} == {"plc-a1", "plc-a2"}
    assert d["sessions"]["totalCount"] == 2
    assert d["model"]["gpuActivity"] is None and d["gpuDuty"] is None
    assert all(w["gpuDuty"] is None for w in d["model"]["workers"]["nodes"])
    errors = errors_by_path(body)
    failed = {
        "model.gpuActivity",
        "gpuDuty",
        "model.workers.nodes.0.gpuDuty",
        "model.workers.nodes.1.gpuDuty",
    }
    if code == "BACKEND_NOT_CONFIGURED":
        # Said once per answer, with the fields it nulled counted.
        (path,) = errors
        assert path in failed
        assert errors[path] == {"code": code, "backend": "prometheus", "fields": len(failed)}
        return
    assert set(errors) == failed
    for ext in errors.values():
        assert ext == {"code": code, "backend": "prometheus"}


async def test_prometheus_down_costs_only_the_metric_fields(world: World) -> None:
    async with (
        counted(f"http://127.0.0.1:{free_port()}") as c,
        app_client(world.store, gpu_metrics=c.metrics, prometheus=c.source) as client,
    ):
        body = await gql(client, PARTIAL)
    _assert_only_metrics_failed(body, "BACKEND_UNAVAILABLE")
    assert c.paths, "the fields did try Prometheus"


async def test_slow_prometheus_costs_only_the_metric_fields(world: World) -> None:
    stub = StubPrometheus(StubReply(delay_s=30)).start()
    try:
        async with (
            counted(stub.url, query_timeout_s=0.2) as c,
            app_client(world.store, gpu_metrics=c.metrics, prometheus=c.source) as client,
        ):
            body = await gql(client, PARTIAL)
    finally:
        stub.stop()
    _assert_only_metrics_failed(body, "BACKEND_TIMEOUT")


async def test_without_prometheus_the_fields_say_not_configured(world: World) -> None:
    async with app_client(world.store) as client:
        body = await gql(client, PARTIAL)
        raw = await gql(client, '{ prometheusQuery(query: "up") { resultType } }')
    _assert_only_metrics_failed(body, "BACKEND_NOT_CONFIGURED")
    # The raw field is off before anything else.
    assert raw["errors"][0]["extensions"]["code"] == "RAW_QUERY_DISABLED"


async def test_bad_arguments_fail_only_their_own_field(
    prometheus: PrometheusServer, world: World
) -> None:
    query = """{
      model(id: "model-a") {
        bad: gpuActivity(windowSeconds: 0) { duty }
        good: gpuActivity(windowSeconds: 18000) { duty }
      }
      tooLong: gpuDuty(uuids: ["GPU-a0"], windowSeconds: 5000000) { value }
      badSeries: gpuSeries(uuid: "GPU-a0", step: -1) { metric }
    }"""
    async with (
        counted(prometheus.url) as c,
        app_client(world.store, gpu_metrics=c.metrics, prometheus=c.source) as client,
    ):
        body = await gql(client, query)
    errors = errors_by_path(body)
    assert set(errors) == {"model.bad", "tooLong", "badSeries"}
    assert {e["code"] for e in errors.values()} == {"BAD_INPUT"}
    assert body["data"]["model"]["good"]["duty"] is not None


# ---------------------------------------------------------------- the raw query

RAW_INSTANT = """query($q: String!, $t: DateTime) {
  prometheusQuery(query: $q, time: $t) {
    resultType truncated seriesTruncated time series { labels points { at value } }
  }
}"""
RAW_RANGE = """query($q: String!, $s: DateTime, $e: DateTime, $step: Float) {
  prometheusQuery(query: $q, start: $s, end: $e, step: $step) {
    resultType truncated samplesTruncated stepSeconds series { labels points { value } }
  }
}"""


async def test_raw_query_is_off_by_default(prometheus: PrometheusServer, world: World) -> None:
    async with (
        counted(prometheus.url) as c,
        app_client(world.store, gpu_metrics=c.metrics, prometheus=c.source) as client,
    ):
        body = await gql(client, RAW_INSTANT, q="up")
    assert body["data"]["prometheusQuery"] is None
    assert body["errors"][0]["extensions"] == {"code": "RAW_QUERY_DISABLED"}
    assert c.paths == []  # refused before any call


async def test_raw_query_when_enabled_is_capped(prometheus: PrometheusServer, world: World) -> None:
    raw = RawQuerySettings(
        raw_query=True,
        raw_max_series=3,
        raw_max_samples=50,
        raw_max_range_s=6 * 3600,
        raw_min_step_s=30,
        raw_max_points=100,
    )
    gr = _gpu.GR_ENGINE_ACTIVE
    async with (
        counted(prometheus.url) as c,
        app_client(
            world.store, gpu_metrics=c.metrics, prometheus=c.source, raw_query=raw
        ) as client,
    ):
        # One GPU, instant: the value known at that time.
        one = await gql(client, RAW_INSTANT, q=f'{gr}{{UUID="GPU-a0"}}', t=iso(T0 + 600))
        # Every GR series (67 of them), cut to 3.
        every = await gql(client, RAW_INSTANT, q=gr, t=iso(T0 + 600))
        # A range of twenty minutes by 60 s for two GPUs: 2 x 20 points, under the caps.
        rng = await gql(
            client,
            RAW_RANGE,
            q=f'{gr}{{UUID=~"GPU-a0|GPU-b0"}}',
            s=iso(T0 + 60),
            e=iso(T0 + 1200),
            step=60.0,
        )
        # Three GPUs by 30 s: 3 x 40 samples, cut at 50.
        cut = await gql(
            client, RAW_RANGE, q=f'{gr}{{Hostname=~"node-.*"}}', s=iso(T0 + 30), e=iso(T0 + 1200)
        )
        refused = {
            "range too long": await gql(
                client, RAW_RANGE, q=gr, s=iso(T0 - 7 * 3600), e=iso(T0), step=600.0
            ),
            "step too small": await gql(
                client, RAW_RANGE, q=gr, s=iso(T0), e=iso(T0 + 600), step=5.0
            ),
            "too many points": await gql(
                client, RAW_RANGE, q=gr, s=iso(T0), e=iso(T0 + 3600 * 2), step=30.0
            ),
            "range selector too long": await gql(
                client, RAW_INSTANT, q=f"avg_over_time({gr}[7h])", t=iso(T0 + 600)
            ),
            "unreadable range": await gql(client, RAW_INSTANT, q=f"{gr}[abc]", t=None),
            "too old": await gql(client, RAW_INSTANT, q=gr, t=iso(T0 - 40 * 86400)),
            "in the future": await gql(client, RAW_INSTANT, q=gr, t=iso(time.time() + 3600)),
        }
    assert "errors" not in one, one
    res = one["data"]["prometheusQuery"]
    assert res["resultType"] == "vector" and res["truncated"] is False
    assert [s["labels"]["UUID"] for s in res["series"]] == ["GPU-a0"]
    assert res["series"][0]["points"][0]["value"] == GA0[3]
    every_res = every["data"]["prometheusQuery"]
    assert len(every_res["series"]) == 3 and every_res["seriesTruncated"] is True
    r = rng["data"]["prometheusQuery"]
    assert r["resultType"] == "matrix" and r["stepSeconds"] == 60.0 and not r["truncated"]
    assert {s["labels"]["UUID"]: {p["value"] for p in s["points"]} for s in r["series"]} == {
        "GPU-a0": {GA0[3]},
        "GPU-b0": {GB0[3]},
    }
    assert all(len(s["points"]) == 20 for s in r["series"])
    cut_res = cut["data"]["prometheusQuery"]
    assert cut_res["samplesTruncated"] is True and cut_res["stepSeconds"] == 30.0
    assert sum(len(s["points"]) for s in cut_res["series"]) == 50
    for name, body in refused.items():
        assert body["data"]["prometheusQuery"] is None, name
        assert body["errors"][0]["extensions"] == {"code": "BAD_INPUT"}, name
    # Only the four accepted queries reached Prometheus.
    assert len(c.paths) == 4


# ---------------------------------------------------------------- vLLM (twin)


async def test_model_sampling_and_worker_vllm(world: World) -> None:
    now = time.time()
    twin = InMemoryGpuMetrics()
    stats = VllmStats(3.0, 1.0, 0.25, 1500.0, 0.08, 0.3)
    twin.set_vllm("sampler-a-0", now - 10, stats)
    twin.set_vllm("trainer-a-0", now - 900, stats)  # too old for the window
    query = """{
      model(id: "model-a") {
        sampling { pod workerId windowSeconds stats { requestsRunning requestsWaiting kvCacheUsage generationTokensPerSecond ttftP50Seconds ttftP95Seconds } }
        workers { nodes { role vllm { requestsRunning } } }
      }
      b: model(id: "model-b") { sampling { pod } }
    }"""
    async with app_client(world.store, gpu_metrics=twin) as client:
        body = await gql(client, query)
    assert "errors" not in body, body
    m = body["data"]["model"]
    assert m["sampling"] == [
        {
            "pod": "sampler-a-0",
            "workerId": "w-a-samp",
            "windowSeconds": 300.0,
            "stats": {
                "requestsRunning": 3.0,
                "requestsWaiting": 1.0,
                "kvCacheUsage": 0.25,
                "generationTokensPerSecond": 1500.0,
                "ttftP50Seconds": 0.08,
                "ttftP95Seconds": 0.3,
            },
        }
    ]
    assert {w["role"]: w["vllm"] for w in m["workers"]["nodes"]} == {
        "trainer": None,
        "sampler": {"requestsRunning": 3.0},
    }
    # Model B has no sampler worker and none of its placement's pods serves vLLM.
    assert body["data"]["b"]["sampling"] == []


# ---------------------------------------------------------------- raw query: pure parts


def test_raw_settings_come_from_the_prometheus_prefix() -> None:
    from openrl_inspect.adapters.prometheus._raw import load_raw_settings

    assert load_raw_settings({}).raw_query is False
    env = {
        "OPENRL_INSPECT_PROMETHEUS_RAW_QUERY": "true",
        "OPENRL_INSPECT_PROMETHEUS_RAW_MAX_SERIES": "7",
        "OPENRL_INSPECT_PROMETHEUS_URL": "http://prometheus:9090",  # not ours: ignored
    }
    s = load_raw_settings(env)
    assert (s.raw_query, s.raw_max_series) == (True, 7)
    with pytest.raises(SettingsError, match="raw_min_step_s: expected a positive number"):
        RawQuerySettings(raw_min_step_s=0)


def test_range_selectors_are_measured_outside_strings() -> None:
    from openrl_inspect.adapters.prometheus._raw import longest_range, parse_duration
    from openrl_inspect.core.errors import InvalidInput

    assert parse_duration("1h30m") == 5400 and parse_duration("90") == 90
    assert parse_duration("250ms") == 0.25 and parse_duration("2w") == 14 * 86400
    assert longest_range('rate(x{a="[9y]"}[5m]) + max_over_time(y[1h:1m])') == 3600
    assert longest_range("sum(up)") == 0
    for bad in ("x[5m", "x]", "x[[5m]]", "x[5 minutes]", 'x{a="unterminated}'):
        with pytest.raises(InvalidInput):
            longest_range(bad)

"""The GPU layer against a real Prometheus holding DCGM and vLLM series of known values,
and its in-memory twin against the same data.

Samples are every 15 s at T0 + 7.5 + 15k (k = 0..79, twenty minutes), half a scrape
away from every window bound the tests use, so range selectors see whole samples
whatever side of a bound Prometheus includes.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass

import httpx
import pytest
from openrl_inspect.adapters.prometheus import (
    GpuKey,
    HeldInterval,
    PrometheusSettings,
    PromGpuMetrics,
    Sample,
    _gpu,
    _gpu_joins,
    make_gpu_metrics,
)
from openrl_inspect.adapters.prometheus._http import HttpMetricsSource
from openrl_inspect.adapters.prometheus.memory import InMemoryGpuMetrics
from openrl_inspect.core.errors import BackendTimeout, BackendUnavailable, InvalidInput
from support.ports import free_port
from support.prometheus_server import OpenMetrics, PrometheusServer, require_prometheus

pytestmark = pytest.mark.anyio

T0 = float(int(time.time() // 3600) * 3600 - 3 * 3600)
SCRAPE = 15.0
N = 80  # samples per series: twenty minutes
TIMES = [T0 + SCRAPE / 2 + SCRAPE * k for k in range(N)]
HALF = T0 + 600.0  # where the piecewise series switch value


def piecewise(first: float, second: float, switch: float = HALF) -> Callable[[float], float]:
    return lambda t: first if t < switch else second


# ---------------------------------------------------------------- the data set

G0_FIRST, G0_SECOND = 0.8, 0.2  # GR_ENGINE_ACTIVE; its GPU_UTIL is a decoy at 100
G1_UTIL = 50.0  # no GR_ENGINE_ACTIVE: duty comes from GPU_UTIL / 100
G2_GR = 0.6  # no UUID label: joined on Hostname + gpu
G3_GR = 0.4  # the other GPU of node-b
G4_POD_A, G4_POD_B, G4_SWITCH = 0.4, 1.0, T0 + 300.0  # series churn: the pod label changes
G5_GR = 0.3  # a UUID full of regex and string metacharacters
G6_UTIL = 30.0  # node-d exports GPU_UTIL only
WEIRD_UUID = 'GPU-x|.*"\\(y'
SYN = 64  # GPUs GPU-syn-000.. on nodes syn-0.. (8 per node), GR = (i % 10) / 10

K0 = GpuKey("GPU-aaaa-0", "node-a", 0)
K1 = GpuKey("GPU-bbbb-1", "node-a", 1)
K2 = GpuKey("GPU-cccc-2", "node-b", 0)  # its DCGM series carry no UUID
K2_NO_NODE = GpuKey("GPU-cccc-2")  # cannot fall back: no node/index
K3 = GpuKey("GPU-dddd-3", "node-b", 1)
K4 = GpuKey("GPU-eeee-4", "node-c", 0)
K5 = GpuKey(WEIRD_UUID, "node-c", 1)
K6 = GpuKey("GPU-ffff-6", "node-d", 0)
MISSING = GpuKey("GPU-none", "node-z", 3)
SYN_KEYS = [GpuKey(f"GPU-syn-{i:03d}", f"syn-{i // 8}", i % 8) for i in range(SYN)]


def syn_duty(i: int) -> float:
    return (i % 10) / 10


def fb_used(k: int) -> float:
    return 40000.0 + k


# vLLM
TOKENS_PER_S = 100.0
TTFT_OBS_PER_S = 10.0
TTFT_BUCKETS = (0.1, 0.25, 0.5, 1.0, math.inf)
TTFT_ALL_IN = (0.1, 0.25)  # every observation falls in this bucket
KV_NEW = {"sampler-0": 0.25, "sampler-1": 0.5}
KV_OLD = {"sampler-1": 0.9, "sampler-2": 0.75}
RUNNING = {"sampler-0": (1.0, 2.0), "sampler-1": (5.0,)}  # per engine
WAITING = {"sampler-0": 7.0, "sampler-1": 0.0}


def dcgm_labels(key: GpuKey, with_uuid: bool = True, **extra: str) -> dict[str, str]:
    labels = {"Hostname": key.node or "", "gpu": str(key.index), "modelName": "NVIDIA H100"}
    if with_uuid:
        labels["UUID"] = key.uuid
    return {**labels, **extra}


def const(v: float) -> list[tuple[float, float]]:
    return [(t, v) for t in TIMES]


def dataset() -> OpenMetrics:
    om = OpenMetrics()
    gr, util = _gpu.GR_ENGINE_ACTIVE, _gpu.GPU_UTIL
    g0 = piecewise(G0_FIRST, G0_SECOND)
    om.add(gr, dcgm_labels(K0, pod="trainer-0"), [(t, g0(t)) for t in TIMES])
    om.add(util, dcgm_labels(K0), const(100.0))
    om.add(_gpu.FB_USED, dcgm_labels(K0), [(t, fb_used(k)) for k, t in enumerate(TIMES)])
    om.add(_gpu.POWER_USAGE, dcgm_labels(K0), const(300.0))
    om.add(_gpu.XID_ERRORS, dcgm_labels(K0), const(0.0))
    om.add(util, dcgm_labels(K1), const(G1_UTIL))
    xid1 = [(t, 79.0 if 60 <= k < 64 else 0.0) for k, t in enumerate(TIMES)]
    om.add(_gpu.XID_ERRORS, dcgm_labels(K1), xid1)
    om.add(gr, dcgm_labels(K2, with_uuid=False), const(G2_GR))
    om.add(_gpu.FB_USED, dcgm_labels(K2, with_uuid=False), const(1234.0))
    xid2 = [(t, 13.0 if k >= 70 else 0.0) for k, t in enumerate(TIMES)]
    om.add(_gpu.XID_ERRORS, dcgm_labels(K2, with_uuid=False), xid2)
    om.add(gr, dcgm_labels(K3), const(G3_GR))
    before = [t for t in TIMES if t < G4_SWITCH]
    after = [t for t in TIMES if t >= G4_SWITCH]
    om.add(gr, dcgm_labels(K4, pod="train-a"), [(t, G4_POD_A) for t in before])
    om.add(gr, dcgm_labels(K4, pod="train-b"), [(t, G4_POD_B) for t in after])
    om.add(gr, dcgm_labels(K5), const(G5_GR))
    om.add(util, dcgm_labels(K6), const(G6_UTIL))
    for i, key in enumerate(SYN_KEYS):
        om.add(gr, dcgm_labels(key), const(syn_duty(i)))
    # vLLM: one pod labelled `pod`, one arriving as `exported_pod`, one on the old name.
    for pod, engines in RUNNING.items():
        for e, v in enumerate(engines):
            om.add(_gpu.VLLM_RUNNING, vllm_labels(pod, engine=str(e)), const(v))
    for pod, v in WAITING.items():
        om.add(_gpu.VLLM_WAITING, vllm_labels(pod), const(v))
    for pod, v in KV_NEW.items():
        om.add(_gpu.VLLM_KV_CACHE, vllm_labels(pod), const(v))
    for pod, v in KV_OLD.items():
        om.add(_gpu.VLLM_KV_CACHE_OLD, vllm_labels(pod), const(v))
    for pod in ("sampler-0", "sampler-1"):
        om.add(
            _gpu.VLLM_GENERATION_TOKENS,
            vllm_labels(pod),
            [(t, TOKENS_PER_S * (t - T0)) for t in TIMES],
        )
        for le in TTFT_BUCKETS:
            n = 0.0 if le <= TTFT_ALL_IN[0] else TTFT_OBS_PER_S
            labels = vllm_labels(pod, le="+Inf" if math.isinf(le) else repr(le))
            om.add(_gpu.VLLM_TTFT_BUCKET, labels, [(t, n * (t - T0)) for t in TIMES])
    return om


def vllm_labels(pod: str, **extra: str) -> dict[str, str]:
    if pod == "sampler-1":  # as seen through a collector that owns the `pod` label
        return {"pod": "otel-collector-0", "exported_pod": pod, "model_name": "m", **extra}
    return {"pod": pod, "namespace": "openrl", "model_name": "m", **extra}


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    require_prometheus()
    server = PrometheusServer(dataset()).start()
    yield server
    server.cleanup()


@dataclass
class Counted:
    metrics: PromGpuMetrics
    queries: list[str]


@pytest.fixture
async def counted(prometheus: PrometheusServer) -> AsyncIterator[Callable[..., Counted]]:
    """Build PromGpuMetrics whose every HTTP request is recorded (path + query)."""
    clients: list[httpx.AsyncClient] = []

    def make(**kw: object) -> Counted:
        seen: list[str] = []

        async def hook(request: httpx.Request) -> None:
            seen.append(request.url.path)

        client = httpx.AsyncClient(event_hooks={"request": [hook]})
        clients.append(client)
        settings = PrometheusSettings(url=prometheus.url, **kw)  # type: ignore[arg-type]
        source = HttpMetricsSource(settings, client=client)
        return Counted(PromGpuMetrics.from_settings(settings, source), seen)

    yield make
    for c in clients:
        await c.aclose()


@pytest.fixture
def twin() -> InMemoryGpuMetrics:
    t = InMemoryGpuMetrics(clock=lambda: T0 + 1200)
    for metric, series in dataset().families.items():
        for labels, samples in series.items():
            t.add_series(metric, dict(labels), samples.items())
    return t


def approx(x: float | None) -> object:
    return None if x is None else pytest.approx(x, rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------- duty


async def test_duty_per_window_and_metric_choice(counted: Callable[..., Counted]) -> None:
    c = counted()
    keys = [K0, K1, K2, K3, K4, K5, K6, MISSING, K2_NO_NODE]
    first = await c.metrics.duty(keys, 600, at=HALF)
    second = await c.metrics.duty(keys, 600, at=T0 + 1200)
    whole = await c.metrics.duty(keys, 1200, at=T0 + 1200)
    assert [d.value if d else None for d in first] == [
        approx(G0_FIRST),
        approx(G1_UTIL / 100),
        approx(G2_GR),
        approx(G3_GR),
        # K4: 20 samples at POD_A then 20 at POD_B in the first ten minutes.
        approx((20 * G4_POD_A + 20 * G4_POD_B) / 40),
        approx(G5_GR),
        approx(G6_UTIL / 100),
        None,
        None,
    ]
    assert second[0] is not None and second[0].value == approx(G0_SECOND)
    assert whole[0] is not None and whole[0].value == approx((G0_FIRST + G0_SECOND) / 2)
    # Sample-weighted across the churned series, not a mean of the two series' means.
    assert whole[4] is not None
    assert whole[4].value == approx((20 * G4_POD_A + 60 * G4_POD_B) / 80)
    assert whole[4].value != approx((G4_POD_A + G4_POD_B) / 2)
    metrics = [(d.metric, d.joined_by) if d else None for d in first]
    assert metrics[:3] == [
        (_gpu.GR_ENGINE_ACTIVE, "uuid"),  # GR wins over the decoy GPU_UTIL of 100
        (_gpu.GPU_UTIL, "uuid"),
        (_gpu.GR_ENGINE_ACTIVE, "hostname_gpu"),
    ]
    assert metrics[6] == (_gpu.GPU_UTIL, "uuid")
    assert c.queries == ["/api/v1/query"] * 6  # two metrics per call


async def test_one_query_per_metric_for_many_gpus(counted: Callable[..., Counted]) -> None:
    c = counted()
    absent = [GpuKey(f"GPU-absent-{i:05d}", f"node-x{i // 8}", i % 8) for i in range(3000)]
    keys = [*SYN_KEYS, K0, K2, *absent]
    duties = await c.metrics.duty(keys, 1200, at=T0 + 1200)
    assert c.queries == ["/api/v1/query", "/api/v1/query"]
    assert [d.value if d else None for d in duties[:SYN]] == [
        approx(syn_duty(i)) for i in range(SYN)
    ]
    assert duties[SYN] is not None and duties[SYN + 1] is not None
    assert duties[SYN + 2 :] == [None] * len(absent)


async def test_chunking_when_the_matcher_passes_the_byte_cap(
    counted: Callable[..., Counted],
) -> None:
    whole = counted()
    small = counted(chunk_bytes=1500)
    keys = [*SYN_KEYS, K2, K5]
    a = await whole.metrics.duty(keys, 1200, at=T0 + 1200)
    b = await small.metrics.duty(keys, 1200, at=T0 + 1200)
    assert a == b
    assert len(whole.queries) == 2
    assert len(small.queries) > 2


async def test_node_duty(counted: Callable[..., Counted]) -> None:
    c = counted()
    nodes = ["node-b", "node-c", "node-d", "syn-1", "node-z", ""]
    found = await c.metrics.node_duty(nodes, 1200, at=T0 + 1200)
    b, cc, d, syn1, z, empty = found
    assert b is not None and (b.value, b.gpus, b.metric) == (
        approx((G2_GR + G3_GR) / 2),
        2,
        _gpu.GR_ENGINE_ACTIVE,
    )
    assert cc is not None and cc.gpus == 2  # K4 and K5
    assert cc.value == approx(((20 * G4_POD_A + 60 * G4_POD_B) / 80 + G5_GR) / 2)
    assert d is not None and (d.value, d.metric) == (approx(G6_UTIL / 100), _gpu.GPU_UTIL)
    assert syn1 is not None and syn1.value == approx(sum(syn_duty(i) for i in range(8, 16)) / 8)
    assert (z, empty) == (None, None)
    assert len(c.queries) == 2


async def test_latest_gauges(counted: Callable[..., Counted]) -> None:
    c = counted()
    keys = [K0, K2, MISSING]
    at_end = await c.metrics.latest(keys, _gpu.FB_USED, at=T0 + 1200)
    at_half = await c.metrics.latest(keys, _gpu.FB_USED, at=HALF)
    power = await c.metrics.latest([K0, K1], _gpu.POWER_USAGE, at=T0 + 1200)
    assert at_end == [fb_used(N - 1), 1234.0, None]
    assert at_half == [fb_used(39), 1234.0, None]
    assert power == [300.0, None]
    with pytest.raises(InvalidInput):
        await c.metrics.latest(keys, "up", at=HALF)
    assert len(c.queries) == 3


async def test_xid_errors(counted: Callable[..., Counted]) -> None:
    c = counted()
    found = await c.metrics.xid_errors([K0, K1, K2, MISSING], 1200, at=T0 + 1200)
    assert found[0] == _gpu.XidErrors(0, None, None, 0)
    assert found[1] == _gpu.XidErrors(0, 79, TIMES[63], 4)
    assert found[2] == _gpu.XidErrors(13, 13, TIMES[-1], N - 70)
    assert found[3] is None
    # The peak query, then raw samples for the hot GPUs: by UUID and by Hostname.
    assert len(c.queries) == 3
    quiet = counted()
    early = await quiet.metrics.xid_errors([K0, K1], 300, at=T0 + 600)
    assert early == [_gpu.XidErrors(0, None, None, 0)] * 2
    assert len(quiet.queries) == 1


async def test_series_for_charts(counted: Callable[..., Counted]) -> None:
    c = counted()
    found = await c.metrics.series([K0, K1, MISSING], _gpu.DUTY, T0 + 60, T0 + 1200, 60)
    s0, s1, missing = found
    assert missing is None
    assert s0 is not None and (s0.metric, s0.step) == (_gpu.GR_ENGINE_ACTIVE, 60.0)
    assert [p.t for p in s0.points] == [T0 + 60 * k for k in range(1, 21)]
    assert [p.v for p in s0.points] == [
        approx(G0_FIRST if p.t <= HALF else G0_SECOND) for p in s0.points
    ]
    assert s1 is not None and s1.metric == _gpu.GPU_UTIL
    assert {round(p.v, 9) for p in s1.points} == {G1_UTIL / 100}
    fb = await c.metrics.series([K0], _gpu.FB_USED, T0 + 60, T0 + 1200, 1)
    assert fb[0] is not None and fb[0].step == 30.0  # raised to the minimum step
    assert fb[0].metric == _gpu.FB_USED and not fb[0].truncated
    with pytest.raises(InvalidInput):
        await c.metrics.series([K0], "DCGM_FI_DEV_GPU_UTIL{x}", T0, T0 + 60)
    assert len(c.queries) == 3  # duty: two metrics; FB_USED: one


# ---------------------------------------------------------------- activity

MODEL_A = [HeldInterval(K0, T0, HALF), HeldInterval(K1, T0 + 300, T0 + 1200)]
MODEL_B = [HeldInterval(K4, T0, T0 + 1200)]
MODEL_C = [HeldInterval(MISSING, T0, T0 + 600)]
MODEL_D = [HeldInterval(K2, HALF, T0 + 900), HeldInterval(K0, T0 + 590, T0 + 615)]


def expected_activity() -> list[float | None]:
    a = (G0_FIRST * 600 + G1_UTIL / 100 * 900) / 1500
    b = (G4_POD_A * 300 + G4_POD_B * 900) / 1200
    # K0 over [590, 615]: 10 s of the first value, 15 s of the second.
    d = (G2_GR * 300 + G0_FIRST * 10 + G0_SECOND * 15) / 325
    return [a, b, None, d]


async def test_time_weighted_activity(counted: Callable[..., Counted]) -> None:
    c = counted()
    found = await c.metrics.activity([MODEL_A, MODEL_B, MODEL_C, MODEL_D, []])
    assert [f.duty if f else None for f in found[:4]] == [approx(x) for x in expected_activity()]
    a, b, cc, d, empty = found
    assert empty is None
    assert b is not None and b.covered_gpu_seconds == 1200.0
    assert a is not None and (a.held_gpu_seconds, a.covered_gpu_seconds, a.gpus) == (
        1500.0,
        1500.0,
        2,
    )
    assert a.metrics == (_gpu.GR_ENGINE_ACTIVE, _gpu.GPU_UTIL) and a.step == 30.0
    assert cc is not None and (cc.held_gpu_seconds, cc.covered_gpu_seconds) == (600.0, 0.0)
    assert d is not None and d.metrics == (_gpu.GR_ENGINE_ACTIVE,)
    assert len(c.queries) == 2  # one range query per duty metric for all models


# ---------------------------------------------------------------- vLLM


def ttft_quantile(q: float) -> float:
    lo, hi = TTFT_ALL_IN
    return lo + (hi - lo) * q


async def test_vllm_stats(counted: Callable[..., Counted]) -> None:
    c = counted()
    pods = ["sampler-0", "sampler-1", "sampler-2", "nope", ""]
    s0, s1, s2, nope, empty = await c.metrics.vllm(pods, 300, at=T0 + 1200)
    assert s0 is not None
    assert (s0.requests_running, s0.requests_waiting) == (sum(RUNNING["sampler-0"]), 7.0)
    assert s0.kv_cache_usage == approx(KV_NEW["sampler-0"])
    assert s0.generation_tokens_per_s == approx(TOKENS_PER_S)
    assert s0.ttft_p50_s == approx(ttft_quantile(0.5))
    assert s0.ttft_p95_s == approx(ttft_quantile(0.95))
    # Found through `exported_pod`; the new kv-cache name wins over the old one.
    assert s1 is not None
    assert (s1.requests_running, s1.requests_waiting) == (sum(RUNNING["sampler-1"]), 0.0)
    assert s1.kv_cache_usage == approx(KV_NEW["sampler-1"])
    assert s1.generation_tokens_per_s == approx(TOKENS_PER_S)
    assert s1.ttft_p50_s == approx(ttft_quantile(0.5))
    # Only the old kv-cache name.
    assert s2 is not None and s2.kv_cache_usage == approx(KV_OLD["sampler-2"])
    assert s2 == _gpu.VllmStats(None, None, s2.kv_cache_usage, None, None, None)
    assert (nope, empty) == (None, None)
    assert len(c.queries) == 5  # one per metric


# ---------------------------------------------------------------- failures


async def test_gpu_layer_errors_are_backend_errors() -> None:
    settings = PrometheusSettings(url=f"http://127.0.0.1:{free_port()}")
    metrics = PromGpuMetrics.from_settings(settings)
    with pytest.raises(BackendUnavailable):  # not an ExceptionGroup
        await metrics.duty([K0, K1], 600, at=HALF)
    with pytest.raises(BackendUnavailable):
        await metrics.vllm(["sampler-0"])
    await metrics.aclose()


async def test_slow_prometheus_under_the_gpu_layer() -> None:
    from support.prometheus_server import StubPrometheus, StubReply

    stub = StubPrometheus(StubReply(delay_s=30)).start()
    try:
        settings = PrometheusSettings(url=stub.url, query_timeout_s=0.2)
        metrics = PromGpuMetrics.from_settings(settings)
        with pytest.raises(BackendTimeout):
            await metrics.duty([K0], 600, at=HALF)
        await metrics.aclose()
    finally:
        stub.stop()


async def test_bad_windows_are_refused(twin: InMemoryGpuMetrics) -> None:
    metrics = PromGpuMetrics.from_settings(PrometheusSettings(url="http://127.0.0.1:1"))
    for impl in (metrics, twin):
        for window in (0, -5, math.nan, 40 * 86400):
            with pytest.raises(InvalidInput):
                await impl.duty([K0], window)
        with pytest.raises(InvalidInput):
            await impl.series([K0], _gpu.DUTY, T0 + 100, T0)
    assert await metrics.duty([], 600) == []
    await metrics.aclose()


# ---------------------------------------------------------------- the twin


async def test_twin_matches_prometheus(
    counted: Callable[..., Counted], twin: InMemoryGpuMetrics
) -> None:
    real = counted().metrics
    keys = [K0, K1, K2, K3, K4, K5, K6, MISSING, K2_NO_NODE, *SYN_KEYS[:9]]
    for at, window in ((HALF, 600.0), (T0 + 1200, 600.0), (T0 + 1200, 1200.0)):
        assert await twin.duty(keys, window, at) == _approx_list(await real.duty(keys, window, at))
        nodes = ["node-a", "node-b", "node-c", "node-d", "syn-0", "node-z"]
        assert await twin.node_duty(nodes, window, at) == _approx_list(
            await real.node_duty(nodes, window, at)
        )
        assert await twin.xid_errors(keys, window, at) == await real.xid_errors(keys, window, at)
        for metric in (_gpu.FB_USED, _gpu.POWER_USAGE):
            assert await twin.latest(keys, metric, at) == await real.latest(keys, metric, at)
    for metric in (_gpu.DUTY, _gpu.GR_ENGINE_ACTIVE, _gpu.FB_USED):
        t = await twin.series(keys, metric, T0 + 60, T0 + 1200, 60)
        r = await real.series(keys, metric, T0 + 60, T0 + 1200, 60)
        assert t == _approx_list(r)
    groups = [MODEL_A, MODEL_B, MODEL_C, MODEL_D, []]
    assert await twin.activity(groups) == _approx_list(await real.activity(groups))


def _approx_list(items: Sequence[object]) -> list[object]:
    """Floats compared to 1e-9: PromQL sums in another order than Python."""
    out: list[object] = []
    for item in items:
        if item is None:
            out.append(None)
            continue
        fields = dict(vars(item))
        for name, value in fields.items():
            if isinstance(value, float):
                fields[name] = approx(value)
            elif isinstance(value, tuple) and value and isinstance(value[0], Sample):
                fields[name] = tuple(Sample(p.t, approx(p.v)) for p in value)  # type: ignore[arg-type]
        out.append(type(item)(**fields))
    return out


async def test_twin_vllm_snapshots() -> None:
    twin = InMemoryGpuMetrics(clock=lambda: 1000.0)
    stats = _gpu.VllmStats(1, 2, 0.5, 10.0, 0.1, 0.2)
    twin.set_vllm("p", 900.0, stats)
    assert await twin.vllm(["p", "q"]) == [stats, None]
    assert await twin.vllm(["p"], window_s=50) == [None]  # older than the window


# ---------------------------------------------------------------- pure functions


def test_weigh_points_by_overlap() -> None:
    points = [Sample(30, 1.0), Sample(60, 0.0), Sample(90, math.nan), Sample(120, 0.5)]
    # Held [45, 120]: the span (0, 30] is outside, 15 s of (30, 60] at 0.0, the NaN
    # span is skipped, all 30 s of (90, 120] at 0.5.
    total, covered = _gpu_joins.weigh_points(points, 30, 45, 120)
    assert (total, covered) == (0.0 * 15 + 0.5 * 30, 45.0)
    assert _gpu_joins.weigh_points(points, 30, 500, 600) == (0.0, 0.0)
    assert _gpu_joins.overlap(0, 10, 5, 20) == 5 and _gpu_joins.overlap(0, 10, 10, 20) == 0


def test_time_weighted_activity_pure() -> None:
    a, b = GpuKey("a"), GpuKey("b")
    points: dict[GpuKey, tuple[_gpu.DutyMetric, list[Sample]] | None] = {
        a: (_gpu.GR_ENGINE_ACTIVE, [Sample(t, 1.0) for t in range(10, 101, 10)]),
        b: (_gpu.GPU_UTIL, [Sample(t, 0.25) for t in range(10, 101, 10)]),
    }
    held = [HeldInterval(a, 0, 100), HeldInterval(b, 0, 50), HeldInterval(GpuKey("c"), 0, 40)]
    act = _gpu_joins.time_weighted_activity(held, points, 10)
    assert act.duty == approx((1.0 * 100 + 0.25 * 50) / 150)
    assert (act.held_gpu_seconds, act.covered_gpu_seconds, act.gpus) == (190.0, 150.0, 3)
    assert act.metrics == (_gpu.GR_ENGINE_ACTIVE, _gpu.GPU_UTIL)
    empty = _gpu_joins.time_weighted_activity([HeldInterval(a, 5, 5)], points, 10)
    assert (empty.duty, empty.held_gpu_seconds) == (None, 0.0)


def test_choose_step_bounds_points_and_samples() -> None:
    assert _gpu.choose_step(0, 3600, None, series=1, min_step=30, max_samples=10**6) == 30
    assert _gpu.choose_step(0, 86400 * 7, 60, series=1, min_step=30, max_samples=10**6) == 605
    # 8,000 series over a day under 500,000 samples: at least 1,383 s.
    assert _gpu.choose_step(0, 86400, None, series=8000, min_step=30, max_samples=500_000) == 1383
    with pytest.raises(InvalidInput):
        _gpu.choose_step(10, 10, None, series=1, min_step=30, max_samples=1)


def test_join_prefers_uuid_then_host() -> None:
    rows = [
        ({"UUID": "u1", "Hostname": "n", "gpu": "0"}, 1.0),
        ({"Hostname": "n", "gpu": "1"}, 2.0),
        ({"UUID": "", "Hostname": "n", "gpu": "0"}, 3.0),
        ({"Hostname": "n"}, 4.0),  # no gpu label: joins nothing
    ]
    by_uuid, by_host = _gpu_joins.index_by_gpu(rows)
    keys = [GpuKey("u1", "n", 0), GpuKey("u2", "n", 1), GpuKey("u3"), GpuKey("", "n", 0)]
    assert _gpu_joins.join_rows(keys, by_uuid, by_host) == [
        (1.0, "uuid"),
        (2.0, "hostname_gpu"),
        None,
        (3.0, "hostname_gpu"),
    ]


async def test_implementations_satisfy_the_protocols() -> None:
    from openrl_inspect.adapters.prometheus import MetricsSource
    from openrl_inspect.adapters.prometheus.memory import InMemoryMetricsSource

    settings = PrometheusSettings(url="http://127.0.0.1:1")
    real: _gpu.GpuMetrics = make_gpu_metrics(settings)
    fake: _gpu.GpuMetrics = InMemoryGpuMetrics()
    http: MetricsSource = HttpMetricsSource(settings)
    memory: MetricsSource = InMemoryMetricsSource()
    assert isinstance(real, PromGpuMetrics) and isinstance(fake, InMemoryGpuMetrics)
    for closable in (real, fake, http, memory):
        await closable.aclose()

"""GPU activity (DCGM exporter) and vLLM serving metrics: records, the ``GpuMetrics``
protocol, the pure functions both implementations share, and the factories.

Every method is batch-shaped for GraphQL data loaders: it takes a list of keys and
returns a list in key order, ``None`` where nothing was found. The Prometheus
implementation (``gpu_metrics_prom.PromGpuMetrics``) issues ONE query per metric per
call whatever the number of keys (more only when a set matcher would pass the byte
cap); the in-memory twin (``gpu_metrics_memory.InMemoryGpuMetrics``) holds sample lists.

Joining DCGM series to GPUs: by the ``UUID`` label; for a ``GpuKey`` that also names its
node and index, series whose ``UUID`` label is empty or missing (some DRA setups) are
joined on ``Hostname`` + ``gpu`` instead. The exporter's ``Hostname`` label is the node
name when ``NODE_NAME`` is set in its pod (see deploy/dcgm-exporter.yaml).

Duty is the mean over a window of ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0..1), or of
``DCGM_FI_DEV_GPU_UTIL`` / 100 for GPUs that do not export the profiling metric; each
answer says which metric it used. Means are sample-weighted across all series of a GPU
(``sum(sum_over_time) / sum(count_over_time)``), so a series that changes labels
mid-window (the exporter's ``pod`` label follows the workload) is averaged correctly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol, TypeVar

from openrl_inspect.adapters.prometheus._source import PrometheusSettings, Sample
from openrl_inspect.errors import InvalidInput

GR_ENGINE_ACTIVE: Final = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
SM_ACTIVE = "DCGM_FI_PROF_SM_ACTIVE"
PIPE_TENSOR_ACTIVE = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
DRAM_ACTIVE = "DCGM_FI_PROF_DRAM_ACTIVE"
GPU_UTIL: Final = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"

# The pseudo-metric of ``series``: GR_ENGINE_ACTIVE, else GPU_UTIL / 100, per GPU.
DUTY = "duty"

DutyMetric = Literal["DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"]
DUTY_METRICS: tuple[DutyMetric, DutyMetric] = (GR_ENGINE_ACTIVE, GPU_UTIL)
# Divide a duty metric's value by this to get 0..1.
DUTY_SCALE: Mapping[str, float] = {GR_ENGINE_ACTIVE: 1.0, GPU_UTIL: 100.0}

CHART_METRICS = frozenset(
    {
        DUTY,
        GR_ENGINE_ACTIVE,
        SM_ACTIVE,
        PIPE_TENSOR_ACTIVE,
        DRAM_ACTIVE,
        GPU_UTIL,
        FB_USED,
        POWER_USAGE,
        GPU_TEMP,
    }
)
LATEST_METRICS = frozenset({FB_USED, POWER_USAGE, GPU_TEMP, XID_ERRORS})

VLLM_RUNNING = "vllm:num_requests_running"
VLLM_WAITING = "vllm:num_requests_waiting"
VLLM_KV_CACHE = "vllm:kv_cache_usage_perc"
VLLM_KV_CACHE_OLD = "vllm:gpu_cache_usage_perc"
VLLM_GENERATION_TOKENS = "vllm:generation_tokens_total"
VLLM_TTFT_BUCKET = "vllm:time_to_first_token_seconds_bucket"

# Window and point bounds shared by both implementations.
MAX_WINDOW_S = 31 * 24 * 3600.0
MAX_POINTS = 1_000
# Instant lookups of a gauge see samples at most this old (Prometheus' default).
LOOKBACK_S = 300.0


@dataclass(frozen=True)
class GpuKey:
    """A GPU as the API knows it: its UUID and, when known, its node and DCGM index."""

    uuid: str
    node: str | None = None
    index: int | None = None

    @property
    def host_key(self) -> tuple[str, str] | None:
        if self.node and self.index is not None:
            return (self.node, str(self.index))
        return None


@dataclass(frozen=True)
class Duty:
    value: float  # mean over the window, 0..1
    metric: DutyMetric
    joined_by: Literal["uuid", "hostname_gpu"]


@dataclass(frozen=True)
class NodeDuty:
    value: float  # mean of the node's GPU duties, 0..1
    gpus: int  # GPUs of the node with samples in the window
    metric: DutyMetric


@dataclass(frozen=True)
class GpuSeries:
    metric: str  # the DCGM metric the points come from (for ``duty``: which one)
    step: float  # seconds; each point is the mean over (t - step, t]
    points: tuple[Sample, ...]
    truncated: bool = False


@dataclass(frozen=True)
class XidErrors:
    latest: int  # the XID code of the latest sample in the window (0: none)
    last_nonzero: int | None  # the latest non-zero XID code in the window
    last_nonzero_at: float | None
    nonzero_samples: int  # samples in the window that hold a non-zero XID


@dataclass(frozen=True)
class HeldInterval:
    """A GPU held (by a Model) from ``start`` to ``end`` (unix seconds)."""

    key: GpuKey
    start: float
    end: float


@dataclass(frozen=True)
class Activity:
    """Duty weighted by the time each GPU was held."""

    duty: float | None  # None when no held time had samples
    held_gpu_seconds: float
    covered_gpu_seconds: float  # held time that had samples
    gpus: int  # distinct GPUs held
    metrics: tuple[DutyMetric, ...]  # the duty metrics that contributed
    step: float  # resolution of the samples weighted
    truncated: bool = False


@dataclass(frozen=True)
class VllmStats:
    requests_running: float | None
    requests_waiting: float | None
    kv_cache_usage: float | None  # 0..1
    generation_tokens_per_s: float | None
    ttft_p50_s: float | None
    ttft_p95_s: float | None


class GpuMetrics(Protocol):
    """Read-only GPU and serving metrics; lists in, lists in key order out."""

    async def duty(
        self, keys: Sequence[GpuKey], window_s: float, at: float | None = None
    ) -> list[Duty | None]: ...

    async def node_duty(
        self, nodes: Sequence[str], window_s: float, at: float | None = None
    ) -> list[NodeDuty | None]: ...

    async def latest(
        self, keys: Sequence[GpuKey], metric: str, at: float | None = None
    ) -> list[float | None]: ...

    async def xid_errors(
        self, keys: Sequence[GpuKey], window_s: float, at: float | None = None
    ) -> list[XidErrors | None]: ...

    async def series(
        self,
        keys: Sequence[GpuKey],
        metric: str,
        start: float,
        end: float,
        step: float | None = None,
    ) -> list[GpuSeries | None]: ...

    async def activity(self, groups: Sequence[Sequence[HeldInterval]]) -> list[Activity | None]: ...

    async def vllm(
        self, pods: Sequence[str], window_s: float = 300.0, at: float | None = None
    ) -> list[VllmStats | None]: ...

    async def aclose(self) -> None: ...


# ---------------------------------------------------------------- validation


def check_window(window_s: float) -> float:
    if not (math.isfinite(window_s) and 0 < window_s <= MAX_WINDOW_S):
        raise InvalidInput("window must be between 0 and 31 days")
    return float(window_s)


def check_metric(metric: str, allowed: frozenset[str]) -> str:
    if metric not in allowed:
        raise InvalidInput("unsupported GPU metric")
    return metric


def choose_step(
    start: float,
    end: float,
    step: float | None,
    *,
    series: int,
    min_step: float,
    max_samples: int,
    max_points: int = MAX_POINTS,
) -> float:
    """A whole-second step >= ``step`` and ``min_step`` that keeps every series under
    ``max_points`` points and all ``series`` together under ``max_samples`` samples."""
    if not all(math.isfinite(x) for x in (start, end)) or end <= start:
        raise InvalidInput("range end must be after its start")
    if step is not None and not (math.isfinite(step) and step > 0):
        raise InvalidInput("step must be a positive number of seconds")
    span = end - start
    wanted = max(
        step or 0.0,
        min_step,
        span / max_points,
        span * max(series, 1) / max(max_samples, 1),
    )
    return float(math.ceil(wanted))


# ---------------------------------------------------------------- joining

T = TypeVar("T")


def gpu_ref(labels: Mapping[str, str]) -> str | tuple[str, str] | None:
    """How a per-GPU answer row joins: its ``UUID`` when non-empty, else its
    (``Hostname``, ``gpu``) pair, else not at all."""
    uuid = labels.get("UUID", "")
    if uuid:
        return uuid
    hostname, gpu = labels.get("Hostname", ""), labels.get("gpu", "")
    if hostname and gpu:
        return (hostname, gpu)
    return None


def index_by_gpu(
    items: Iterable[tuple[Mapping[str, str], T]],
) -> tuple[dict[str, T], dict[tuple[str, str], T]]:
    """Rows keyed by UUID and by (Hostname, gpu); the first row of a key wins."""
    by_uuid: dict[str, T] = {}
    by_host: dict[tuple[str, str], T] = {}
    for labels, payload in items:
        ref = gpu_ref(labels)
        if isinstance(ref, str):
            by_uuid.setdefault(ref, payload)
        elif ref is not None:
            by_host.setdefault(ref, payload)
    return by_uuid, by_host


def join_rows(
    keys: Sequence[GpuKey], by_uuid: Mapping[str, T], by_host: Mapping[tuple[str, str], T]
) -> list[tuple[T, Literal["uuid", "hostname_gpu"]] | None]:
    """Per key: its UUID's answer, else (node, index)'s answer, else None."""
    out: list[tuple[T, Literal["uuid", "hostname_gpu"]] | None] = []
    for key in keys:
        if key.uuid and key.uuid in by_uuid:
            out.append((by_uuid[key.uuid], "uuid"))
            continue
        hk = key.host_key
        if hk is not None and hk in by_host:
            out.append((by_host[hk], "hostname_gpu"))
            continue
        out.append(None)
    return out


def key_sets(keys: Iterable[GpuKey]) -> dict[str, list[str]]:
    """The label sets to select ``keys``: UUIDs, and nodes of keys with node + index."""
    uuids = sorted({k.uuid for k in keys if k.uuid})
    nodes = sorted({k.node for k in keys if k.host_key is not None and k.node})
    sets: dict[str, list[str]] = {}
    if uuids:
        sets["UUID"] = uuids
    if nodes:
        sets["Hostname"] = nodes
    return sets


def pick_duty(
    keys: Sequence[GpuKey],
    per_metric: Mapping[str, tuple[Mapping[str, float], Mapping[tuple[str, str], float]]],
) -> list[Duty | None]:
    """Per key: GR_ENGINE_ACTIVE's mean if the GPU exports it, else GPU_UTIL / 100."""
    out: list[Duty | None] = [None] * len(keys)
    for metric in DUTY_METRICS:
        by_uuid, by_host = per_metric.get(metric, ({}, {}))
        for i, hit in enumerate(join_rows(keys, by_uuid, by_host)):
            if out[i] is None and hit is not None and math.isfinite(hit[0]):
                out[i] = Duty(hit[0] / DUTY_SCALE[metric], metric, hit[1])
    return out


# ---------------------------------------------------------------- time weighting


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    """Length of the intersection of [a0, a1] and [b0, b1] (0 when disjoint)."""
    return max(0.0, min(a1, b1) - max(a0, b0))


def weigh_points(
    points: Sequence[Sample], step: float, start: float, end: float
) -> tuple[float, float]:
    """Each point ``(t, v)`` is the mean over ``(t - step, t]``; weigh it by how much of
    that span lies inside the held interval ``[start, end]``. Returns
    ``(sum of value * seconds, seconds covered)``. NaN points count as missing."""
    total = 0.0
    covered = 0.0
    for p in points:
        if not math.isfinite(p.v):
            continue
        w = overlap(p.t - step, p.t, start, end)
        if w > 0:
            total += p.v * w
            covered += w
    return total, covered


def time_weighted_activity(
    intervals: Sequence[HeldInterval],
    points_for: Mapping[GpuKey, tuple[DutyMetric, Sequence[Sample]] | None],
    step: float,
    truncated: bool = False,
) -> Activity:
    """Duty over ``intervals`` weighted by time held, from per-GPU duty points (0..1,
    each the mean over the ``step`` before it). Held time without points is reported
    as held but not covered, and does not pull the mean down."""
    held = 0.0
    covered = 0.0
    weighted = 0.0
    metrics: set[DutyMetric] = set()
    for iv in intervals:
        if iv.end <= iv.start:
            continue
        held += iv.end - iv.start
        found = points_for.get(iv.key)
        if found is None:
            continue
        metric, points = found
        w_sum, w_cov = weigh_points(points, step, iv.start, iv.end)
        if w_cov > 0:
            weighted += w_sum
            covered += w_cov
            metrics.add(metric)
    return Activity(
        duty=weighted / covered if covered > 0 else None,
        held_gpu_seconds=held,
        covered_gpu_seconds=covered,
        gpus=len({iv.key for iv in intervals}),
        metrics=tuple(m for m in DUTY_METRICS if m in metrics),
        step=step,
        truncated=truncated,
    )


def activity_window(
    groups: Sequence[Sequence[HeldInterval]],
) -> tuple[float, float, list[GpuKey]] | None:
    """The union window and the distinct GPUs of all ``groups`` (None: nothing held)."""
    starts: list[float] = []
    ends: list[float] = []
    keys: dict[GpuKey, None] = {}
    for group in groups:
        for iv in group:
            if not (math.isfinite(iv.start) and math.isfinite(iv.end)):
                raise InvalidInput("held interval bounds must be finite")
            if iv.end > iv.start:
                starts.append(iv.start)
                ends.append(iv.end)
                keys[iv.key] = None
    if not starts:
        return None
    return min(starts), max(ends), list(keys)


def mean_or_none(values: Iterable[float]) -> float | None:
    vals = [v for v in values if math.isfinite(v)]
    return sum(vals) / len(vals) if vals else None


def summarize_xid(samples: Sequence[Sample]) -> XidErrors:
    ordered = sorted(samples, key=lambda p: p.t)
    nonzero = [p for p in ordered if math.isfinite(p.v) and p.v != 0]
    last = nonzero[-1] if nonzero else None
    return XidErrors(
        latest=int(ordered[-1].v) if ordered and math.isfinite(ordered[-1].v) else 0,
        last_nonzero=int(last.v) if last else None,
        last_nonzero_at=last.t if last else None,
        nonzero_samples=len(nonzero),
    )


def as_duty_metric(metric: str) -> DutyMetric:
    if metric == GR_ENGINE_ACTIVE:
        return GR_ENGINE_ACTIVE
    if metric == GPU_UTIL:
        return GPU_UTIL
    raise ValueError("not a duty metric")


def make_gpu_metrics(settings: PrometheusSettings) -> GpuMetrics:
    """The Prometheus-backed ``GpuMetrics`` for ``settings`` (it owns its HTTP client;
    ``aclose`` it). The demo uses ``gpu_metrics_memory.InMemoryGpuMetrics`` instead."""
    from openrl_inspect.adapters.prometheus._gpu_prom import PromGpuMetrics

    return PromGpuMetrics.from_settings(settings)

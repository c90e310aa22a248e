"""GPU activity (DCGM exporter) and vLLM serving metrics: the metric names, records,
the ``GpuMetrics`` protocol, the bounds both implementations check, and the factory.

Every method is batch-shaped for GraphQL data loaders: it takes a list of keys and
returns a list in key order, ``None`` where nothing was found. The Prometheus
implementation (``_gpu_prom.PromGpuMetrics``) issues ONE query per metric per call
whatever the number of keys (more only when a set matcher would pass the byte cap); the
in-memory twin (``memory.InMemoryGpuMetrics``) holds sample lists. How both join series
to GPUs and weigh duty by time held is ``_gpu_joins``.

Duty is the mean over a window of ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0..1), or of
``DCGM_FI_DEV_GPU_UTIL`` / 100 for GPUs that do not export the profiling metric; each
answer says which metric it used. Means are sample-weighted across all series of a GPU
(``sum(sum_over_time) / sum(count_over_time)``), so a series that changes labels
mid-window (the exporter's ``pod`` label follows the workload) is averaged correctly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from openrl_inspect.adapters.prometheus._source import Sample
from openrl_inspect.core.errors import InvalidInput

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


def as_duty_metric(metric: str) -> DutyMetric:
    if metric == GR_ENGINE_ACTIVE:
        return GR_ENGINE_ACTIVE
    if metric == GPU_UTIL:
        return GPU_UTIL
    raise ValueError("not a duty metric")

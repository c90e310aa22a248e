"""GPU activity (DCGM) and serving (vLLM) metrics: their types, each mapping the record
its read returns, and the window arguments the metrics fields take.

The fields that return these types are ``fields`` (on Model, Session, Placement,
Worker, GPU and Node) and ``query`` (the root ones).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated

import strawberry
from openrl_inspect.adapters import prometheus
from openrl_inspect.adapters.prometheus import RawAnswer, Sample
from openrl_inspect.resolvers.metrics import reads as metrics_reads
from openrl_inspect.schema.common import as_json, ts
from strawberry.scalars import JSON

DUTY_WINDOW_S = 600.0
ACTIVITY_WINDOW_S = 3600.0
VLLM_WINDOW_S = 300.0

WINDOW_HELP = "Seconds before now (at most 31 days)."
Window = Annotated[float, strawberry.argument(description=WINDOW_HELP)]
VllmWindow = Annotated[float, strawberry.argument(description="Window of rates and quantiles.")]
PlacementWindow = Annotated[
    float, strawberry.argument(description="Seconds before the release (or now).")
]


def epoch(value: datetime | None) -> float | None:
    """An API time as epoch seconds; a time without a zone is taken as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=UTC)


@strawberry.enum(description="What a GPU chart can show.")
class GpuChartMetric(Enum):
    DUTY = strawberry.enum_value(
        prometheus.DUTY,
        description="DCGM_FI_PROF_GR_ENGINE_ACTIVE (0..1), else DCGM_FI_DEV_GPU_UTIL / 100.",
    )
    GR_ENGINE_ACTIVE = strawberry.enum_value(
        prometheus.GR_ENGINE_ACTIVE,
        description="DCGM_FI_PROF_GR_ENGINE_ACTIVE: share of time the graphics engine was "
        "busy (0..1).",
    )
    SM_ACTIVE = strawberry.enum_value(
        prometheus.SM_ACTIVE,
        description="DCGM_FI_PROF_SM_ACTIVE: share of time an SM had a warp resident (0..1).",
    )
    PIPE_TENSOR_ACTIVE = strawberry.enum_value(
        prometheus.PIPE_TENSOR_ACTIVE,
        description="DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: share of cycles the tensor pipes "
        "were busy (0..1).",
    )
    DRAM_ACTIVE = strawberry.enum_value(
        prometheus.DRAM_ACTIVE,
        description="DCGM_FI_PROF_DRAM_ACTIVE: share of cycles device memory was busy (0..1).",
    )
    GPU_UTIL = strawberry.enum_value(
        prometheus.GPU_UTIL,
        description="DCGM_FI_DEV_GPU_UTIL: coarse utilisation in percent (0..100).",
    )
    FB_USED = strawberry.enum_value(
        prometheus.FB_USED, description="DCGM_FI_DEV_FB_USED: framebuffer memory used, MiB."
    )
    POWER_USAGE = strawberry.enum_value(
        prometheus.POWER_USAGE, description="DCGM_FI_DEV_POWER_USAGE: power draw, watts."
    )
    GPU_TEMP = strawberry.enum_value(
        prometheus.GPU_TEMP, description="DCGM_FI_DEV_GPU_TEMP: GPU temperature, °C."
    )


# The range arguments of a GPU chart (``GPU.series`` and ``gpuSeries``).
ChartMetric = Annotated[GpuChartMetric, strawberry.argument(description="What to chart.")]
RangeStart = Annotated[
    datetime | None,
    strawberry.argument(description="Range start (default: an hour before `end`)."),
]
RangeEnd = Annotated[datetime | None, strawberry.argument(description="Range end (default: now).")]
Step = Annotated[
    float | None,
    strawberry.argument(description="Seconds between points, > 0 (raised to the caps)."),
]


@strawberry.type(description="A GPU's mean duty (0..1) over a window, from DCGM.")
class GpuDuty:
    uuid: str = strawberry.field(
        description="Empty for a GPU known by its node and index only (no UUID label)."
    )
    value: float | None = strawberry.field(
        description="Mean over the window; null when the GPU has no DCGM samples in it."
    )
    metric: str | None = strawberry.field(
        description="The DCGM metric used: DCGM_FI_PROF_GR_ENGINE_ACTIVE, or "
        "DCGM_FI_DEV_GPU_UTIL (divided by 100) for GPUs that do not export it."
    )
    joined_by: str | None = strawberry.field(
        description="How the series was found: `uuid` (its UUID label) or `hostname_gpu`."
    )
    window_seconds: float = strawberry.field(description="The window's length, seconds.")
    window_end: datetime = strawberry.field(
        description="The window's end (UTC): now, or a placement's release."
    )

    @classmethod
    def from_record(cls, rec: metrics_reads.GpuDutyRecord) -> GpuDuty:
        d = rec.duty
        return cls(
            uuid=rec.uuid,
            value=d.value if d else None,
            metric=d.metric if d else None,
            joined_by=d.joined_by if d else None,
            window_seconds=rec.window_s,
            window_end=_at(rec.at),
        )


@strawberry.type(description="The mean duty of a node's GPUs over a window.")
class NodeDuty:
    node: str = strawberry.field(description="The node's name (DCGM's `Hostname` label).")
    value: float | None = strawberry.field(
        description="Mean duty (0..1) of its GPUs; null when no GPU of it has samples."
    )
    gpus: int = strawberry.field(description="GPUs of the node with samples in the window.")
    metric: str | None = strawberry.field(
        description="The DCGM metric used (DCGM_FI_PROF_GR_ENGINE_ACTIVE, or "
        "DCGM_FI_DEV_GPU_UTIL / 100); null without samples."
    )
    window_seconds: float = strawberry.field(description="The window's length, seconds.")
    window_end: datetime = strawberry.field(description="The window's end: the query's now.")

    @classmethod
    def from_record(cls, rec: metrics_reads.NodeDutyRecord) -> NodeDuty:
        d = rec.duty
        return cls(
            node=rec.node,
            value=d.value if d else None,
            gpus=d.gpus if d else 0,
            metric=d.metric if d else None,
            window_seconds=rec.window_s,
            window_end=_at(rec.at),
        )


@strawberry.type(description="One sample of a Prometheus series.")
class SeriesPoint:
    at: datetime = strawberry.field(description="The sample's time (UTC).")
    value: float | None = strawberry.field(description="Null for NaN or infinite values.")


def _points(samples: tuple[Sample, ...]) -> list[SeriesPoint]:
    return [SeriesPoint(at=_at(p.t), value=p.v if math.isfinite(p.v) else None) for p in samples]


@strawberry.type(description="A GPU metric over time; each point is the mean over its step.")
class GpuSeries:
    uuid: str = strawberry.field(description="The GPU's device UUID.")
    requested: GpuChartMetric = strawberry.field(description="The metric asked for.")
    metric: str | None = strawberry.field(description="The DCGM metric the points come from.")
    start: datetime = strawberry.field(description="The range's start (UTC).")
    end: datetime = strawberry.field(description="The range's end (UTC).")
    step_seconds: float | None = strawberry.field(
        description="Seconds between points, as raised to the caps; null without samples."
    )
    points: list[SeriesPoint] = strawberry.field(
        description="The points in time order, at most 1,000; empty without samples."
    )
    truncated: bool = strawberry.field(description="True when points past the cap were dropped.")

    @classmethod
    def from_record(cls, rec: metrics_reads.GpuSeriesRecord) -> GpuSeries:
        s = rec.series
        return cls(
            uuid=rec.uuid,
            requested=GpuChartMetric(rec.requested),
            metric=s.metric if s else None,
            start=_at(rec.start),
            end=_at(rec.end),
            step_seconds=s.step if s else None,
            points=_points(s.points) if s else [],
            truncated=s.truncated if s else False,
        )


@strawberry.type(description="A GPU held by a placement, within the window asked for.")
class HeldSpan:
    model_id: strawberry.ID = strawberry.field(description="The model that held it.")
    placement_id: strawberry.ID = strawberry.field(
        description="The placement (Redis) it held it by."
    )
    start: datetime = strawberry.field(
        description="Held from (UTC): admission, or the window's start if later."
    )
    end: datetime = strawberry.field(
        description="Held until (UTC): release, or the window's end if earlier or not released."
    )
    seconds: float = strawberry.field(description="From `start` to `end`, seconds.")


@strawberry.type(description="One GPU a model held over the window, and how busy it was.")
class HeldGpu:
    uuid: str = strawberry.field(description="The GPU's device UUID.")
    node: str | None = strawberry.field(description="The node of its placement, if recorded.")
    held_seconds: float = strawberry.field(description="Time held within the window, seconds.")
    covered_seconds: float = strawberry.field(description="Held time that had DCGM samples.")
    duty: float | None = strawberry.field(
        description="Its duty (0..1) averaged over the time it was held; null without samples."
    )
    metric: str | None = strawberry.field(
        description="The DCGM metric its duty comes from; null without samples."
    )
    spans: list[HeldSpan] = strawberry.field(description="The spans it was held, in time order.")

    @classmethod
    def from_record(cls, rec: metrics_reads.HeldGpu) -> HeldGpu:
        act = rec.activity
        return cls(
            uuid=rec.uuid,
            node=rec.node,
            held_seconds=rec.held_s,
            covered_seconds=act.covered_gpu_seconds if act else 0.0,
            duty=act.duty if act else None,
            metric=act.metrics[0] if act and act.metrics else None,
            spans=[
                HeldSpan(
                    model_id=strawberry.ID(s.model_id),
                    placement_id=strawberry.ID(s.placement_id),
                    start=_at(s.start),
                    end=_at(s.end),
                    seconds=s.end - s.start,
                )
                for s in rec.spans
            ],
        )


@strawberry.type(
    description="The GPUs held over a window (from the placements recorded in Redis) and "
    "their duty from DCGM, weighted by the time each was held."
)
class GpuActivity:
    window_seconds: float = strawberry.field(description="The window's length, seconds.")
    window_start: datetime = strawberry.field(description="The window's start (UTC).")
    window_end: datetime = strawberry.field(description="The window's end (UTC).")
    duty: float | None = strawberry.field(
        description="Duty (0..1) of all held GPUs together, weighted by time held; null "
        "when nothing held had samples."
    )
    held_gpu_seconds: float = strawberry.field(
        description="GPU-seconds held in the window, summed over the GPUs."
    )
    covered_gpu_seconds: float = strawberry.field(description="Held time that had samples.")
    gpu_count: int = strawberry.field(description="Distinct GPUs held in the window.")
    metrics: list[str] = strawberry.field(description="The DCGM metrics that contributed.")
    step_seconds: float | None = strawberry.field(description="Resolution of the samples.")
    truncated: bool = strawberry.field(
        description="True when placements or models past one page, or samples past the "
        "caps, were left out."
    )
    gpus: list[HeldGpu] = strawberry.field(description="Each GPU held, first held first.")

    @classmethod
    def from_record(cls, rec: metrics_reads.GpuActivityRecord) -> GpuActivity:
        act = rec.activity
        return cls(
            window_seconds=rec.window_s,
            window_start=_at(rec.start),
            window_end=_at(rec.end),
            duty=act.duty if act else None,
            held_gpu_seconds=sum(g.held_s for g in rec.gpus),
            covered_gpu_seconds=act.covered_gpu_seconds if act else 0.0,
            gpu_count=len(rec.gpus),
            metrics=list(act.metrics) if act else [],
            step_seconds=act.step if act else None,
            truncated=rec.truncated or bool(act and act.truncated),
            gpus=[HeldGpu.from_record(g) for g in rec.gpus],
        )


@strawberry.type(description="A vLLM server's state (the sampler's engine), from Prometheus.")
class VllmStats:
    requests_running: float | None = strawberry.field(
        description="Requests running now (vllm:num_requests_running)."
    )
    requests_waiting: float | None = strawberry.field(
        description="Requests waiting now (vllm:num_requests_waiting)."
    )
    kv_cache_usage: float | None = strawberry.field(
        description="KV cache in use, 0..1 (vllm:kv_cache_usage_perc)."
    )
    generation_tokens_per_second: float | None = strawberry.field(
        description="Tokens generated per second over the window "
        "(rate of vllm:generation_tokens_total)."
    )
    ttft_p50_seconds: float | None = strawberry.field(
        description="Median time to first token over the window, seconds."
    )
    ttft_p95_seconds: float | None = strawberry.field(
        description="95th percentile of time to first token over the window, seconds."
    )

    @classmethod
    def from_record(cls, rec: prometheus.VllmStats) -> VllmStats:
        return cls(
            requests_running=rec.requests_running,
            requests_waiting=rec.requests_waiting,
            kv_cache_usage=rec.kv_cache_usage,
            generation_tokens_per_second=rec.generation_tokens_per_s,
            ttft_p50_seconds=rec.ttft_p50_s,
            ttft_p95_seconds=rec.ttft_p95_s,
        )


@strawberry.type(description="A sampler pod and its vLLM stats over the window.")
class SamplerStats:
    pod: str = strawberry.field(description="The sampler pod's name.")
    worker_id: strawberry.ID | None = strawberry.field(
        description="The sampler worker (Redis) in that pod; null when not known."
    )
    window_seconds: float = strawberry.field(description="The window of rates and quantiles.")
    stats: VllmStats | None = strawberry.field(description="Null when it exports no vLLM metrics.")

    @classmethod
    def from_record(cls, rec: metrics_reads.SamplerRecord) -> SamplerStats:
        return cls(
            pod=rec.pod,
            worker_id=strawberry.ID(rec.worker_id) if rec.worker_id else None,
            window_seconds=rec.window_s,
            stats=VllmStats.from_record(rec.stats) if rec.stats else None,
        )


@strawberry.type(description="One series of a raw PromQL answer.")
class RawSeries:
    labels: JSON = strawberry.field(description="Its labels, name -> value.")
    points: list[SeriesPoint] = strawberry.field(
        description="Its samples in time order (one for a vector or scalar)."
    )
    truncated: bool = strawberry.field(description="Samples of this series were dropped.")


@strawberry.type(description="A raw PromQL answer, capped in series and samples.")
class RawQueryResult:
    result_type: str = strawberry.field(
        description="The PromQL result type: vector, matrix or scalar."
    )
    series: list[RawSeries] = strawberry.field(
        description="The series, at most OPENRL_INSPECT_PROMETHEUS_RAW_MAX_SERIES (1,000)."
    )
    series_truncated: bool = strawberry.field(description="Series past the cap were dropped.")
    samples_truncated: bool = strawberry.field(
        description="Samples past OPENRL_INSPECT_PROMETHEUS_RAW_MAX_SAMPLES (100,000) were dropped."
    )
    truncated: bool = strawberry.field(description="Series or samples were dropped.")
    warnings: list[str] = strawberry.field(description="Prometheus's warnings, verbatim.")
    time: datetime | None = strawberry.field(description="Instant queries: evaluated at.")
    start: datetime | None = strawberry.field(description="Range queries: the range's start.")
    end: datetime | None = strawberry.field(description="Range queries: the range's end.")
    step_seconds: float | None = strawberry.field(description="Range queries: the step used.")

    @classmethod
    def from_record(cls, rec: RawAnswer) -> RawQueryResult:
        return cls(
            result_type=rec.result_type,
            series=[
                RawSeries(
                    labels=as_json(dict(s.labels)),
                    points=_points(s.samples),
                    truncated=s.truncated,
                )
                for s in rec.series
            ],
            series_truncated=rec.series_truncated,
            samples_truncated=rec.samples_truncated,
            truncated=rec.truncated,
            warnings=list(rec.warnings),
            time=ts(rec.at),
            start=ts(rec.start),
            end=ts(rec.end),
            step_seconds=rec.step,
        )

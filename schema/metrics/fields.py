"""The metrics fields of Model, Session, Placement, Worker, GPU and Node, as mixins.

Each ``*MetricsFields`` class is a Strawberry type its owner inherits from, so the
owner's module holds no metrics code; a mixin reads only the attributes it names in a
protocol (the owner's id, GPUs, pod or name).

Every field here reads Prometheus: when it is down, slow or not configured, only these
fields go null (``BACKEND_UNAVAILABLE`` / ``BACKEND_TIMEOUT`` /
``BACKEND_NOT_CONFIGURED`` with ``backend: prometheus``) and the rest of the answer
stands.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, cast

import strawberry
from openrl_inspect.adapters.kubernetes import GpuDevice
from openrl_inspect.resolvers.metrics import reads as metrics_reads
from openrl_inspect.schema.common import Info
from openrl_inspect.schema.metrics.types import (
    ACTIVITY_WINDOW_S,
    DUTY_WINDOW_S,
    VLLM_WINDOW_S,
    ChartMetric,
    GpuActivity,
    GpuChartMetric,
    GpuDuty,
    GpuSeries,
    NodeDuty,
    PlacementWindow,
    RangeEnd,
    RangeStart,
    SamplerStats,
    Step,
    VllmStats,
    VllmWindow,
    Window,
    epoch,
)


class _Ident(Protocol):
    id: strawberry.ID


class _Held(Protocol):
    gpu_ids: list[str]
    admitted_at: datetime | None
    released_at: datetime | None


class _Device(Protocol):
    # The GPU's record: its node and index are fields read from it when asked.
    _record: GpuDevice


class _Named(Protocol):
    name: str


class _Proc(Protocol):
    role: str
    pod: str
    gpu_ids: list[str]


def _own_id(obj: object) -> str:
    return str(cast(_Ident, obj).id)


@strawberry.type
class ModelMetricsFields:
    """Metric fields of ``Model`` (from Prometheus)."""

    @strawberry.field(
        description="The GPUs this model held over the last `windowSeconds` (from its "
        "placements in Redis), each with its DCGM duty, and the duty of all of them "
        "weighted by the time held."
    )
    async def gpu_activity(
        self,
        info: Info,
        window_seconds: Window = ACTIVITY_WINDOW_S,
    ) -> GpuActivity | None:
        rec = await metrics_reads.model_gpu_activity(info.context, _own_id(self), window_seconds)
        return GpuActivity.from_record(rec)

    @strawberry.field(
        description="The vLLM stats of the model's sampler pods (its `sampler` workers)."
    )
    async def sampling(
        self,
        info: Info,
        window_seconds: VllmWindow = VLLM_WINDOW_S,
    ) -> list[SamplerStats] | None:
        found = await metrics_reads.model_sampling(info.context, _own_id(self), window_seconds)
        return [SamplerStats.from_record(r) for r in found]


@strawberry.type
class SessionMetricsFields:
    """Metric fields of ``Session``."""

    @strawberry.field(
        description="The GPUs the session's models held over the last `windowSeconds`, "
        "with their duty weighted by the time held."
    )
    async def gpu_activity(
        self,
        info: Info,
        window_seconds: Window = ACTIVITY_WINDOW_S,
    ) -> GpuActivity | None:
        rec = await metrics_reads.session_gpu_activity(info.context, _own_id(self), window_seconds)
        return GpuActivity.from_record(rec)


@strawberry.type
class PlacementMetricsFields:
    """Metric fields of ``Placement``."""

    @strawberry.field(
        description="Duty of each recorded GPU over the last `windowSeconds` this "
        "placement held it: the window ends at the release (now while held) and starts "
        "no earlier than the admission; weighted by time."
    )
    async def gpu_duty(
        self,
        info: Info,
        window_seconds: PlacementWindow = DUTY_WINDOW_S,
    ) -> list[GpuDuty] | None:
        held = cast(_Held, self)
        found = await metrics_reads.placement_gpu_duty(
            info.context,
            held.gpu_ids,
            epoch(held.admitted_at),
            epoch(held.released_at),
            window_seconds,
        )
        return [GpuDuty.from_record(r) for r in found]


@strawberry.type
class WorkerMetricsFields:
    """Metric fields of ``Worker``."""

    @strawberry.field(description="Duty of each of the worker's GPUs over the window.")
    async def gpu_duty(
        self,
        info: Info,
        window_seconds: Window = DUTY_WINDOW_S,
    ) -> list[GpuDuty] | None:
        found = await metrics_reads.gpus_duty(
            info.context, cast(_Proc, self).gpu_ids, window_seconds
        )
        return [GpuDuty.from_record(r) for r in found]

    @strawberry.field(description="The vLLM stats of the worker's pod (samplers); null otherwise.")
    async def vllm(
        self,
        info: Info,
        window_seconds: VllmWindow = VLLM_WINDOW_S,
    ) -> VllmStats | None:
        rec = await metrics_reads.pod_vllm(info.context, cast(_Proc, self).pod, window_seconds)
        return VllmStats.from_record(rec) if rec else None


@strawberry.type
class GpuMetricsFields:
    """Metric fields of the Kubernetes ``GPU`` (by UUID; by node and index without one)."""

    @strawberry.field(description="Its mean DCGM duty over the window.")
    async def duty(self, info: Info, window_seconds: Window = DUTY_WINDOW_S) -> GpuDuty | None:
        dev = cast(_Device, self)._record
        rec = await metrics_reads.device_duty(
            info.context, dev.uuid, dev.node_name, dev.index, window_seconds
        )
        return GpuDuty.from_record(rec) if rec else None

    @strawberry.field(
        description="Its metric over time: from `start` (default an hour before `end`) to "
        "`end` (default now), a point per `step` seconds (at least 30 s, 1,000 points at "
        "most)."
    )
    async def series(
        self,
        info: Info,
        metric: ChartMetric = GpuChartMetric.DUTY,
        start: RangeStart = None,
        end: RangeEnd = None,
        step: Step = None,
    ) -> GpuSeries | None:
        dev = cast(_Device, self)._record
        key = metrics_reads.device_key(dev.uuid, dev.node_name, dev.index)
        if key is None:
            return None
        # strawberry.enum made each value its plain string (typed as its enum_value).
        name = cast(str, metric.value)
        rec = await metrics_reads.gpu_series(
            info.context, key, name, epoch(start), epoch(end), step
        )
        return GpuSeries.from_record(rec)


@strawberry.type
class NodeMetricsFields:
    """Metric fields of the Kubernetes ``Node``."""

    @strawberry.field(description="The mean DCGM duty of its GPUs over the window.")
    async def duty(self, info: Info, window_seconds: Window = DUTY_WINDOW_S) -> NodeDuty | None:
        found = await metrics_reads.node_duty(
            info.context, [cast(_Named, self).name], window_seconds
        )
        return NodeDuty.from_record(found[0])

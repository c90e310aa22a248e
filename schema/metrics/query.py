"""Root fields over GPU metrics (Prometheus): duty by GPU UUID or node, charts, and the
operators' guarded raw PromQL."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, cast

import strawberry
from openrl_inspect.resolvers.metrics import reads as metrics_reads
from openrl_inspect.schema.common import Info
from openrl_inspect.schema.metrics.types import (
    DUTY_WINDOW_S,
    ChartMetric,
    GpuChartMetric,
    GpuDuty,
    GpuSeries,
    NodeDuty,
    RangeEnd,
    RangeStart,
    RawQueryResult,
    Step,
    Window,
    epoch,
)


@strawberry.type
class MetricsQuery:
    @strawberry.field(
        description="Mean duty of each GPU (by device UUID) over the window, in the order "
        f"given (at most {metrics_reads.MAX_GPUS:,}); one Prometheus query per duty metric in all."
    )
    async def gpu_duty(
        self,
        info: Info,
        uuids: Annotated[
            list[str],
            strawberry.argument(description="GPU device UUIDs (each 1 to 256 characters)."),
        ],
        window_seconds: Window = DUTY_WINDOW_S,
    ) -> list[GpuDuty] | None:
        found = await metrics_reads.gpu_duty(info.context, uuids, window_seconds)
        return [GpuDuty.from_record(r) for r in found]

    @strawberry.field(
        description="One GPU's metric over time, for charts: from `start` (default an "
        "hour before `end`) to `end` (default now), a point per `step` seconds (raised "
        "to at least 30 s and to keep 1,000 points at most)."
    )
    async def gpu_series(
        self,
        info: Info,
        uuid: Annotated[str, strawberry.argument(description="The GPU's device UUID.")],
        metric: ChartMetric = GpuChartMetric.DUTY,
        start: RangeStart = None,
        end: RangeEnd = None,
        step: Step = None,
    ) -> GpuSeries | None:
        # strawberry.enum made each value its plain string (typed as its enum_value).
        name = cast(str, metric.value)
        rec = await metrics_reads.gpu_series(
            info.context, uuid, name, epoch(start), epoch(end), step
        )
        return GpuSeries.from_record(rec)

    @strawberry.field(
        description="Mean duty of each node's GPUs (DCGM `Hostname`) over the window."
    )
    async def node_duty(
        self,
        info: Info,
        nodes: Annotated[
            list[str],
            strawberry.argument(
                description=f"Node names, at most {metrics_reads.MAX_GPUS:,} "
                "(each 1 to 256 characters)."
            ),
        ],
        window_seconds: Window = DUTY_WINDOW_S,
    ) -> list[NodeDuty] | None:
        found = await metrics_reads.node_duty(info.context, nodes, window_seconds)
        return [NodeDuty.from_record(r) for r in found]

    @strawberry.field(
        description="Operators only (FORBIDDEN otherwise): a raw PromQL query, instant at "
        "`time` (default now) or over `start`..`end` by `step`. Off unless "
        "OPENRL_INSPECT_PROMETHEUS_RAW_QUERY "
        "is true (RAW_QUERY_DISABLED otherwise); range, step, range selectors, series and "
        "samples are capped (OPENRL_INSPECT_PROMETHEUS_RAW_MAX_*)."
    )
    async def prometheus_query(
        self,
        info: Info,
        query: Annotated[
            str,
            strawberry.argument(
                description="The PromQL, non-empty, at most "
                "OPENRL_INSPECT_PROMETHEUS_RAW_MAX_QUERY_BYTES (4,096) bytes."
            ),
        ],
        time: Annotated[
            datetime | None,
            strawberry.argument(
                description="Instant query: evaluate at (default now; not with a range)."
            ),
        ] = None,
        start: Annotated[
            datetime | None,
            strawberry.argument(
                description="Range query: its start, within "
                "OPENRL_INSPECT_PROMETHEUS_RAW_MAX_AGE_S (31 days) of now."
            ),
        ] = None,
        end: Annotated[
            datetime | None,
            strawberry.argument(
                description="Range query: its end (default now); at most "
                "OPENRL_INSPECT_PROMETHEUS_RAW_MAX_RANGE_S (1 day) after `start`."
            ),
        ] = None,
        step: Annotated[
            float | None,
            strawberry.argument(
                description="Range query: seconds between points, at least "
                "OPENRL_INSPECT_PROMETHEUS_RAW_MIN_STEP_S (15) and at most "
                "OPENRL_INSPECT_PROMETHEUS_RAW_MAX_POINTS (1,100) points; default: the "
                "smallest within both."
            ),
        ] = None,
    ) -> RawQueryResult | None:
        rec = await metrics_reads.prometheus_query(
            info.context, query, epoch(time), epoch(start), epoch(end), step
        )
        return RawQueryResult.from_record(rec)

"""Placement: where Kueue put a model, recorded so the history outlives the pods."""

from __future__ import annotations

from datetime import datetime

import strawberry
from openrl_inspect.schema.cluster.links import PlacementClusterFields
from openrl_inspect.schema.common import span, ts
from openrl_inspect.schema.metrics.fields import PlacementMetricsFields
from openrl_inspect.schema.shown import shows
from openrl_inspect.state.records import PlacementRecord


@shows(PlacementRecord)
@strawberry.type(
    description="Where Kueue put a model (Workload, node, pods, GPUs), as the placement "
    "tracker recorded it in Redis: history that outlives the pods, not live state."
)
class Placement(PlacementClusterFields, PlacementMetricsFields):
    id: strawberry.ID = strawberry.field(description="The placement's id.")
    model_id: strawberry.ID = strawberry.field(description="The model placed.")
    workload: str = strawberry.field(description="The Kueue Workload's name.")
    namespace: str = strawberry.field(description="The Kubernetes namespace of its objects.")
    pods: list[str] = strawberry.field(description="Names of the pods it started.")
    node: str = strawberry.field(description="The node its pods ran on.")
    gpu_ids: list[str] = strawberry.field(description="GPU device UUIDs it was given.")
    admitted_at: datetime | None = strawberry.field(
        description="When Kueue admitted the Workload (UTC)."
    )
    released_at: datetime | None = strawberry.field(
        description="When its GPUs were released (UTC); null while still held."
    )
    held_seconds: float | None = strawberry.field(
        description="From admitted to released; null while still held."
    )
    source: str = strawberry.field(description="Where this came from: `redis` (history).")

    @classmethod
    def from_record(cls, rec: PlacementRecord) -> Placement:
        return cls(
            id=strawberry.ID(rec.id),
            model_id=strawberry.ID(rec.model_id),
            workload=rec.workload,
            namespace=rec.namespace,
            pods=rec.pods,
            node=rec.node,
            gpu_ids=rec.gpu_ids,
            admitted_at=ts(rec.admitted_at),
            released_at=ts(rec.released_at),
            held_seconds=span(rec.admitted_at, rec.released_at),
            source="redis",
        )

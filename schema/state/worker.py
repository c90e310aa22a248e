"""Worker: a trainer or sampler process, known by its heartbeats."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.schema.cluster.links import WorkerClusterFields
from openrl_inspect.schema.common import Info, as_json, ts
from openrl_inspect.schema.metrics.fields import WorkerMetricsFields
from openrl_inspect.schema.shown import shown, shows
from openrl_inspect.state.records import WorkerRecord
from strawberry.scalars import JSON

if TYPE_CHECKING:
    from openrl_inspect.schema.state.model import Model

ModelT = Annotated["Model", strawberry.lazy("openrl_inspect.schema.state.model")]


@shows(WorkerRecord)
@strawberry.type(
    description="A trainer or sampler process, known by the heartbeats it writes to Redis."
)
class Worker(WorkerClusterFields, WorkerMetricsFields):
    id: strawberry.ID = strawberry.field(description="OpenRL's worker id.")
    role: str = strawberry.field(description="The worker's role: trainer or sampler.")
    pod: str = strawberry.field(description="The pod it runs in, as it reported (name only).")
    node: str = strawberry.field(description="The Kubernetes node it runs on, as it reported.")
    model_id: strawberry.ID | None = strawberry.field(
        description="The model it serves now; null when it serves none."
    )
    gpu_ids: list[str] = strawberry.field(description="The GPU UUIDs it reported using.")
    started_at: datetime | None = strawberry.field(description="When it started (UTC).")
    last_heartbeat_at: datetime | None = strawberry.field(
        description="Its last heartbeat (UTC); null when none was recorded."
    )

    _record: strawberry.Private[WorkerRecord]

    @strawberry.field(description="The last heartbeat's payload.")
    def payload(self) -> JSON:
        return as_json(self._record.payload.value())

    @classmethod
    def from_record(cls, rec: WorkerRecord) -> Worker:
        return cls(
            id=strawberry.ID(rec.id),
            role=rec.role,
            pod=rec.pod,
            node=rec.node,
            model_id=strawberry.ID(rec.model_id) if rec.model_id else None,
            gpu_ids=rec.gpu_ids,
            started_at=ts(rec.started_at),
            last_heartbeat_at=ts(rec.last_heartbeat_at),
            _record=rec,
        )

    @strawberry.field(description="Seconds since the last heartbeat, at the time of the query.")
    def heartbeat_age_seconds(self, info: Info) -> float | None:
        at = self._record.last_heartbeat_at
        return None if at is None else max(0.0, info.context.now - at)

    @strawberry.field(
        description="True while its last heartbeat is at most "
        "OPENRL_INSPECT_JUDGEMENT_HEARTBEAT_STALE_S (30 s unless set) old."
    )
    def alive(self, info: Info) -> bool:
        return state_reads.worker_alive(info.context, self._record)

    @strawberry.field(description="The model it serves now; null when none.")
    async def model(self, info: Info) -> ModelT | None:
        rec = await state_reads.model_of(info.context, self.model_id)
        return shown(rec) if rec else None

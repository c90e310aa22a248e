"""Op: one request a client made of a model (forward_backward, optim_step, sample...)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.schema.common import Info, OpHealth, as_json, span, ts
from openrl_inspect.schema.shown import shown, shows
from openrl_inspect.state.records import OpRecord
from strawberry.scalars import JSON

if TYPE_CHECKING:
    from openrl_inspect.schema.state.model import Model
    from openrl_inspect.schema.state.worker import Worker

ModelT = Annotated["Model", strawberry.lazy("openrl_inspect.schema.state.model")]
WorkerT = Annotated["Worker", strawberry.lazy("openrl_inspect.schema.state.worker")]


@shows(OpRecord)
@strawberry.type(
    description="One request a client made of a model (forward_backward, optim_step, "
    "sample...), OpenRL's op hash in Redis."
)
class Op:
    id: strawberry.ID = strawberry.field(description="OpenRL's op id.")
    model_id: strawberry.ID = strawberry.field(description="The model it was made of.")
    kind: str = strawberry.field(
        description="What it asked for: forward_backward, optim_step, sample..."
    )
    step: int | None = strawberry.field(
        description="The step number it belongs to; null when it belongs to none."
    )
    status: str = strawberry.field(
        description="Where the op is: accepted, queued, running, succeeded, failed or cancelled."
    )
    accepted_at: datetime | None = strawberry.field(description="When OpenRL accepted it (UTC).")
    enqueued_at: datetime | None = strawberry.field(
        description="When it was queued for a worker (UTC); null if never queued."
    )
    started_at: datetime | None = strawberry.field(
        description="When a worker started it (UTC); null until then."
    )
    finished_at: datetime | None = strawberry.field(
        description="When it finished, whatever the outcome (UTC); null until then."
    )
    queue_wait_seconds: float | None = strawberry.field(
        description="From enqueued (or accepted) to started, seconds; null until started."
    )
    duration_seconds: float | None = strawberry.field(
        description="From started to finished, seconds; null until finished."
    )
    worker_id: str | None = strawberry.field(
        description="The worker that took it; null until one did."
    )
    error: str | None = strawberry.field(
        description="The error it failed with, verbatim (text past 64 KiB is cut); null "
        "unless it failed."
    )

    _record: strawberry.Private[OpRecord]

    @strawberry.field(description="Metrics the worker reported for it (loss, tokens...).")
    def metrics(self) -> JSON:
        return as_json(self._record.metrics.value())

    @classmethod
    def from_record(cls, rec: OpRecord) -> Op:
        queued_from = rec.enqueued_at if rec.enqueued_at is not None else rec.accepted_at
        return cls(
            id=strawberry.ID(rec.id),
            model_id=strawberry.ID(rec.model_id),
            kind=rec.kind,
            step=rec.step,
            status=rec.status,
            accepted_at=ts(rec.accepted_at),
            enqueued_at=ts(rec.enqueued_at),
            started_at=ts(rec.started_at),
            finished_at=ts(rec.finished_at),
            queue_wait_seconds=span(queued_from, rec.started_at),
            duration_seconds=span(rec.started_at, rec.finished_at),
            worker_id=rec.worker_id,
            error=rec.error,
            _record=rec,
        )

    @strawberry.field(
        description="DONE, PENDING, RUNNING, STUCK (running past the stuck threshold on a "
        "live worker) or LOST (its worker stopped heartbeating before it finished)."
    )
    async def health(self, info: Info) -> OpHealth:
        return OpHealth(await state_reads.op_health(info.context, self._record))

    @strawberry.field(description="The worker that took it; null when none or its record is gone.")
    async def worker(self, info: Info) -> WorkerT | None:
        rec = await state_reads.worker_of(info.context, self.worker_id)
        return shown(rec) if rec else None

    @strawberry.field(description="The model it was made of.")
    async def model(self, info: Info) -> ModelT | None:
        rec = await state_reads.model_of(info.context, self.model_id)
        return shown(rec) if rec else None

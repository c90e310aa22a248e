"""Step: the ops a model ran for one step number, and the metrics the client reported."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.schema.common import Info, as_json, span, ts
from openrl_inspect.schema.connection import After, Connection, First
from openrl_inspect.schema.shown import shown, shows
from openrl_inspect.state.decode import JsonField
from openrl_inspect.state.records import StepRecord
from strawberry.scalars import JSON

if TYPE_CHECKING:
    from openrl_inspect.schema.state.op import Op

OpT = Annotated["Op", strawberry.lazy("openrl_inspect.schema.state.op")]


@shows(StepRecord)
@strawberry.type(
    description="One training step of a model: the ops it ran for that step number and "
    "the metrics the client reported (OpenRL's step hash in Redis)."
)
class Step:
    model_id: strawberry.ID = strawberry.field(description="The model it belongs to.")
    number: int = strawberry.field(description="The step number, from 0.")
    started_at: datetime | None = strawberry.field(
        description="When its first op arrived (UTC), as OpenRL recorded it."
    )
    finished_at: datetime | None = strawberry.field(
        description="When the client reported it finished (UTC); null until then."
    )
    duration_seconds: float | None = strawberry.field(
        description="From started to finished, seconds; null until finished."
    )
    op_count: int = strawberry.field(description="Ops recorded for this step.")

    _metrics: strawberry.Private[JsonField]

    @strawberry.field(description="Metrics the client reported for this step.")
    def metrics(self) -> JSON:
        return as_json(self._metrics.value())

    @classmethod
    def from_record(cls, rec: StepRecord) -> Step:
        return cls(
            model_id=strawberry.ID(rec.model_id),
            number=rec.step,
            started_at=ts(rec.started_at),
            finished_at=ts(rec.finished_at),
            duration_seconds=span(rec.started_at, rec.finished_at),
            op_count=rec.op_count,
            _metrics=rec.metrics,
        )

    @strawberry.field(description="The step's ops in the order they were accepted.")
    async def ops(self, info: Info, first: First = None, after: After = None) -> Connection[OpT]:
        page = await state_reads.step_ops(info.context, self.model_id, self.number, first, after)
        return Connection.of(page, shown)

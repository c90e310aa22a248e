"""Model: one LoRA training run on a base model, driven by ops step after step."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.schema.cluster.events import ModelEventFields
from openrl_inspect.schema.cluster.links import ModelClusterFields
from openrl_inspect.schema.common import Info, ModelState, StateTransition, as_json, ts
from openrl_inspect.schema.connection import After, Connection, First
from openrl_inspect.schema.logs.fields import ModelLogFields
from openrl_inspect.schema.metrics.fields import ModelMetricsFields
from openrl_inspect.schema.shown import shown, shows
from openrl_inspect.schema.state.sampling import ModelSamplingFields
from openrl_inspect.schema.summary.model import ModelSummaryFields
from openrl_inspect.schema.timeline.types import ModelTimelineFields
from openrl_inspect.state.records import ModelRecord
from strawberry.scalars import JSON

if TYPE_CHECKING:
    from openrl_inspect.schema.state.op import Op
    from openrl_inspect.schema.state.placement import Placement
    from openrl_inspect.schema.state.session import Session
    from openrl_inspect.schema.state.step import Step
    from openrl_inspect.schema.state.worker import Worker

SessionT = Annotated["Session", strawberry.lazy("openrl_inspect.schema.state.session")]
StepT = Annotated["Step", strawberry.lazy("openrl_inspect.schema.state.step")]
OpT = Annotated["Op", strawberry.lazy("openrl_inspect.schema.state.op")]
WorkerT = Annotated["Worker", strawberry.lazy("openrl_inspect.schema.state.worker")]
PlacementT = Annotated["Placement", strawberry.lazy("openrl_inspect.schema.state.placement")]


@shows(ModelRecord)
@strawberry.type(
    description="A model: one LoRA training run on a base model, driven by ops step after "
    "step; its record is OpenRL's model hash in Redis, the cluster and metrics fields "
    "follow it to Kubernetes, Prometheus and Cloud Logging."
)
class Model(
    ModelSummaryFields,
    ModelClusterFields,
    ModelMetricsFields,
    ModelLogFields,
    ModelSamplingFields,
    ModelEventFields,
    ModelTimelineFields,
):
    id: strawberry.ID = strawberry.field(description="OpenRL's model id (Redis).")
    session_id: strawberry.ID = strawberry.field(
        description="The id of the session that created it (Redis)."
    )
    base_model: str = strawberry.field(
        description="The base model the LoRA adapter trains on, as the client named it."
    )
    state: ModelState = strawberry.field(description="Its lifecycle state now (Redis).")

    _record: strawberry.Private[ModelRecord]

    @classmethod
    def from_record(cls, rec: ModelRecord) -> Model:
        return cls(
            id=strawberry.ID(rec.id),
            session_id=strawberry.ID(rec.session_id),
            base_model=rec.base_model,
            state=ModelState(rec.state),
            _record=rec,
        )

    # The other fields read the record when asked, rather than in ``from_record``: a
    # cluster view makes a model for each of thousands of GPU holders and asks for its
    # id and state alone; sorting the transitions and converting times cost most of
    # making one. Methods, not attributes, keep the schema's field order (Strawberry
    # lists a type's methods after its attributes).
    @strawberry.field(description="When it entered `state` (UTC); null when not recorded.")
    def state_since(self) -> datetime | None:
        return ts(self._record.state_at)

    @strawberry.field(description="When OpenRL created it (UTC); null when not recorded.")
    def created_at(self) -> datetime | None:
        return ts(self._record.created_at)

    @strawberry.field(description="The last time the model entered each state, in time order.")
    def transitions(self) -> list[StateTransition]:
        entered = sorted(self._record.transitions.items(), key=lambda kv: kv[1])
        return [
            StateTransition(state=ModelState(s), at=ts(at))  # type: ignore[arg-type]
            for s, at in entered
        ]

    @strawberry.field(
        description="Why OpenRL marked it failed, verbatim (up to 64 KiB); null unless FAILED."
    )
    def failure_reason(self) -> str | None:
        return self._record.failure_reason

    @strawberry.field(description="Highest step number recorded.")
    def latest_step(self) -> int | None:
        return self._record.latest_step

    @strawberry.field(description="Steps taken (steps are numbered from 0).")
    def step_count(self) -> int:
        latest = self._record.latest_step
        return 0 if latest is None else latest + 1

    @strawberry.field(description="Steps still kept after retention trimming.")
    def kept_steps(self) -> int:
        return self._record.kept_steps

    @strawberry.field(description="LoRA configuration (rank, alpha, targets...).")
    def lora(self) -> JSON:
        return as_json(self._record.lora.value())

    @strawberry.field(
        description="The training settings the client gave (learning rate, batch size...), "
        "as stored in Redis."
    )
    def settings(self) -> JSON:
        return as_json(self._record.settings.value())

    @strawberry.field(description="The session that created it; null when its record is gone.")
    async def session(self, info: Info) -> SessionT | None:
        rec = await info.context.state.sessions.load(self.session_id)
        return shown(rec) if rec else None

    @strawberry.field(description="Steps, newest first.")
    async def steps(
        self, info: Info, first: First = None, after: After = None
    ) -> Connection[StepT]:
        page = await state_reads.model_steps(info.context, self.id, first, after)
        return Connection.of(page, shown)

    @strawberry.field(description="One step by number; null when not kept.")
    async def step(
        self,
        info: Info,
        number: Annotated[int, strawberry.argument(description="The step number, from 0.")],
    ) -> StepT | None:
        rec = await state_reads.model_step(info.context, self.id, number)
        return shown(rec) if rec else None

    @strawberry.field(
        description="Ops accepted but not finished, oldest first: look here for stuck "
        "and lost ops (see Op.health)."
    )
    async def open_ops(
        self, info: Info, first: First = None, after: After = None
    ) -> Connection[OpT]:
        page = await state_reads.open_ops(info.context, self.id, first, after)
        return Connection.of(page, shown)

    @strawberry.field(description="Workers that served this model, most recently seen first.")
    async def workers(
        self, info: Info, first: First = None, after: After = None
    ) -> Connection[WorkerT]:
        page = await state_reads.model_workers(info.context, self.id, first, after)
        return Connection.of(page, shown)

    @strawberry.field(description="Placements recorded in Redis (history), newest first.")
    async def placements(
        self, info: Info, first: First = None, after: After = None
    ) -> Connection[PlacementT]:
        page = await state_reads.placements(info.context, self.id, first, after)
        return Connection.of(page, shown)

"""Summaries for agents: one field answers "is this model progressing, and if not why"."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import strawberry
from openrl_inspect.core import domain
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.resolvers.diagnosis import Diagnosis
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.summary import model as summary_model
from openrl_inspect.schema.common import Info, ts
from openrl_inspect.schema.summary.budget import MODEL_SUMMARY_TOKENS, fitted
from openrl_inspect.schema.summary.diagnosis import Cause, Describe, UnknownBackend

Verdict = domain.Verdict
PACE = (
    "Finished steps per minute over a window that ends now (from the start of the oldest "
    "step considered). Null when the model failed or ended, has finished no step, or has "
    "stalled: `secondsSinceLastStep` then says how long since its last step."
)
strawberry.enum(Verdict, name="Verdict", description="A model's condition, most serious first.")


@strawberry.type
class OpKindStats:
    kind: str
    count: int
    failed: int
    median_duration_seconds: float | None
    p90_duration_seconds: float | None
    median_queue_wait_seconds: float | None


@strawberry.type
class OpError:
    op_id: strawberry.ID
    kind: str
    step: int | None
    error: str
    at: datetime | None


@strawberry.type(
    description="A compact rollup of a model over its most recent steps, and its diagnosis: "
    "one verdict and the ranked causes, from every backend."
)
class ModelSummary:
    verdict: Verdict
    reasons: list[str] = strawberry.field(
        description="Why, most serious first: the causes' statements (or the verdict in "
        "words), then the backends that could not be judged."
    )
    causes: list[Cause] = strawberry.field(
        description="Why the model is slow, stuck, waiting or dead, most blocking first "
        "(at most 6); empty for a healthy model."
    )
    causes_left_off: int = strawberry.field(description="Causes found beyond those listed.")
    unknown: list[UnknownBackend] = strawberry.field(
        description="Backends not configured or failing: their causes are unknown, not absent."
    )
    steps_considered: int
    steps_per_minute: float | None = strawberry.field(description=PACE)
    median_step_seconds: float | None
    last_step_at: datetime | None
    seconds_since_last_step: float | None
    waiting_seconds: float | None = strawberry.field(
        description="Time in waiting/placed so far, for a model not running yet."
    )
    op_kinds: list[OpKindStats]
    failed_ops: int
    last_error: OpError | None
    open_ops: int
    stuck_ops: int
    lost_ops: int
    oldest_open_op_seconds: float | None
    workers_alive: int
    workers_total: int

    @classmethod
    def from_record(
        cls, s: summary_model.ModelSummary, describe: Describe | None = None
    ) -> ModelSummary:
        err = s.last_error
        d = s.diagnosis
        return cls(
            verdict=Verdict(s.verdict),
            reasons=s.reasons,
            causes=[Cause.from_record(s.model.id, c, describe) for c in d.causes],
            causes_left_off=d.left_off,
            unknown=[UnknownBackend.from_record(u) for u in d.unknown],
            steps_considered=s.steps_considered,
            steps_per_minute=s.steps_per_minute,
            median_step_seconds=s.median_step_s,
            last_step_at=ts(s.last_step_at),
            seconds_since_last_step=s.seconds_since_last_step,
            waiting_seconds=s.waiting_s,
            op_kinds=[
                OpKindStats(
                    kind=k.kind,
                    count=k.count,
                    failed=k.failed,
                    median_duration_seconds=k.median_duration_s,
                    p90_duration_seconds=k.p90_duration_s,
                    median_queue_wait_seconds=k.median_queue_wait_s,
                )
                for k in s.kinds
            ],
            failed_ops=s.failed_ops,
            last_error=(
                OpError(
                    op_id=strawberry.ID(err.op_id),
                    kind=err.kind,
                    step=err.step,
                    error=err.error,
                    at=ts(err.at),
                )
                if err
                else None
            ),
            open_ops=s.open_ops,
            stuck_ops=s.stuck_ops,
            lost_ops=s.lost_ops,
            oldest_open_op_seconds=s.oldest_open_op_s,
            workers_alive=s.workers_alive,
            workers_total=s.workers_total,
        )


@strawberry.type
class ModelSummaryFields:
    id: strawberry.ID  # the model's; declared so the mixin can use it

    @strawberry.field(
        description="Pace, failures, stuck and lost ops over the last `steps` steps, "
        "with one verdict. Made for agents: one field instead of walking steps and ops."
    )
    async def summary(self, info: Info, steps: int = 20) -> ModelSummary:
        if not 1 <= steps <= info.context.bounds.max_page_size:
            raise InvalidInput(f"steps must be between 1 and {info.context.bounds.max_page_size}")
        ctx = info.context
        rec = await state_reads.model(ctx, self.id)
        found = await summary_model.model_summary(ctx, rec, steps)

        def render(d: Diagnosis) -> ModelSummary:
            trial = replace(found, diagnosis=d, reasons=summary_model.reasons(d, found.waiting_s))
            return ModelSummary.from_record(trial, ctx.logs.describe)

        return fitted(found.diagnosis, render, MODEL_SUMMARY_TOKENS)

"""Summaries for agents: one field answers "is this model progressing, and if not why"."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Annotated

import strawberry
from openrl_inspect.core import domain
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.resolvers.diagnosis import Diagnosis
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.summary import model as summary_model
from openrl_inspect.schema.common import Info, domain_enum, ts
from openrl_inspect.schema.summary.budget import MODEL_SUMMARY_TOKENS, fitted
from openrl_inspect.schema.summary.diagnosis import Cause, Describe, UnknownBackend

Verdict = domain.Verdict
PACE = (
    "Finished steps per minute over a window that ends now (from the start of the oldest "
    "step considered). Null when the model failed or ended, has finished no step, or has "
    "stalled: `secondsSinceLastStep` then says how long since its last step."
)
domain_enum(
    Verdict,
    name="Verdict",
    description="A model's condition, most serious first, judged from Redis state "
    "(causes from other backends never make it worse than the state shows).",
    values={
        Verdict.FAILED: "OpenRL marked the model failed.",
        Verdict.LOST_OPS: "Some open op is LOST: started on a worker that stopped heartbeating.",
        Verdict.STUCK: "Some open op is STUCK: running past the stuck threshold.",
        Verdict.STALLED: "Active, but no step finished for over 10 of its median steps "
        "(and at least 120 s).",
        Verdict.WAITING: "Waiting for GPUs or for its workers (state WAITING or PLACED).",
        Verdict.IDLE: "Active, but no step has finished yet.",
        Verdict.SLOW: "Progressing, but a slow cause was found (trainer, sampler, client, "
        "pace regression or an idle reservation).",
        Verdict.PROGRESSING: "Active and finishing steps at its usual pace.",
        Verdict.ENDED: "Training ended normally.",
    },
)


@strawberry.type(
    description="The ops of one kind over the summary's steps (Redis), the 12 most "
    "frequent kinds at most."
)
class OpKindStats:
    kind: str = strawberry.field(description="The op kind (forward_backward, optim_step...).")
    count: int = strawberry.field(description="Ops of this kind in the steps considered.")
    failed: int = strawberry.field(description="Of those, ops with status failed.")
    median_duration_seconds: float | None = strawberry.field(
        description="Median from started to finished, seconds; null when none finished."
    )
    p90_duration_seconds: float | None = strawberry.field(
        description="90th percentile from started to finished, seconds."
    )
    median_queue_wait_seconds: float | None = strawberry.field(
        description="Median from enqueued (or accepted) to started, seconds."
    )


@strawberry.type(description="The failed op that finished last, as a summary quotes it.")
class OpError:
    op_id: strawberry.ID = strawberry.field(description="The op's id (see `op(id:)`).")
    kind: str = strawberry.field(description="The op's kind.")
    step: int | None = strawberry.field(description="Its step number, if it had one.")
    error: str = strawberry.field(description="Its error, cut to 300 characters.")
    at: datetime | None = strawberry.field(description="When it finished (UTC).")


@strawberry.type(
    description="A compact rollup of a model over its most recent steps, and its diagnosis: "
    "one verdict and the ranked causes, from every backend."
)
class ModelSummary:
    verdict: Verdict = strawberry.field(description="The model's condition now.")
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
    steps_considered: int = strawberry.field(
        description="Steps read: the newest `steps` kept in Redis (fewer if fewer are kept)."
    )
    steps_per_minute: float | None = strawberry.field(description=PACE)
    median_step_seconds: float | None = strawberry.field(
        description="Median duration of the finished steps, seconds."
    )
    last_step_at: datetime | None = strawberry.field(
        description="When the newest finished step ended (UTC)."
    )
    seconds_since_last_step: float | None = strawberry.field(
        description="From `lastStepAt` to now, seconds."
    )
    waiting_seconds: float | None = strawberry.field(
        description="Time in waiting/placed so far, for a model not running yet."
    )
    op_kinds: list[OpKindStats] = strawberry.field(
        description="Per op kind over the steps considered (at most 12 kinds)."
    )
    failed_ops: int = strawberry.field(description="Failed ops in the steps considered.")
    last_error: OpError | None = strawberry.field(
        description="The failed op that finished last among them; null when none failed."
    )
    open_ops: int = strawberry.field(description="Ops accepted and not finished (all of them).")
    stuck_ops: int = strawberry.field(
        description="STUCK ops among the 100 oldest open ones (see `Op.health`)."
    )
    lost_ops: int = strawberry.field(description="LOST ops among the 100 oldest open ones.")
    oldest_open_op_seconds: float | None = strawberry.field(
        description="Age of the oldest open op since accepted, seconds; null when none."
    )
    workers_alive: int = strawberry.field(
        description="Of its workers (up to 100, newest first), those heartbeating."
    )
    workers_total: int = strawberry.field(
        description="Workers that served it (up to 100, most recently seen first)."
    )

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
    async def summary(
        self,
        info: Info,
        steps: Annotated[
            int,
            strawberry.argument(
                description="How many of the newest steps to judge, 1 to "
                "OPENRL_INSPECT_LIMITS_MAX_PAGE_SIZE (100 unless set)."
            ),
        ] = 20,
    ) -> ModelSummary:
        if not 1 <= steps <= info.context.bounds.max_page_size:
            raise InvalidInput(f"steps must be between 1 and {info.context.bounds.max_page_size}")
        ctx = info.context
        rec = await state_reads.model(ctx, self.id)
        found = await summary_model.model_summary(ctx, rec, steps)

        def render(d: Diagnosis) -> ModelSummary:
            trial = replace(found, diagnosis=d, reasons=summary_model.reasons(d, found.waiting_s))
            return ModelSummary.from_record(trial, ctx.logs.describe)

        return fitted(found.diagnosis, render, MODEL_SUMMARY_TOKENS)

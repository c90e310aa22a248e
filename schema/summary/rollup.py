"""Rollups for agents and people: a session's summary, and the models that need a person."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.resolvers.summary import model as summary_model
from openrl_inspect.resolvers.summary import rollup as summary_rollup
from openrl_inspect.resolvers.summary.rollup import MAX_WORST
from openrl_inspect.schema.common import Info
from openrl_inspect.schema.shown import shown
from openrl_inspect.schema.summary.diagnosis import Cause, Describe, UnknownBackend
from openrl_inspect.schema.summary.model import PACE, Verdict

if TYPE_CHECKING:
    from openrl_inspect.schema.state.model import Model

ModelT = Annotated["Model", strawberry.lazy("openrl_inspect.schema.state.model")]


@strawberry.type(description="A model in one line: its verdict, its top cause, its pace.")
class ModelBrief:
    model: ModelT = strawberry.field(description="The model.")
    verdict: Verdict = strawberry.field(description="Its condition now.")
    top_cause: Cause | None = strawberry.field(description="The most blocking cause.")
    causes: int = strawberry.field(description="How many causes its summary has in all.")
    steps_per_minute: float | None = strawberry.field(description=PACE)
    failed_ops: int = strawberry.field(description="Failed ops in its last 10 steps.")
    lost_ops: int = strawberry.field(description="LOST ops among its 100 oldest open ones.")
    stuck_ops: int = strawberry.field(description="STUCK ops among its 100 oldest open ones.")
    waiting_seconds: float | None = strawberry.field(
        description="Time in WAITING or PLACED so far, seconds; null for a model running or done."
    )

    @classmethod
    def from_record(cls, s: summary_model.ModelSummary, describe: Describe | None) -> ModelBrief:
        d = s.diagnosis
        top = d.causes[0] if d.causes else None
        return cls(
            model=shown(s.model),
            verdict=Verdict(s.verdict),
            top_cause=None if top is None else Cause.from_record(s.model.id, top, describe),
            causes=len(d.causes) + d.left_off,
            steps_per_minute=s.steps_per_minute,
            failed_ops=s.failed_ops,
            lost_ops=s.lost_ops,
            stuck_ops=s.stuck_ops,
            waiting_seconds=s.waiting_s,
        )


@strawberry.type(description="How many of the summarised models have one verdict.")
class VerdictCount:
    verdict: Verdict = strawberry.field(description="The verdict.")
    count: int = strawberry.field(description="Models with it.")


@strawberry.type(description="A session's models rolled up over their recent steps.")
class SessionSummary:
    models: int = strawberry.field(description="Models summarised (one page, newest first).")
    truncated: bool = strawberry.field(description="The session has more models than that.")
    by_verdict: list[VerdictCount] = strawberry.field(
        description="Models per verdict, each judged over its last 10 steps."
    )
    worst: list[ModelBrief] = strawberry.field(
        description="The models that most need a person, each with its top cause."
    )
    failed_ops: int = strawberry.field(description="Failed ops in its models' last 10 steps.")
    lost_ops: int = strawberry.field(description="LOST open ops over its models.")
    stuck_ops: int = strawberry.field(description="STUCK open ops over its models.")
    steps_per_minute: float | None = strawberry.field(
        description="The moving models' paces added up."
    )
    median_step_seconds: float | None = strawberry.field(
        description="The median of the moving models' median step durations, seconds."
    )
    unknown: list[UnknownBackend] = strawberry.field(
        description="Backends that could not be judged for some model, each once."
    )

    @classmethod
    def from_record(
        cls, s: summary_rollup.SessionSummary, describe: Describe | None
    ) -> SessionSummary:
        return cls(
            models=s.models,
            truncated=s.truncated,
            by_verdict=[VerdictCount(verdict=Verdict(v), count=n) for v, n in s.by_verdict],
            worst=[ModelBrief.from_record(m, describe) for m in s.worst],
            failed_ops=s.failed_ops,
            lost_ops=s.lost_ops,
            stuck_ops=s.stuck_ops,
            steps_per_minute=s.steps_per_minute,
            median_step_seconds=s.median_step_s,
            unknown=[UnknownBackend.from_record(u) for u in s.unknown],
        )


@strawberry.type(description="The models that most need a person, most urgent first.")
class Attention:
    models: list[ModelBrief] = strawberry.field(
        description="The first `first` models in need from `after`, most urgent first."
    )
    scanned: int = strawberry.field(
        description="Models looked at: every live model (read by its last progress, its "
        "last failed op, its pace and its open ops, from the recorder's indexes) and every "
        "model failed in the last day."
    )
    needing: int = strawberry.field(description="How many need a person, on every page.")
    remaining: int = strawberry.field(description="Of those, how many come after this page.")
    has_next_page: bool = strawberry.field(description="Whether `remaining` is above zero.")
    end_cursor: str | None = strawberry.field(description="`after` for the next page.")
    truncated: bool = strawberry.field(
        description="More candidates of one kind (quiet, recently failed, with failing ops, "
        "slowed down, with an op open too long) than one answer judges."
    )


@strawberry.type
class SessionSummaryFields:
    id: strawberry.ID  # the session's; declared so the mixin can use it

    @strawberry.field(
        description="Its models rolled up: counts by verdict, the worst ones with their top "
        "cause, pace, failed, lost and stuck ops. One page of its newest models."
    )
    async def summary(
        self,
        info: Info,
        worst: Annotated[
            int,
            strawberry.argument(
                description=f"How many of the worst models to list, 1 to {MAX_WORST}."
            ),
        ] = 5,
    ) -> SessionSummary:
        ctx = info.context
        found = await summary_rollup.session_summary(ctx, self.id, worst)
        return SessionSummary.from_record(found, ctx.logs.describe)


@strawberry.type
class SummaryQuery:
    @strawberry.field(
        description="The models that most need a person, ranked: failed, lost, stuck, "
        "stalled, waiting, slow, then progressing with ops failing. Looks at every live "
        "model: those quiet for longer than the heartbeat timeout, those still moving with "
        "an op failed in the last hour, steps slower than their own past or an op open "
        "past the stuck threshold (from the recorder's indexes), and those failed in the "
        "last day, are judged in full; paged with `after`."
    )
    async def attention(
        self,
        info: Info,
        first: Annotated[
            int,
            strawberry.argument(description=f"How many models to return, 1 to {MAX_WORST}."),
        ] = 10,
        after: Annotated[
            str | None,
            strawberry.argument(description="The `endCursor` of the previous page, to go on."),
        ] = None,
        scan: Annotated[
            int | None,
            strawberry.argument(
                description="Ignored (every live model is looked at now).",
                deprecation_reason="Every live model is looked at now.",
            ),
        ] = None,
    ) -> Attention:
        ctx = info.context
        found = await summary_rollup.attention(ctx, first, after)
        return Attention(
            models=[ModelBrief.from_record(m, ctx.logs.describe) for m in found.models],
            scanned=found.scanned,
            needing=found.needing,
            remaining=found.remaining,
            has_next_page=found.has_next,
            end_cursor=found.end_cursor,
            truncated=found.truncated,
        )

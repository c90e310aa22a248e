"""Rollups over many models: a session's summary, and the models that most need a person.

Both summarise every model they consider through ``model_summary``, side by side, so
the loaders batch each level across all of them: the backend calls of a rollup do not
grow with its number of models. Both are bounded (a page of models) and say so.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from openrl_inspect.core.domain import TERMINAL_STATES, ModelState, Verdict
from openrl_inspect.core.errors import BadRecord, InvalidInput
from openrl_inspect.resolvers import scope
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis import Unknown
from openrl_inspect.resolvers.diagnosis.rank import DEAD, LOST, TIERS
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.summary.model import ModelSummary, model_summary
from openrl_inspect.state.filters import LiveAsk
from openrl_inspect.state.paging import Position, decode_cursor, encode_cursor
from openrl_inspect.state.records import ModelRecord

# Verdicts that need nobody: the model moves (or is over).
FINE = frozenset({Verdict.PROGRESSING, Verdict.ENDED})
# The most models a session's worst list and the attention list hold: the GraphQL
# arguments, the REST routes' and the MCP tools' bounds all read it.
MAX_WORST = 20
RECENT_FAILURE_S = 86_400.0  # a failed model needs a person for a day, then it is history
ROLLUP_STEPS = 10  # the recent steps each model of a rollup is judged over
# Attention's window: enough steps for a pace baseline (the diagnosis compares its newest
# 5 step times with at least 8 before them), so a model slowing down is judged SLOW.
ATTENTION_STEPS = 16


def need_order(now: float, s: ModelSummary) -> tuple[int, int, float]:
    """Most in need first: the verdict's seriousness, then the top cause's rank, then
    the longest standing."""
    severity = list(Verdict).index(s.verdict)
    top = s.diagnosis.causes[0] if s.diagnosis.causes else None
    rank = top.rank if top else 1_000
    since = top.since if top and top.since is not None else now
    return severity, rank, since


def needs_person(s: ModelSummary) -> bool:
    """Not fine, or progressing while its work fails or is lost: a model stepping on
    while its ops keep failing is judged PROGRESSING (the verdict follows its steps) with
    a failed-ops cause, and needs a person all the same."""
    if s.verdict not in FINE:
        return True
    return s.verdict == Verdict.PROGRESSING and any(
        TIERS[c.kind] in (DEAD, LOST) for c in s.diagnosis.causes
    )


def ranked(now: float, summaries: Sequence[ModelSummary]) -> list[ModelSummary]:
    return sorted((s for s in summaries if needs_person(s)), key=lambda s: need_order(now, s))


def unknown_backends(summaries: Sequence[ModelSummary]) -> list[Unknown]:
    """Each backend that could not be judged, once (the first model's reason)."""
    seen: dict[str, Unknown] = {}
    for s in summaries:
        for u in s.diagnosis.unknown:
            seen.setdefault(u.backend, u)
    return list(seen.values())


def check_count(name: str, value: int, high: int) -> int:
    if not 1 <= value <= high:
        raise InvalidInput(f"{name} must be between 1 and {high}")
    return value


async def summarise_all(
    ctx: Context, models: Sequence[ModelRecord], steps: int = ROLLUP_STEPS
) -> list[ModelSummary]:
    return list(await asyncio.gather(*(model_summary(ctx, m, steps) for m in models)))


@dataclass(frozen=True)
class SessionSummary:
    models: int
    truncated: bool  # the session has more models than one page summarises
    by_verdict: list[tuple[Verdict, int]]
    worst: list[ModelSummary]
    failed_ops: int
    lost_ops: int
    stuck_ops: int
    steps_per_minute: float | None  # the moving models' paces, added up
    median_step_s: float | None  # the median of their median steps
    unknown: list[Unknown]


async def session_summary(ctx: Context, sid: str, worst: int) -> SessionSummary:
    check_count("worst", worst, MAX_WORST)
    page = await state_reads.session_models(ctx, sid, ctx.bounds.max_page_size, None)
    summaries = await summarise_all(ctx, page.readable())
    counts = Counter(s.verdict for s in summaries)
    moving = [s for s in summaries if s.verdict in (Verdict.PROGRESSING, Verdict.SLOW)]
    paces = [s.steps_per_minute for s in moving if s.steps_per_minute is not None]
    steps = [s.median_step_s for s in moving if s.median_step_s is not None]
    return SessionSummary(
        models=len(summaries),
        truncated=page.has_next,
        by_verdict=[(v, counts[v]) for v in Verdict if counts[v]],
        worst=ranked(ctx.now, summaries)[:worst],
        failed_ops=sum(s.failed_ops for s in summaries),
        lost_ops=sum(s.lost_ops for s in summaries),
        stuck_ops=sum(s.stuck_ops for s in summaries),
        steps_per_minute=sum(paces) if paces else None,
        median_step_s=statistics.median(steps) if steps else None,
        unknown=unknown_backends(summaries),
    )


@dataclass(frozen=True)
class Attention:
    models: list[ModelSummary]
    # every live model (read by its last progress, its last failed op and its pace) and
    # every model failed in the last day: the models looked at, so ``needing`` never
    # exceeds it
    scanned: int
    needing: int  # how many need a person, this page and the next ones
    truncated: bool  # more candidates of one kind (quiet, failed, failing, slow, hung) than judged
    end_cursor: str | None
    has_next: bool
    offset: int = 0  # of this page's first model among those needing a person

    @property
    def remaining(self) -> int:
        """Of those needing a person, how many come after this page."""
        return max(0, self.needing - self.offset - len(self.models))


# The most candidates of each kind (quiet, recently failed, failing, slow, open too
# long) one answer judges.
MAX_JUDGED = 2_000
_CURSOR = "attention"


def _offset(after: str | None) -> int:
    if after is None:
        return 0
    pos = decode_cursor(_CURSOR, after)
    if pos.score < 0 or pos.score != int(pos.score) or pos.member:
        raise InvalidInput("invalid cursor for attention")
    return int(pos.score)


async def attention(ctx: Context, first: int, after: str | None = None) -> Attention:
    """The models that most need a person, over every live model.

    The live index scores each live model by its last progress (an op accepted,
    started or finished, step metrics, a state change), so the models that stopped
    (stuck, stalled, lost ops, waiting, idle) are those quiet for longer than a heartbeat
    timeout: read by score, never by scanning every model. The models that keep moving
    but may need a person are read the same way from the indexes the recorder keeps as
    it writes: those with an op failed lately, those whose newest steps are slower than
    their earlier ones past the inspector's ratio, and those with an op open longer
    than the stuck threshold (every model's open ops in one index). Those, and the models failed in
    the last day, are judged in full by the model's summary and ranked; ``first`` from
    ``after`` are shown.
    """
    check_count("first", first, MAX_WORST)
    offset = _offset(after)
    t = ctx.thresholds
    ask = LiveAsk(
        quiet_before=ctx.now - t.heartbeat_stale_s,
        failed_since=ctx.now - RECENT_FAILURE_S,
        cap=MAX_JUDGED + 1,
        failing_since=ctx.now - t.failing_within_s,
        slow_above=t.slow_pace_ratio,
        open_before=ctx.now - t.stuck_after_s,
    )
    found = await ctx.state.live_models.load(ask)
    open_too_long = [p.member for p in found.open_ops[:MAX_JUDGED]]
    hung = await ctx.state.op_models.load_many(open_too_long) if open_too_long else []
    lists = (found.quiet, found.failed, found.failing, found.slow, found.open_ops)
    listed = [p.member for part in (found.quiet, found.failed) for p in part[:MAX_JUDGED]]
    moving = [p.member for p in found.failing[:MAX_JUDGED] + found.slow[:MAX_JUDGED]]
    moving += [mid for mid in hung if mid is not None]
    records = await ctx.state.models.load_each(list(dict.fromkeys(listed + moving)), BadRecord)
    quiet_or_failed = set(listed)
    models = [
        r
        for r in records
        # a moving model's entry may outlive its life (a late record): live ones only
        if isinstance(r, ModelRecord)
        and (r.id in quiet_or_failed or r.state not in TERMINAL_STATES)
    ]
    live = found.live
    if not scope.sees_everything(ctx):
        seen = await scope.visible_model_ids(ctx, (m.id for m in models))
        models = [m for m in models if m.id in seen]
        live = await _live_of_viewer(ctx)
    failed = sum(1 for m in models if m.state == ModelState.FAILED)
    summaries = await summarise_all(ctx, models, ATTENTION_STEPS)
    needing = ranked(ctx.now, summaries)
    page = needing[offset : offset + first]
    end = offset + len(page)
    return Attention(
        models=page,
        scanned=live + failed,
        needing=len(needing),
        truncated=any(len(part) > MAX_JUDGED for part in lists),
        end_cursor=encode_cursor(_CURSOR, Position(end, "")) if page else after,
        has_next=end < len(needing),
        offset=offset,
    )


async def _live_of_viewer(ctx: Context) -> int:
    """A viewer's live models, counted from its owners' indexes."""
    pages = await asyncio.gather(
        *(
            state_reads.models(ctx, state=state, first=0, after=None)
            for state in (ModelState.WAITING, ModelState.PLACED, ModelState.ACTIVE)
        )
    )
    return sum(p.total for p in pages)

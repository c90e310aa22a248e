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

from openrl_inspect.core.domain import ModelState, Verdict
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis import Unknown
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.summary.model import ModelSummary, model_summary
from openrl_inspect.state.records import ModelRecord

# Verdicts that need nobody: the model moves (or is over).
FINE = frozenset({Verdict.PROGRESSING, Verdict.ENDED})
# The states a search for models in need looks at; failed ones only while recent.
SEARCHED_STATES = (ModelState.ACTIVE, ModelState.PLACED, ModelState.WAITING, ModelState.FAILED)
# The most models a session's worst list and the attention list hold: the GraphQL
# arguments, the REST routes' and the MCP tools' bounds all read it.
MAX_WORST = 20
RECENT_FAILURE_S = 86_400.0  # a failed model needs a person for a day, then it is history
ROLLUP_STEPS = 10  # the recent steps each model of a rollup is judged over


def need_order(now: float, s: ModelSummary) -> tuple[int, int, float]:
    """Most in need first: the verdict's seriousness, then the top cause's rank, then
    the longest standing."""
    severity = list(Verdict).index(s.verdict)
    top = s.diagnosis.causes[0] if s.diagnosis.causes else None
    rank = top.rank if top else 1_000
    since = top.since if top and top.since is not None else now
    return severity, rank, since


def ranked(now: float, summaries: Sequence[ModelSummary]) -> list[ModelSummary]:
    return sorted((s for s in summaries if s.verdict not in FINE), key=lambda s: need_order(now, s))


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


async def summarise_all(ctx: Context, models: Sequence[ModelRecord]) -> list[ModelSummary]:
    return list(await asyncio.gather(*(model_summary(ctx, m, ROLLUP_STEPS) for m in models)))


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
    scanned: int
    needing: int  # of the scanned models, how many need a person
    truncated: bool  # more models were in those states than were scanned


async def attention(ctx: Context, first: int, scan: int) -> Attention:
    """The models that most need a person: the newest ``scan`` models of each live
    state (and the recently failed), judged, ranked, the first ``first``."""
    check_count("first", first, MAX_WORST)
    check_count("scan", scan, ctx.bounds.max_page_size)
    pages = await asyncio.gather(
        *(state_reads.models_in_state(ctx, state, scan, None) for state in SEARCHED_STATES)
    )
    recent = ctx.now - RECENT_FAILURE_S
    models = list(
        {
            m.id: m
            for page in pages
            for m in page.readable()
            if m.state != ModelState.FAILED or (m.state_at or 0.0) >= recent
        }.values()
    )
    summaries = await summarise_all(ctx, models)
    needing = ranked(ctx.now, summaries)
    return Attention(
        models=needing[:first],
        scanned=len(models),
        needing=len(needing),
        truncated=any(p.has_next for p in pages),
    )

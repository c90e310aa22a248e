"""Compact rollups for agents: is a model progressing, failing, stuck or waiting, and why.

Everything here is computed from the same per-request loaders as the rest of the graph,
so summarising a hundred models costs the same few round trips as summarising one.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from openrl_inspect.context import Context
from openrl_inspect.domain import WAITING_STATES, ModelState, OpHealth, OpStatus, Verdict
from openrl_inspect.resolvers.state import reads as S
from openrl_inspect.state.records import ModelRecord, OpRecord, StepRecord

# How many open ops a summary inspects (oldest first); more are counted, not judged.
OPEN_OPS_JUDGED = 100


@dataclass(frozen=True)
class KindStats:
    kind: str
    count: int
    failed: int
    median_duration_s: float | None
    p90_duration_s: float | None
    median_queue_wait_s: float | None


@dataclass(frozen=True)
class LastError:
    op_id: str
    kind: str
    step: int | None
    error: str
    at: float | None


@dataclass(frozen=True)
class ModelSummary:
    model: ModelRecord
    verdict: Verdict
    reasons: list[str]
    steps_considered: int
    steps_per_minute: float | None
    median_step_s: float | None
    last_step_at: float | None
    seconds_since_last_step: float | None
    waiting_s: float | None
    kinds: list[KindStats]
    failed_ops: int
    last_error: LastError | None
    open_ops: int
    stuck_ops: int
    lost_ops: int
    oldest_open_op_s: float | None
    workers_alive: int
    workers_total: int


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _spans(pairs: Iterable[tuple[float | None, float | None]]) -> list[float]:
    """``end - start`` for each pair where both ends are known."""
    return [end - start for start, end in pairs if start is not None and end is not None]


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def kind_stats(ops: Sequence[OpRecord]) -> list[KindStats]:
    by_kind: dict[str, list[OpRecord]] = defaultdict(list)
    for op in ops:
        by_kind[op.kind].append(op)
    out = []
    for kind, items in sorted(by_kind.items()):
        durations = _spans((o.started_at, o.finished_at) for o in items)
        waits = _spans(
            (o.enqueued_at if o.enqueued_at is not None else o.accepted_at, o.started_at)
            for o in items
        )
        out.append(
            KindStats(
                kind=kind,
                count=len(items),
                failed=sum(1 for o in items if o.status == OpStatus.FAILED),
                median_duration_s=_median(durations),
                p90_duration_s=_quantile(durations, 0.9),
                median_queue_wait_s=_median(waits),
            )
        )
    return out


def pace(steps: Sequence[StepRecord]) -> tuple[float | None, float | None, float | None]:
    """(steps per minute, median step seconds, last step time) over finished steps."""
    finished = [
        (s.started_at, s.finished_at)
        for s in steps
        if s.started_at is not None and s.finished_at is not None
    ]
    if not finished:
        return None, None, None
    durations = [end - start for start, end in finished]
    last = max(end for _, end in finished)
    first = min(start for start, _ in finished)
    span = last - first
    per_minute = len(finished) / span * 60 if span > 0 else None
    return per_minute, statistics.median(durations), last


def latest_failure(failed: Sequence[OpRecord]) -> LastError | None:
    """The failed op that finished last, as a summary quotes it."""
    last = max(failed, key=lambda o: o.finished_at or 0.0, default=None)
    if last is None:
        return None
    return LastError(last.id, last.kind, last.step, last.error or "", last.finished_at)


async def model_summary(ctx: Context, rec: ModelRecord, window_steps: int) -> ModelSummary:
    # Concurrent, never sequential awaits: the loaders batch what is pending together,
    # across this model's steps and across every model summarised in the request.
    steps_page, open_page, workers_page = await asyncio.gather(
        S.model_steps(ctx, rec.id, window_steps, None),
        S.open_ops(ctx, rec.id, OPEN_OPS_JUDGED, None),
        S.model_workers(ctx, rec.id, ctx.limits.max_page_size, None),
    )
    steps = steps_page.readable()
    open_ops = open_page.readable()
    op_pages, health = await asyncio.gather(
        asyncio.gather(
            *(S.step_ops(ctx, rec.id, s.step, ctx.limits.max_page_size, None) for s in steps)
        ),
        asyncio.gather(*(S.op_health(ctx, op) for op in open_ops)),
    )
    ops = [op for page in op_pages for op in page.readable()]
    workers = workers_page.readable()

    per_minute, median_step, last_step = pace(steps)
    since_last = None if last_step is None else max(0.0, ctx.now - last_step)
    failed = [o for o in ops if o.status == OpStatus.FAILED]
    oldest = min((o.accepted_at for o in open_ops if o.accepted_at is not None), default=None)
    stuck, lost = health.count(OpHealth.STUCK), health.count(OpHealth.LOST)
    waiting_s = (
        max(0.0, ctx.now - rec.state_at)
        if rec.state in WAITING_STATES and rec.state_at is not None
        else None
    )
    verdict, reasons = judge(ctx, rec, since_last, median_step, stuck, lost, len(failed), waiting_s)
    return ModelSummary(
        model=rec,
        verdict=verdict,
        reasons=reasons,
        steps_considered=len(steps),
        steps_per_minute=per_minute,
        median_step_s=median_step,
        last_step_at=last_step,
        seconds_since_last_step=since_last,
        waiting_s=waiting_s,
        kinds=kind_stats(ops),
        failed_ops=len(failed),
        last_error=latest_failure(failed),
        open_ops=open_page.total,
        stuck_ops=stuck,
        lost_ops=lost,
        oldest_open_op_s=None if oldest is None else max(0.0, ctx.now - oldest),
        workers_alive=sum(1 for w in workers if S.worker_alive(ctx, w)),
        workers_total=len(workers),
    )


def judge(
    ctx: Context,
    rec: ModelRecord,
    since_last: float | None,
    median_step: float | None,
    stuck: int,
    lost: int,
    failed_ops: int,
    waiting_s: float | None,
) -> tuple[Verdict, list[str]]:
    """One verdict, most serious first, with the reasons an agent would report."""
    reasons: list[str] = []
    if rec.state == ModelState.FAILED:
        reasons.append(f"model failed: {rec.failure_reason or 'no reason recorded'}")
        return Verdict.FAILED, reasons
    if rec.state == ModelState.ENDED:
        return Verdict.ENDED, ["model ended"]
    if lost:
        reasons.append(f"{lost} op(s) lost: their worker stopped heartbeating before finishing")
    if stuck:
        reasons.append(
            f"{stuck} op(s) running longer than {ctx.limits.stuck_after_s:.0f}s on a live worker"
        )
    if failed_ops:
        reasons.append(f"{failed_ops} failed op(s) in the recent steps")
    if lost:
        return Verdict.LOST_OPS, reasons
    if stuck:
        return Verdict.STUCK, reasons
    if rec.state in WAITING_STATES:
        reasons.insert(0, f"{rec.state} for {waiting_s or 0:.0f}s, no GPUs running it yet")
        return Verdict.WAITING, reasons
    if since_last is None:
        return Verdict.IDLE, [*reasons, "active, but no finished step recorded"]
    # Stalled: no step for far longer than steps usually take.
    usual = median_step or 0.0
    if since_last > max(10 * usual, 120.0):
        reasons.insert(0, f"no step finished for {since_last:.0f}s (median step {usual:.1f}s)")
        return Verdict.STALLED, reasons
    return Verdict.PROGRESSING, reasons

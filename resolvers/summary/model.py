"""Compact rollups for agents: is a model progressing, failing, stuck or waiting, and why.

Everything here is computed from the same per-request loaders as the rest of the graph,
so summarising a hundred models costs the same few round trips as summarising one.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from openrl_inspect.core.domain import WAITING_STATES, OpHealth, OpStatus, Verdict
from openrl_inspect.core.errors import BadRecord
from openrl_inspect.resolvers import pacing
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis import Diagnosis, diagnose, pace
from openrl_inspect.resolvers.diagnosis.evidence import ModelEvidence, StateEvidence, Thresholds
from openrl_inspect.resolvers.diagnosis.text import clip
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.summary import evidence as summary_evidence
from openrl_inspect.resolvers.summary import memo
from openrl_inspect.state.records import ModelRecord, OpRecord, StepRecord
from openrl_inspect.state.rollup import ModelRollup

# How many open ops a summary inspects (oldest first); more are counted, not judged.
OPEN_OPS_JUDGED = 100
# What a summary quotes of stored text, so that it stays within its token budget
# whatever was stored (an op's error can be a 64 KiB traceback).
ERROR_CHARS = 300
ID_CHARS = 80
MAX_KINDS = 12


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
    diagnosis: Diagnosis
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
    """Per op kind, the most frequent ``MAX_KINDS`` (a stored kind is any text)."""
    by_kind: dict[str, list[OpRecord]] = defaultdict(list)
    for op in ops:
        by_kind[clip(op.kind, ID_CHARS)].append(op)
    common = sorted(by_kind.items(), key=lambda kv: -len(kv[1]))[:MAX_KINDS]
    out = []
    for kind, items in sorted(common):
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


def step_times(steps: Sequence[StepRecord]) -> tuple[float | None, float | None]:
    """(median step seconds, last step time) over finished steps."""
    finished = [
        (s.started_at, s.finished_at)
        for s in steps
        if s.started_at is not None and s.finished_at is not None
    ]
    if not finished:
        return None, None
    durations = [end - start for start, end in finished]
    return statistics.median(durations), max(end for _, end in finished)


def latest_failure(failed: Sequence[OpRecord]) -> LastError | None:
    """The failed op that finished last, as a summary quotes it."""
    last = max(failed, key=lambda o: o.finished_at or 0.0, default=None)
    if last is None:
        return None
    return LastError(
        last.id,
        clip(last.kind, ID_CHARS),
        last.step,
        clip(last.error or "", ERROR_CHARS),
        last.finished_at,
    )


async def model_summary(ctx: Context, rec: ModelRecord, window_steps: int) -> ModelSummary:
    """The model's summary: kept from an earlier request while its inputs' versions are
    the same (``memo``), else judged now."""
    kept = ctx.backends.judgements
    if kept is None:
        return await judged(ctx, rec, window_steps)
    # The versions first: one batch for every model of the request, found again by the
    # judgement's own reads in the request's loaders.
    rollup, kube = await asyncio.gather(
        state_reads.rollup(ctx, rec.id, window_steps),
        summary_evidence.kube_evidence(ctx, rec),
    )
    who = ctx.principal
    if rollup is None:
        return await judged(ctx, rec, window_steps)
    key = memo.fingerprint(
        memo.model_version(rec), window_steps, memo.rollup_version(rollup), kube,
        int(ctx.now // kept.period_s), ctx.thresholds, ctx.bounds.max_page_size,
        who.role, who.owners,
    )  # fmt: skip
    if key is None:
        return await judged(ctx, rec, window_steps)
    found = kept.get(key)
    if found is not None:
        return aged(found, ctx.now)
    summary = await judged(ctx, rec, window_steps)
    kept.put(key, (summary, ctx.now))
    return summary


def aged(found: tuple[ModelSummary, float], now: float) -> ModelSummary:
    """A kept summary with its ages taken at ``now`` (the judgement is the kept one)."""
    summary, then = found
    rec, since = summary.model, now - then
    waiting_s = (
        max(0.0, now - rec.state_at)
        if summary.waiting_s is not None and rec.state_at is not None
        else None
    )
    last = summary.last_step_at
    oldest = summary.oldest_open_op_s
    return replace(
        summary,
        reasons=reasons(summary.diagnosis, waiting_s),
        waiting_s=waiting_s,
        seconds_since_last_step=None if last is None else max(0.0, now - last),
        oldest_open_op_s=None if oldest is None else max(0.0, oldest + since),
    )


async def judged(ctx: Context, rec: ModelRecord, window_steps: int) -> ModelSummary:
    # Concurrent, never sequential awaits: the loaders batch what is pending together,
    # across this model's steps and across every model summarised in the request.
    state, (kube, events_log), sampling = await asyncio.gather(
        _state(ctx, rec, window_steps),
        summary_evidence.kube_evidence(ctx, rec),
        summary_evidence.sampling_evidence(ctx, rec.id),
    )
    evidence, open_total = state
    duty = await summary_evidence.duty_evidence(
        ctx, summary_evidence.gpu_uuids([w for w, _ in evidence.state.workers], kube)
    )
    evidence = replace(evidence, kube=kube, duty=duty, sampling=sampling, events_log=events_log)
    # The judgement is CPU work: off the event loop (resolvers.pacing).
    return await pacing.off_loop(summarise, ctx, evidence, open_total)


async def _state(ctx: Context, rec: ModelRecord, window_steps: int) -> tuple[ModelEvidence, int]:
    """What Redis says of the model: the evidence's state part, and how many ops are
    open (only the oldest ``OPEN_OPS_JUDGED`` are judged).

    The steps and their ops come from the model's rollup when it holds them whole (one
    read a model, whatever its steps), else from a scan of each step's ops (data written
    before rollups, or a rollup that cannot be read). Both give the same evidence
    (tests/api/test_rollup_equivalence.py).
    """
    size = ctx.bounds.max_page_size
    rollup, open_page, workers_page, placements = await asyncio.gather(
        state_reads.rollup(ctx, rec.id, window_steps),
        state_reads.open_ops(ctx, rec.id, OPEN_OPS_JUDGED, None),
        state_reads.model_workers(ctx, rec.id, size, None),
        state_reads.placements(ctx, rec.id, summary_evidence.PLACEMENTS_JUDGED, None),
    )
    open_ops = open_page.readable()
    if rollup is not None and rollup.window(rec.latest_step, rec.kept_steps, window_steps, size):
        (steps, ops), health = await asyncio.gather(
            _from_rollup(ctx, rollup, size),
            asyncio.gather(*(state_reads.op_health(ctx, op) for op in open_ops)),
        )
    else:
        scanned = await state_reads.model_steps(ctx, rec.id, window_steps, None)
        steps = scanned.readable()
        op_pages, health = await asyncio.gather(
            asyncio.gather(*(state_reads.step_ops(ctx, rec.id, s.step, size, None) for s in steps)),
            asyncio.gather(*(state_reads.op_health(ctx, op) for op in open_ops)),
        )
        ops = [op for page in op_pages for op in page.readable()]
    workers = workers_page.readable()
    state = StateEvidence(
        model=rec,
        steps=tuple(sorted(steps, key=lambda s: s.step)),
        ops=tuple(ops),
        open_ops=tuple(zip(open_ops, health, strict=True)),
        workers=tuple((w, state_reads.worker_alive(ctx, w)) for w in workers),
        placements=tuple(placements.readable()),
    )
    thresholds = Thresholds(
        stuck_after_s=ctx.thresholds.stuck_after_s,
        heartbeat_timeout_s=ctx.thresholds.heartbeat_stale_s,
    )
    return ModelEvidence(ctx.now, state, thresholds=thresholds), open_page.total


async def _from_rollup(
    ctx: Context, rollup: ModelRollup, size: int
) -> tuple[list[StepRecord], list[OpRecord]]:
    """The steps and ops a scan would read, from the rollup's entries, in the scan's order
    (newest step first, each step's ops by acceptance). Ops whose entry lacks what the
    diagnosis may quote (a failed op's error) are read from their hashes, so only models
    with failures pay for more than the rollup."""
    steps = [s.step for s in rollup.steps if s.step is not None]
    wanted = [
        o for s in rollup.steps if s.step is not None for o in s.ops[:size] if o.record is not None
    ]
    details = await asyncio.gather(
        *(_op_detail(ctx, rollup.model_id, o.id) for o in wanted if o.detail)
    )
    read = iter(details)
    ops = [next(read) if o.detail else o.record for o in wanted]
    return steps, [op for op in ops if op is not None]


async def _op_detail(ctx: Context, mid: str, oid: str) -> OpRecord | None:
    try:
        return await ctx.state.ops.load((mid, oid))
    except BadRecord:
        return None  # as the scan's page skips it


def summarise(ctx: Context, evidence: ModelEvidence, open_total: int) -> ModelSummary:
    """The summary's numbers and the diagnosis, from gathered evidence. Pure."""
    state, rec = evidence.state, evidence.model
    median_step, last_step = step_times(state.steps)
    failed = [o for o in state.ops if o.status == OpStatus.FAILED]
    open_ops = [op for op, _ in state.open_ops]
    oldest = min((o.accepted_at for o in open_ops if o.accepted_at is not None), default=None)
    health = [h for _, h in state.open_ops]
    waiting_s = (
        max(0.0, ctx.now - rec.state_at)
        if rec.state in WAITING_STATES and rec.state_at is not None
        else None
    )
    diagnosis = diagnose(evidence)
    return ModelSummary(
        model=rec,
        verdict=diagnosis.verdict,
        reasons=reasons(diagnosis, waiting_s),
        diagnosis=diagnosis,
        steps_considered=len(state.steps),
        steps_per_minute=pace.steps_per_minute(evidence),
        median_step_s=median_step,
        last_step_at=last_step,
        seconds_since_last_step=None if last_step is None else max(0.0, ctx.now - last_step),
        waiting_s=waiting_s,
        kinds=kind_stats(state.ops),
        failed_ops=len(failed),
        last_error=latest_failure(failed),
        open_ops=open_total,
        stuck_ops=health.count(OpHealth.STUCK),
        lost_ops=health.count(OpHealth.LOST),
        oldest_open_op_s=None if oldest is None else max(0.0, ctx.now - oldest),
        workers_alive=sum(1 for _, alive in state.workers if alive),
        workers_total=len(state.workers),
    )


def reasons(d: Diagnosis, waiting_s: float | None) -> list[str]:
    """The causes' statements, most serious first; what could not be judged, and why."""
    out = [c.statement for c in d.causes]
    if not out:
        out.append(_PLAIN.get(d.verdict, d.verdict.lower()))
        if d.verdict == Verdict.WAITING:
            out[0] = f"waiting for {waiting_s or 0:.0f}s, no GPUs running it yet"
    out += [f"{u.backend} not judged: {u.code}" for u in d.unknown]
    return out


_PLAIN = {
    Verdict.ENDED: "model ended",
    Verdict.IDLE: "active, but no finished step recorded",
    Verdict.PROGRESSING: "progressing",
}

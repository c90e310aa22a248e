"""The timeline from OpenRL's own record: states, first and last step, failed ops,
workers started and silent, placements admitted and released."""

from __future__ import annotations

import asyncio

from openrl_inspect.core.domain import ModelState, OpStatus, TimelineKind, TimelineSource
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis import Lookup, lookups
from openrl_inspect.resolvers.diagnosis.text import clip, dur, ref, statement
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.summary import evidence as summary_evidence
from openrl_inspect.resolvers.timeline.entries import Entry, Found, cut
from openrl_inspect.state.records import (
    ModelRecord,
    OpRecord,
    PlacementRecord,
    StepRecord,
    WorkerRecord,
)

# The recent steps read for ops that failed and the last step.
STEPS_READ = 50


async def redis(ctx: Context, rec: ModelRecord, since: float, until: float) -> Found:
    mid = rec.id
    steps_page, first_step, workers_page, placements_page = await asyncio.gather(
        state_reads.model_steps(ctx, mid, STEPS_READ, None),
        state_reads.model_step(ctx, mid, 0),
        state_reads.model_workers(ctx, mid, ctx.bounds.max_page_size, None),
        state_reads.placements(ctx, mid, summary_evidence.PLACEMENTS_JUDGED, None),
    )
    steps = steps_page.readable()
    op_pages = await asyncio.gather(
        *(state_reads.step_ops(ctx, mid, s.step, ctx.bounds.max_page_size, None) for s in steps)
    )
    ops = [op for page in op_pages for op in page.readable()]
    out = [
        *_states(rec),
        *_steps(mid, first_step, steps),
        *_ops(mid, ops),
        *_workers(ctx, mid, workers_page.readable()),
        *_placements(mid, placements_page.readable()),
    ]
    return cut(out, since, until)


def _entry(at: float, kind: TimelineKind, text: str, mid: str, refs: tuple[str, ...],
           look: Lookup) -> Entry:  # fmt: skip
    return Entry(at, TimelineSource.REDIS, kind, statement(text), mid, refs, look)


def _states(rec: ModelRecord) -> list[Entry]:
    out = []
    for state, at in rec.transitions.items():
        failure = rec.failure_reason if state == ModelState.FAILED else None
        reason = f": {clip(failure, 90)}" if failure else ""
        look = lookups.lookup(lookups.summary_query(rec.id))
        out.append(_entry(at, TimelineKind.STATE, f"Model {state.lower()}{reason}", rec.id,
                          (f"model {rec.id}",), look))  # fmt: skip
    return out


def _steps(mid: str, first: StepRecord | None, steps: list[StepRecord]) -> list[Entry]:
    out = []
    model = (f"model {mid}",)
    if first is not None and first.finished_at is not None:
        look = lookups.lookup(lookups.steps_query(mid))
        text = "First step finished (step 0)"
        out.append(_entry(first.finished_at, TimelineKind.FIRST_STEP, text, mid, model, look))
    done = [s for s in steps if s.finished_at is not None]
    if done:
        last = max(done, key=lambda s: s.step)
        look = lookups.lookup(lookups.step_ops_query(mid, last.step))
        text = f"Last step finished (step {last.step})"
        out.append(_entry(last.finished_at or 0.0, TimelineKind.LAST_STEP, text, mid, model, look))
    return out


def _ops(mid: str, ops: list[OpRecord]) -> list[Entry]:
    out = []
    for op in ops:
        if op.status != OpStatus.FAILED or op.finished_at is None:
            continue
        error = clip(op.error or "no error recorded", 100)
        where = f" at step {op.step}" if op.step is not None else ""
        text = f"{clip(op.kind, 40)}{where} failed: {error}"
        look = lookups.lookup(lookups.op_query(op.id))
        out.append(
            _entry(op.finished_at, TimelineKind.OP_FAILED, text, mid, (f"op {op.id}",), look)
        )
    return out


def _workers(ctx: Context, mid: str, workers: list[WorkerRecord]) -> list[Entry]:
    out = []
    for w in workers:
        refs = (f"worker {w.id}", f"Node {w.node}")
        look = lookups.lookup(lookups.worker_query(w.id))
        if w.started_at is not None:
            text = f"{w.role} worker {w.id} started on {w.node}"
            out.append(_entry(w.started_at, TimelineKind.WORKER_BACK, text, mid, refs, look))
        if not state_reads.worker_alive(ctx, w) and w.last_heartbeat_at is not None:
            text = f"{w.role} worker {w.id} last heartbeat (silent since)"
            out.append(_entry(w.last_heartbeat_at, TimelineKind.WORKER_LOST, text, mid, refs, look))
    return out


def _placements(mid: str, placements: list[PlacementRecord]) -> list[Entry]:
    out = []
    for p in placements:
        refs = (ref("Workload", p.namespace, p.workload), f"Node {p.node}")
        look = lookups.lookup(lookups.node_query(p.node), nodes=[p.node])
        if p.admitted_at is not None:
            text = f"Placed on {p.node}: {len(p.gpu_ids)} GPU(s), pods {', '.join(p.pods[:2])}"
            out.append(
                _entry(p.admitted_at, TimelineKind.PLACEMENT_ADMITTED, text, mid, refs, look)
            )
        if p.released_at is not None:
            held = f" after {dur(p.released_at - p.admitted_at)}" if p.admitted_at else ""
            text = f"Released its GPUs on {p.node}{held}"
            out.append(
                _entry(p.released_at, TimelineKind.PLACEMENT_RELEASED, text, mid, refs, look)
            )
    return out

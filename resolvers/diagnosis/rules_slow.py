"""Slow rather than stopped: the model against its own past, and where the time goes.

Pace regression (step times), trainer slow (forward_backward / optim_step times),
sampler slow (tokens per second of its batches) each compare the recent median with
the earlier median (``baseline``); client-bound measures the share of wall time in
which no op of the model was accepted, queued or running: the workers wait on the
client. Only an active model is judged.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Sequence

from openrl_inspect.core.domain import CauseKind, ModelState
from openrl_inspect.resolvers.diagnosis import lookups, pace
from openrl_inspect.resolvers.diagnosis.baseline import Shift, lower, slower
from openrl_inspect.resolvers.diagnosis.causes import Fact, Finding
from openrl_inspect.resolvers.diagnosis.evidence import ModelEvidence, SamplingEvidence
from openrl_inspect.resolvers.diagnosis.text import dur, fact, facts, secs, statement
from openrl_inspect.state.records import OpRecord

TRAINER_KINDS = ("forward_backward", "optim_step")


def _shift_facts(s: Shift, unit: str) -> tuple[Fact, ...]:
    return (
        fact("recent_median", s.recent, unit),
        fact("baseline_median", s.baseline, unit),
        fact("ratio", s.ratio, "x"),
        fact("recent_samples", s.recent_n),
        fact("baseline_samples", s.baseline_n),
    )


def pace_regression(evidence: ModelEvidence) -> list[Finding]:
    steps = pace.finished(evidence.state.steps)
    s = slower(pace.durations(steps), evidence.thresholds)
    if s is None:
        return []
    first = steps[-s.recent_n]
    mid = evidence.model.id
    return [
        Finding(
            CauseKind.PACE_REGRESSION,
            statement(
                f"Steps slowed {s.ratio:.1f}x: median {secs(s.recent)} over the last "
                f"{s.recent_n} against {secs(s.baseline)} over the {s.baseline_n} before "
                f"(since step {first.step})"
            ),
            since=first.started_at,
            facts=facts(*_shift_facts(s, "s"), fact("since_step", first.step)),
            refs=(f"model {mid}",),
            next=lookups.lookup(lookups.steps_query(mid)),
        )
    ]


def _timed(ops: Sequence[OpRecord]) -> list[OpRecord]:
    done = [o for o in ops if o.started_at is not None and o.finished_at is not None]
    return sorted(done, key=lambda o: (o.started_at or 0.0, o.id))


def trainer_slow(evidence: ModelEvidence) -> list[Finding]:
    by_kind: dict[str, list[OpRecord]] = defaultdict(list)
    for op in _timed(evidence.state.ops):
        if op.kind in TRAINER_KINDS:
            by_kind[op.kind].append(op)
    worst: tuple[Shift, str, OpRecord] | None = None
    for kind, ops in sorted(by_kind.items()):
        times = [(o.finished_at or 0.0) - (o.started_at or 0.0) for o in ops]
        s = slower(times, evidence.thresholds)
        if s is not None and (worst is None or s.ratio > worst[0].ratio):
            worst = (s, kind, ops[-s.recent_n])
    if worst is None:
        return []
    s, kind, first = worst
    mid = evidence.model.id
    workers = {w.id: w for w, _ in evidence.state.workers}
    worker = workers.get(first.worker_id or "")
    return [
        Finding(
            CauseKind.TRAINER_SLOW,
            statement(
                f"{kind} slowed {s.ratio:.1f}x: median {secs(s.recent)} over the last "
                f"{s.recent_n} against {secs(s.baseline)} before, on worker {first.worker_id}"
            ),
            since=first.started_at,
            facts=facts(fact("kind", kind), *_shift_facts(s, "s"), fact("worker", first.worker_id)),
            refs=(f"op {first.id}",),
            next=lookups.lookup(
                lookups.step_ops_query(mid, first.step)
                if first.step is not None
                else lookups.steps_query(mid),
                nodes=[worker.node if worker else None],
            ),
        )
    ]


def sampler_slow(evidence: ModelEvidence) -> list[Finding]:
    sampling = evidence.sampling
    if not isinstance(sampling, SamplingEvidence):
        return []
    batches = sorted(
        (b for b in sampling.batches if b.generated_tokens and b.latency_s and b.latency_s > 0),
        key=lambda b: b.at,
    )
    rates = [(b.generated_tokens or 0) / (b.latency_s or 1.0) for b in batches]
    s = lower(rates, evidence.thresholds)
    if s is None:
        return []
    recent = batches[-s.recent_n :]
    depths = [b.queue_depth for b in recent if b.queue_depth is not None]
    depth = statistics.median(depths) if depths else None
    return [
        Finding(
            CauseKind.SAMPLER_SLOW,
            statement(
                f"Sampler throughput fell to {s.recent:.0f} tok/s (median of last {s.recent_n} "
                f"batches) from {s.baseline:.0f} tok/s before"
                + (f"; queue depth {depth:g}" if depth is not None else "")
            ),
            since=recent[0].at,
            facts=facts(
                *_shift_facts(s, "tok/s"),
                fact("queue_depth", depth),
                fact("worker", recent[-1].worker),
            ),
            refs=tuple(dict.fromkeys(f"worker {b.worker}" for b in recent if b.worker))[:2],
            next=lookups.lookup(lookups.sampling_query(evidence.model.id)),
        )
    ]


def _busy(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """Seconds of [start, end] covered by the union of ``intervals``."""
    total, cursor = 0.0, start
    for a, b in sorted(intervals):
        a, b = max(a, cursor), min(b, end)
        if b > a:
            total += b - a
            cursor = b
    return total


def client_bound(evidence: ModelEvidence) -> list[Finding]:
    t = evidence.thresholds
    steps = pace.finished(evidence.state.steps)[-max(t.client_min_steps, t.recent_samples) :]
    numbers = {s.step for s in steps}
    ops = [o for o in _timed(evidence.state.ops) if o.step in numbers]
    if len(steps) < t.client_min_steps or not ops:
        return []
    start, end = steps[0].started_at or 0.0, steps[-1].finished_at or 0.0
    intervals = [
        (o.accepted_at or o.enqueued_at or o.started_at or 0.0, o.finished_at or 0.0) for o in ops
    ]
    wall = end - start
    idle = wall - _busy(intervals, start, end)
    if wall <= 0 or idle / wall < t.client_share:
        return []
    # Idle in most steps, not once: one long pause (a client restarting, a notebook left
    # alone) is not a client-bound loop, and must not make a healthy model a suspect.
    spans = [(a.started_at or 0.0, b.started_at or 0.0) for a, b in itertools.pairwise(steps)]
    spans.append((steps[-1].started_at or 0.0, end))
    shares = [1 - _busy(intervals, a, b) / (b - a) for a, b in spans if b > a]
    if not shares or statistics.median(shares) < t.client_share:
        return []
    ordered = sorted(ops, key=lambda o: o.finished_at or 0.0)
    gaps = [
        ((b.accepted_at or b.started_at or 0.0) - (a.finished_at or 0.0), a)
        for a, b in itertools.pairwise(ordered)
    ]
    gap, after = max(gaps, key=lambda g: g[0], default=(0.0, ordered[0]))
    mid = evidence.model.id
    return [
        Finding(
            CauseKind.CLIENT_BOUND,
            statement(
                f"Workers idle {idle / wall:.0%} of the last {len(steps)} steps "
                f"({dur(idle)} of {dur(wall)}) waiting on the client; longest gap "
                f"{secs(max(gap, 0.0))} after {after.kind}"
            ),
            since=steps[0].started_at,
            facts=facts(
                fact("idle_share", idle / wall, "ratio"),
                fact("idle_s", idle, "s"),
                fact("wall_s", wall, "s"),
                fact("steps", len(steps)),
                fact("longest_gap_s", max(gap, 0.0), "s"),
                fact("gap_after", after.kind),
            ),
            refs=(f"model {mid}",),
            next=lookups.lookup(lookups.step_ops_query(mid, steps[-1].step)),
        )
    ]


def rules(evidence: ModelEvidence) -> list[Finding]:
    if evidence.model.state != ModelState.ACTIVE:
        return []
    found: list[Finding] = []
    for rule in (trainer_slow, sampler_slow, client_bound, pace_regression):
        found += rule(evidence)
    return found

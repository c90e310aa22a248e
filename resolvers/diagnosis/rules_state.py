"""Causes from OpenRL's own record (Redis): a failed model, failed, lost and stuck ops,
lost workers, a stalled model."""

from __future__ import annotations

from collections.abc import Sequence

from openrl_inspect.core.domain import HOLDING_STATES, CauseKind, ModelState, OpHealth, OpStatus
from openrl_inspect.resolvers.diagnosis import lookups, pace
from openrl_inspect.resolvers.diagnosis.causes import Finding
from openrl_inspect.resolvers.diagnosis.evidence import KubeEvidence, ModelEvidence
from openrl_inspect.resolvers.diagnosis.text import clip, dur, fact, facts, ref, statement
from openrl_inspect.state.records import OpRecord, WorkerRecord

MAX_OP_REFS = 3


def _op_label(op: OpRecord) -> str:
    step = "" if op.step is None else f" step {op.step}"
    return f"{op.id} ({op.kind}{step})"


def _workers(evidence: ModelEvidence) -> dict[str, WorkerRecord]:
    return {w.id: w for w, _ in evidence.state.workers}


def model_failed(evidence: ModelEvidence) -> list[Finding]:
    model = evidence.model
    if model.state != ModelState.FAILED:
        return []
    at = model.state_at
    reason = model.failure_reason or "no reason recorded"
    pods = lookups.pod_keys(evidence)
    around = (at or evidence.now) - 600.0, (at or evidence.now) + 120.0
    return [
        Finding(
            CauseKind.MODEL_FAILED,
            statement(f"Model failed {dur(evidence.now - at) if at else '?'} ago: {reason}"),
            since=at,
            facts=facts(
                fact("failure_reason", clip(reason)),
                fact("failed_at", at, "unix_s"),
                fact("latest_step", model.latest_step),
            ),
            refs=(f"model {model.id}",),
            next=lookups.lookup(
                lookups.summary_query(model.id),
                logs=lookups.logs(evidence, pods, around, severity="ERROR", events=True),
                pods=pods,
            ),
            about=f"model {model.id}",
            window=around,
            headline="the model failed",
        )
    ]


def ops_failed(evidence: ModelEvidence) -> list[Finding]:
    failed = [o for o in evidence.state.ops if o.status == OpStatus.FAILED]
    if not failed:
        return []
    failed.sort(key=lambda o: (o.finished_at or 0.0, o.id))
    last = failed[-1]
    workers = _workers(evidence)
    worker = workers.get(last.worker_id or "")
    pods = lookups.pod_keys(evidence, [worker.pod] if worker else [])
    end = last.finished_at or evidence.now
    steps = sorted({o.step for o in failed if o.step is not None})
    span = f" in steps {steps[0]}-{steps[-1]}" if len(steps) > 1 else ""
    error = clip(last.error or "no error recorded", 90)
    return [
        Finding(
            CauseKind.OP_FAILED,
            statement(f"{len(failed)} op(s) failed{span}; last {_op_label(last)}: {error}"),
            since=failed[0].finished_at,
            facts=facts(
                fact("failed_ops", len(failed)),
                fact("last_op", last.id),
                fact("kind", last.kind),
                fact("step", last.step),
                fact("error", last.error),
                fact("failed_at", last.finished_at, "unix_s"),
                fact("worker", last.worker_id),
            ),
            refs=tuple(f"op {o.id}" for o in reversed(failed[-MAX_OP_REFS:])),
            next=lookups.lookup(
                lookups.op_query(last.id),
                logs=lookups.logs(evidence, pods, (end - 120.0, end + 30.0), severity="ERROR"),
                pods=pods,
                nodes=[worker.node if worker else None],
            ),
            about=f"op {last.id}",
            window=(last.started_at or end - 60.0, end),
            pods=tuple(k.name for k in pods),
            headline=clip(f"{last.kind} at step {last.step} failed", 70)
            if last.step is not None
            else clip(f"{last.kind} failed", 70),
        )
    ]


def _open(evidence: ModelEvidence, health: OpHealth) -> list[OpRecord]:
    ops = [op for op, h in evidence.state.open_ops if h == health]
    return sorted(ops, key=lambda o: (o.started_at or evidence.now, o.id))


def ops_lost(evidence: ModelEvidence) -> list[Finding]:
    lost = _open(evidence, OpHealth.LOST)
    if not lost:
        return []
    workers = _workers(evidence)
    ids = list(dict.fromkeys(o.worker_id for o in lost if o.worker_id))
    beats = [
        w.last_heartbeat_at
        for w in (workers.get(i) for i in ids)
        if w is not None and w.last_heartbeat_at is not None
    ]
    silent_since = min(beats) if beats else None
    oldest = lost[0]
    silent = f", silent {dur(evidence.now - silent_since)}" if silent_since else ""
    pods = lookups.pod_keys(evidence, [workers[w].pod for w in ids if w in workers])
    at = silent_since or oldest.started_at or evidence.now
    return [
        Finding(
            CauseKind.OPS_LOST,
            statement(
                f"{len(lost)} op(s) lost: their worker {', '.join(ids[:2]) or '?'} stopped "
                f"heartbeating{silent}; oldest {_op_label(oldest)}"
            ),
            since=silent_since or oldest.started_at,
            facts=facts(
                fact("lost_ops", len(lost)),
                fact("oldest_op", oldest.id),
                fact("kind", oldest.kind),
                fact("step", oldest.step),
                fact("workers", ", ".join(ids)),
                fact("last_heartbeat", silent_since, "unix_s"),
            ),
            refs=tuple(f"op {o.id}" for o in lost[:MAX_OP_REFS])
            + tuple(f"worker {w}" for w in ids[:1]),
            next=lookups.lookup(
                lookups.open_ops_query(evidence.model.id),
                logs=lookups.logs(evidence, pods, (at - 300.0, at + 60.0), events=True),
                pods=pods,
                nodes=[workers[w].node for w in ids if w in workers],
            ),
            about=f"op {oldest.id}",
            headline=f"{len(lost)} op(s) lost",
        )
    ]


def ops_stuck(evidence: ModelEvidence) -> list[Finding]:
    stuck = _open(evidence, OpHealth.STUCK)
    if not stuck:
        return []
    oldest = stuck[0]
    started = oldest.started_at or evidence.now
    worker = _workers(evidence).get(oldest.worker_id or "")
    pods = lookups.pod_keys(evidence, [worker.pod] if worker else [])
    limit = evidence.thresholds.stuck_after_s
    return [
        Finding(
            CauseKind.OP_STUCK,
            statement(
                f"{len(stuck)} op(s) running past {dur(limit)} on a live worker; oldest "
                f"{_op_label(oldest)} for {dur(evidence.now - started)} on {oldest.worker_id}"
            ),
            since=oldest.started_at,
            facts=facts(
                fact("stuck_ops", len(stuck)),
                fact("oldest_op", oldest.id),
                fact("kind", oldest.kind),
                fact("step", oldest.step),
                fact("running_s", evidence.now - started, "s"),
                fact("worker", oldest.worker_id),
                fact("stuck_after_s", limit, "s"),
            ),
            refs=tuple(f"op {o.id}" for o in stuck[:MAX_OP_REFS]),
            next=lookups.lookup(
                lookups.op_query(oldest.id),
                logs=lookups.logs(evidence, pods, (started, evidence.now), severity="WARNING"),
                pods=pods,
                nodes=[worker.node if worker else None],
            ),
        )
    ]


def stalled(evidence: ModelEvidence) -> list[Finding]:
    if evidence.model.state != ModelState.ACTIVE or not pace.is_stalled(evidence):
        return []
    last = pace.last_finished(evidence.state.steps)
    median = pace.median_step(evidence.state.steps)
    if last is None or last.finished_at is None:
        return []
    since = evidence.now - last.finished_at
    pods = lookups.pod_keys(evidence)
    open_ops = len(evidence.state.open_ops)
    return [
        Finding(
            CauseKind.STALLED,
            statement(
                f"No step finished for {dur(since)} (median step {median or 0:.1f}s, "
                f"last step {last.step}); {open_ops} op(s) open"
            ),
            since=last.finished_at,
            facts=facts(
                fact("last_step", last.step),
                fact("since_last_step_s", since, "s"),
                fact("median_step_s", median, "s"),
                fact("open_ops", open_ops),
            ),
            refs=(f"model {evidence.model.id}",),
            next=lookups.lookup(
                lookups.open_ops_query(evidence.model.id),
                logs=lookups.logs(
                    evidence, pods, (last.finished_at - 60.0, evidence.now), severity="WARNING"
                ),
                pods=pods,
            ),
            about=f"model {evidence.model.id}",
            headline=f"no step for {dur(since)} (last step {last.step})",
        )
    ]


def _lost_workers(evidence: ModelEvidence) -> list[WorkerRecord]:
    """Silent workers that matter: holding a lost op, or the last of their role with no
    live one beside it since the current placement (older silent workers are history:
    a restart replaced them, or a new placement has not started its own yet)."""
    holding = {op.worker_id for op, h in evidence.state.open_ops if h == OpHealth.LOST}
    current = next((p for p in evidence.state.placements if p.released_at is None), None)
    placed_at = current.admitted_at if current is not None else None
    alive_roles = {w.role for w, alive in evidence.state.workers if alive}
    latest: dict[str, WorkerRecord] = {}
    for w, alive in evidence.state.workers:
        if alive or (placed_at is not None and (w.last_heartbeat_at or 0.0) < placed_at):
            continue
        best = latest.get(w.role)
        if best is None or (w.last_heartbeat_at or 0.0) > (best.last_heartbeat_at or 0.0):
            latest[w.role] = w
    chosen = [w for role, w in latest.items() if role not in alive_roles]
    chosen += [w for w, alive in evidence.state.workers if not alive and w.id in holding]
    return list({w.id: w for w in chosen}.values())


def workers_lost(evidence: ModelEvidence) -> list[Finding]:
    if evidence.model.state not in HOLDING_STATES:
        return []
    return [_worker_lost(evidence, w) for w in _lost_workers(evidence)[:MAX_OP_REFS]]


def _node_ready(evidence: ModelEvidence, node: str) -> str | None:
    if not isinstance(evidence.kube, KubeEvidence):
        return None
    rec = next((n for n in evidence.kube.nodes if n.name == node), None)
    if rec is None or rec.ready is None:
        return None
    return "Ready" if rec.ready else "NotReady"


def _worker_lost(evidence: ModelEvidence, w: WorkerRecord) -> Finding:
    beat = w.last_heartbeat_at
    age = None if beat is None else evidence.now - beat
    lost = sum(
        1 for op, h in evidence.state.open_ops if h == OpHealth.LOST and op.worker_id == w.id
    )
    ready = _node_ready(evidence, w.node)
    node_note = f" (node {ready})" if ready == "NotReady" else ""
    pods = lookups.pod_keys(evidence, [w.pod])
    at = beat or evidence.now
    return Finding(
        CauseKind.WORKER_LOST,
        statement(
            f"{w.role} worker {w.id} on {w.node}{node_note} silent for {dur(age)} "
            f"(timeout {dur(evidence.thresholds.heartbeat_timeout_s)}); {lost} op(s) lost with it"
        ),
        since=beat,
        facts=facts(
            fact("worker", w.id),
            fact("role", w.role),
            fact("heartbeat_age_s", age, "s"),
            fact("last_heartbeat", beat, "unix_s"),
            fact("pod", w.pod),
            fact("node", w.node),
            fact("node_ready", ready),
            fact("lost_ops", lost),
        ),
        refs=(
            f"worker {w.id}",
            *(ref("Pod", k.namespace, k.name) for k in pods[:1]),
            f"Node {w.node}",
        ),
        next=lookups.lookup(
            lookups.worker_query(w.id),
            logs=lookups.logs(evidence, pods, (at - 300.0, at + 60.0), events=True),
            pods=pods,
            nodes=[w.node],
        ),
        about=f"worker {w.id}",
        headline=clip(f"{w.role} worker {w.id} went silent", 70),
    )


def rules(evidence: ModelEvidence) -> Sequence[Finding]:
    if evidence.model.state == ModelState.ENDED:
        return []
    found = [*model_failed(evidence), *ops_failed(evidence)]
    if evidence.model.state == ModelState.FAILED:
        return found
    for rule in (ops_lost, workers_lost, ops_stuck, stalled):
        found += rule(evidence)
    return found

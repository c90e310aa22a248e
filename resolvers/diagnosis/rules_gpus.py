"""Causes in the model's GPUs: a tainted (unhealthy) device under it, and GPUs held
while DCGM says they do nothing and no op runs (an idle reservation)."""

from __future__ import annotations

import statistics

from openrl_inspect.adapters.kubernetes import GpuDevice
from openrl_inspect.core.domain import HOLDING_STATES, CauseKind, ModelState
from openrl_inspect.resolvers.diagnosis import lookups
from openrl_inspect.resolvers.diagnosis.causes import Finding
from openrl_inspect.resolvers.diagnosis.evidence import DutyEvidence, KubeEvidence, ModelEvidence
from openrl_inspect.resolvers.diagnosis.text import dur, fact, facts, ref, statement

MAX_GPU_REFS = 3


def _label(d: GpuDevice) -> str:
    return f"GPU {d.uuid}" if d.uuid else ref("GPU", d.node_name or "", d.device)


def gpu_unhealthy(evidence: ModelEvidence) -> list[Finding]:
    kube = evidence.kube
    if not isinstance(kube, KubeEvidence) or evidence.model.state == ModelState.ENDED:
        return []
    bad = sorted(
        (d for d in kube.gpus if not d.healthy), key=lambda d: (d.node_name or "", d.device)
    )
    if not bad:
        return []
    first = bad[0]
    taint = next(t for t in first.taints if t.blocking)
    times = [t.time_added for d in bad for t in d.taints if t.blocking and t.time_added]
    since = min(times) if times else None
    value = f"={taint.value}" if taint.value else ""
    held = len(kube.gpus)
    return [
        Finding(
            CauseKind.GPU_UNHEALTHY,
            statement(
                f"{len(bad)} of {held} GPU(s) under the model tainted; {first.device} on "
                f"{first.node_name or '?'}: {taint.key}{value}:{taint.effect}"
                + (f" for {dur(evidence.now - since)}" if since else "")
            ),
            since=since,
            facts=facts(
                fact("tainted_gpus", len(bad)),
                fact("gpus", held),
                fact("device", first.device),
                fact("uuid", first.uuid),
                fact("node", first.node_name),
                fact("taint", f"{taint.key}{value}:{taint.effect}"),
                fact("rule", taint.rule),
                fact("tainted_at", since, "unix_s"),
            ),
            refs=tuple(_label(d) for d in bad[:MAX_GPU_REFS]),
            next=lookups.lookup(
                lookups.gpu_query(first.uuid)
                if first.uuid
                else lookups.node_query(first.node_name or ""),
                nodes=[d.node_name for d in bad],
            ),
            about=_label(first),
            clause=f"its GPU {first.uuid or first.device} is tainted {taint.key}{value}:"
            f"{taint.effect}",
        )
    ]


def _held(evidence: ModelEvidence) -> tuple[set[str], float | None]:
    """UUIDs of the GPUs the model holds now, and since when."""
    current = next((p for p in evidence.state.placements if p.released_at is None), None)
    uuids = set(current.gpu_ids) if current else set()
    if isinstance(evidence.kube, KubeEvidence):
        uuids |= {d.uuid for d in evidence.kube.gpus if d.uuid}
    uuids |= {g for w, alive in evidence.state.workers if alive for g in w.gpu_ids}
    since = current.admitted_at if current else None
    if since is None:
        since = evidence.model.transitions.get(ModelState.PLACED)
    return uuids, since


def _ops_ran_after(evidence: ModelEvidence, start: float) -> bool:
    for op in evidence.state.ops:
        if (op.finished_at or 0.0) >= start or (op.started_at or 0.0) >= start:
            return True
    return any(op.started_at is not None for op, _ in evidence.state.open_ops)


def idle_reservation(evidence: ModelEvidence) -> list[Finding]:
    duty = evidence.duty
    if not isinstance(duty, DutyEvidence) or evidence.model.state not in HOLDING_STATES:
        return []
    t = evidence.thresholds
    uuids, since = _held(evidence)
    start = evidence.now - duty.window_s
    if not uuids or since is None or evidence.now - since < max(t.idle_min_s, duty.window_s):
        return []
    values = [v for u in sorted(uuids) if (v := duty.by_uuid.get(u)) is not None]
    if not values or _ops_ran_after(evidence, start):
        return []
    mean, top = statistics.fmean(values), max(values)
    if mean >= t.idle_duty or top >= 2 * t.idle_duty:
        return []
    mid = evidence.model.id
    return [
        Finding(
            CauseKind.IDLE_RESERVATION,
            statement(
                f"{len(uuids)} GPU(s) held for {dur(evidence.now - since)} at mean DCGM duty "
                f"{mean:.1%} over the last {dur(duty.window_s)}, with no op run"
            ),
            since=since,
            facts=facts(
                fact("gpus_held", len(uuids)),
                fact("mean_duty", mean, "ratio"),
                fact("max_duty", top, "ratio"),
                fact("gpus_with_samples", len(values)),
                fact("window_s", duty.window_s, "s"),
                fact("held_since", since, "unix_s"),
            ),
            refs=tuple(f"GPU {u}" for u in sorted(uuids)[:MAX_GPU_REFS]),
            next=lookups.lookup(lookups.activity_query(mid, duty.window_s)),
        )
    ]


def rules(evidence: ModelEvidence) -> list[Finding]:
    return [*gpu_unhealthy(evidence), *idle_reservation(evidence)]

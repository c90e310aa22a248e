"""Causes on the way to GPUs: Kueue (not queued, inactive, evicted, preempted,
inadmissible, short of quota, admission checks), the scheduler and DRA.

A waiting model's causes come from ``why_waiting`` (``KubeEvidence.wait_reasons``),
never re-derived: each reason becomes a cause with its numbers, the scheduler's
message condensed into node counts, and the Events that say by what and when. A
running model's Workload evicted or preempted under it, and its pods the scheduler
cannot place, come from the same records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from openrl_inspect.adapters.kubernetes import EventRecord, PodRecord, WorkloadRecord
from openrl_inspect.core.domain import WAITING_STATES, CauseKind, ModelState, WaitKind
from openrl_inspect.resolvers.cluster.wait_reasons import KINDS, WaitReason
from openrl_inspect.resolvers.diagnosis import lookups
from openrl_inspect.resolvers.diagnosis.causes import Fact, Finding
from openrl_inspect.resolvers.diagnosis.evidence import KubeEvidence, ModelEvidence
from openrl_inspect.resolvers.diagnosis.scheduling import condense
from openrl_inspect.resolvers.diagnosis.text import clip, dur, fact, facts, ref, statement

_KIND = {
    WaitKind.NO_WORKLOAD: CauseKind.NOT_QUEUED,
    WaitKind.WORKLOAD_FINISHED: CauseKind.NOT_QUEUED,
    WaitKind.WORKLOAD_INACTIVE: CauseKind.WORKLOAD_INACTIVE,
    WaitKind.EVICTED: CauseKind.EVICTED,
    WaitKind.PREEMPTED: CauseKind.PREEMPTED,
    WaitKind.INADMISSIBLE: CauseKind.INADMISSIBLE,
    WaitKind.QUOTA: CauseKind.QUOTA,
    WaitKind.ADMISSION_CHECK: CauseKind.ADMISSION_CHECK,
    WaitKind.UNSCHEDULABLE: CauseKind.UNSCHEDULABLE,
    WaitKind.CLAIM_UNALLOCATED: CauseKind.CLAIM_UNALLOCATED,
}
# The containers' and pods' own rules judge these, for every state, with more detail.
_POD_KINDS = frozenset({WaitKind.CONTAINER_ERROR, WaitKind.POD_FAILED})
_LABELS = {
    WaitKind.NO_WORKLOAD: "Not queued",
    WaitKind.WORKLOAD_FINISHED: "Not queued",
    WaitKind.WORKLOAD_INACTIVE: "Workload inactive",
    WaitKind.INADMISSIBLE: "Kueue cannot admit it",
    WaitKind.ADMISSION_CHECK: "Admission checks pending",
    WaitKind.CLAIM_UNALLOCATED: "Claim not allocated",
    WaitKind.PENDING: "Pending in Kueue",
    WaitKind.NO_PODS: "Admitted, no pods",
    WaitKind.POD_GATED: "Pod gated",
    WaitKind.CONTAINER_WAITING: "Starting",
    WaitKind.NO_WORKLOAD_FOR_PODS: "Pods outside Kueue",
    WaitKind.NOTHING_FOUND: "Placed, nothing blocking",
}
# why_waiting's own sentence, where it is too long for a statement.
_SHORT = {
    WaitKind.NOTHING_FOUND: "Workload admitted, pods scheduled; the workers may still be starting",
}
_UID = re.compile(r"\(UID: (?P<uid>[^,)\s]+)")
_EVICTION_REASONS = ("Preempted", "Evicted", "EvictedDueTo")


def _objects(reason: WaitReason) -> tuple[str, str, str] | None:
    """``("Workload", ns, name)`` from a reason's object ref."""
    if not reason.object or " " not in reason.object:
        return None
    kind, _, path = reason.object.partition(" ")
    namespace, _, name = path.rpartition("/")
    return kind, namespace, name


def _events(kube: KubeEvidence, kind: str, namespace: str, name: str) -> list[EventRecord]:
    """Events regarding that object, newest last."""
    found = [
        e
        for e in kube.events
        if e.regarding.kind == kind
        and e.regarding.namespace == namespace
        and e.regarding.name == name
    ]
    return sorted(found, key=lambda e: (e.last_at or e.first_at or 0.0, e.name))


def _workload(kube: KubeEvidence, namespace: str, name: str) -> WorkloadRecord | None:
    return next((w for w in kube.workloads if (w.namespace, w.name) == (namespace, name)), None)


def _position(reason: WaitReason) -> str:
    if reason.queue_position is None:
        return ""
    return f"; {reason.queue_position} of {reason.queue_length} in its queue"


def _quota(evidence: ModelEvidence, reason: WaitReason) -> tuple[str, tuple[Fact, ...]]:
    need = (
        f"{reason.shortfall} more {reason.resource}"
        if reason.shortfall is not None
        else f"{reason.resource or 'quota'}"
    )
    text = (
        f"Kueue: not enough quota, {need} needed in flavor {reason.flavor or '?'}"
        f"{_position(reason)}; waiting {dur(reason.waited_seconds)}"
    )
    return text, facts(
        fact("resource", reason.resource),
        fact("flavor", reason.flavor),
        fact("shortfall", reason.shortfall, reason.resource),
        fact("queue_position", reason.queue_position),
        fact("queue_length", reason.queue_length),
        fact("waited_s", reason.waited_seconds, "s"),
    )


def _evicted(
    kube: KubeEvidence, reason: WaitReason, obj: tuple[str, str, str] | None
) -> tuple[str, tuple[Fact, ...]]:
    events = [
        e
        for e in (_events(kube, *obj) if obj else [])
        if (e.reason or "").startswith(_EVICTION_REASONS)
    ]
    last = events[-1] if events else None
    uid = _UID.search(reason.message or (last.note if last else "") or "")
    wl = _workload(kube, obj[1], obj[2]) if obj else None
    verb = "preempted" if reason.kind == WaitKind.PREEMPTED else "evicted"
    why = f" ({reason.reason})" if reason.reason else ""
    by = f" for workload {uid.group('uid')}" if uid else f": {clip(reason.message, 70)}"
    text = f"Workload {verb} {dur(reason.waited_seconds)} ago{why}{by}"
    return text, facts(
        fact("reason", reason.reason),
        fact("preemptor_uid", uid.group("uid") if uid else None),
        fact("at", reason.since, "unix_s"),
        fact("events", sum(e.count for e in events) if events else None),
        fact("requeues", wl.requeue_count if wl else None),
        fact("message", reason.message),
    )


def unschedulable(
    evidence: ModelEvidence, pod: PodRecord | None, reason: WaitReason | None
) -> Finding | None:
    """A pod the scheduler cannot place, its message condensed into node counts (the
    newest FailedScheduling Event's, else the PodScheduled condition's)."""
    kube = evidence.kube
    if not isinstance(kube, KubeEvidence) or (pod is None and reason is None):
        return None
    failure = pod.scheduling_failure if pod else None
    message = reason.message if reason else (failure.message if failure else None)
    since = reason.since if reason else (failure.since if failure else None)
    events = [
        e
        for e in (_events(kube, "Pod", pod.namespace, pod.name) if pod else [])
        if e.reason == "FailedScheduling"
    ]
    if events and events[-1].note:
        message = events[-1].note
    fit = condense(message)
    name = pod.name if pod else (reason.object if reason and reason.object else "?")
    if fit is not None:
        parts = ", ".join(f"{n} {why}" for why, n in fit.reasons)
        detail = f"{fit.fit}/{fit.total} nodes fit: {parts}"
    else:
        detail = clip(message or "no reason given", 100)
    counts = tuple(fact(f"nodes: {why}", n) for why, n in fit.reasons) if fit else ()
    pods = (pod.key,) if pod else ()
    return Finding(
        CauseKind.UNSCHEDULABLE,
        statement(
            f"Pod {name} unschedulable for {dur(evidence.now - (since or evidence.now))}: {detail}"
        ),
        since=since,
        facts=facts(
            fact("pod", name),
            fact("nodes_fit", fit.fit if fit else None),
            fact("nodes_total", fit.total if fit else None),
            *counts,
            fact("attempts", sum(e.count for e in events) if events else None),
            fact("message", None if fit else message),
        ),
        refs=(ref("Pod", pod.namespace, pod.name),) if pod else (),
        next=lookups.lookup(
            lookups.pod_query(pod.key) if pod else lookups.waiting_query(evidence.model.id),
            logs=lookups.logs(evidence, pods, (since or evidence.now, evidence.now), events=True),
            pods=pods,
        ),
        stage=KINDS[WaitKind.UNSCHEDULABLE][0],
    )


def _from_reason(evidence: ModelEvidence, kube: KubeEvidence, reason: WaitReason) -> Finding | None:
    obj = _objects(reason)
    kind = _KIND.get(reason.kind, CauseKind.WAITING_OTHER)
    if kind == CauseKind.UNSCHEDULABLE:
        pod = next((p for p in kube.pods if obj and (p.namespace, p.name) == obj[1:]), None)
        return unschedulable(evidence, pod, reason)
    if kind == CauseKind.QUOTA:
        text, found = _quota(evidence, reason)
    elif kind in (CauseKind.EVICTED, CauseKind.PREEMPTED):
        text, found = _evicted(kube, reason, obj)
    else:
        label = _LABELS.get(reason.kind) or reason.kind.replace("_", " ").capitalize()
        message = _SHORT.get(reason.kind, reason.message)
        text = f"{label} for {dur(reason.waited_seconds)}: {message}"
        found = facts(
            fact("reason", reason.reason),
            fact("waited_s", reason.waited_seconds, "s"),
            fact("queue_position", reason.queue_position),
            fact("queue_length", reason.queue_length),
            fact("message", reason.message),
        )
    graphql = (
        lookups.workloads_query(evidence.model.id)
        if obj and obj[0] == "Workload"
        else lookups.waiting_query(evidence.model.id)
    )
    return Finding(
        kind,
        statement(text),
        since=reason.since,
        facts=found,
        refs=(clip(reason.object, 80),) if reason.object else (),
        next=lookups.lookup(graphql),
        stage=KINDS[reason.kind][0],
        about=clip(reason.object, 80) if reason.object else None,
        clause=(
            f"its Workload was {kind.lower()} {dur(reason.waited_seconds)} ago"
            if kind in (CauseKind.EVICTED, CauseKind.PREEMPTED)
            else None
        ),
    )


def _keep(reasons: Sequence[WaitReason]) -> list[WaitReason]:
    """The reasons that are causes: the specific ones, the top one when it is only
    pending/starting, and not an eviction Kueue also reports as a preemption."""
    preempted = {r.object for r in reasons if r.kind == WaitKind.PREEMPTED}
    kept = []
    for r in reasons:
        if r.kind in _POD_KINDS:
            continue
        if r.kind == WaitKind.EVICTED and r.reason == "Preempted" and r.object in preempted:
            continue
        if r.kind not in _KIND and r is not reasons[0]:
            continue
        kept.append(r)
    return kept


def _running_evictions(evidence: ModelEvidence, kube: KubeEvidence) -> list[Finding]:
    """A held or failed model's Workload evicted or preempted now (its pods go)."""
    found = []
    for w in kube.workloads:
        for ctype, kind in (("Preempted", WaitKind.PREEMPTED), ("Evicted", WaitKind.EVICTED)):
            cond = w.condition(ctype)
            if cond is None or cond.status != "True" or not evidence.recent(cond.last_transition):
                continue
            if kind == WaitKind.EVICTED and cond.reason == "Preempted" and w.is_true("Preempted"):
                continue
            at = cond.last_transition
            reason = WaitReason(
                kind=kind,
                source="kueue",
                reason=cond.reason,
                message=cond.message or f"The Workload was {ctype.lower()}.",
                object=ref("Workload", w.namespace, w.name),
                since=at,
                waited_seconds=None if at is None else max(0.0, evidence.now - at),
            )
            finding = _from_reason(evidence, kube, reason)
            if finding is not None:
                found.append(finding)
    return found


def rules(evidence: ModelEvidence) -> list[Finding]:
    kube = evidence.kube
    if not isinstance(kube, KubeEvidence) or evidence.model.state == ModelState.ENDED:
        return []
    if evidence.model.state not in WAITING_STATES:
        found = _running_evictions(evidence, kube)
        if evidence.model.state == ModelState.FAILED:
            return found
        for pod in kube.pods:
            failure = pod.scheduling_failure
            if pod.deleting or pod.node_name is not None:
                continue
            if failure is not None and failure.reason == "Unschedulable":
                finding = unschedulable(evidence, pod, None)
                found += [finding] if finding else []
        return found
    return [f for r in _keep(kube.wait_reasons) if (f := _from_reason(evidence, kube, r))]

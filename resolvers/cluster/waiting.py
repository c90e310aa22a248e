"""Why is a model waiting? Causes ranked from the most to the least likely. Pure.

``why_waiting`` looks at what Kubernetes says about a model that is waiting for GPUs or
placed but not running yet: its Kueue Workloads (quota, admission checks, eviction,
preemption, requeues, deactivation), its pods (scheduling gates, unschedulable, waiting
containers, failures) and their DRA ResourceClaims (not allocated, not created yet).

The ranking follows the path a model takes to its GPUs: a cause at an earlier stage
blocks everything after it, so it comes first (no Workload at all; Workload
deactivated; evicted or preempted; not admissible; short of quota; admission checks;
admitted but no pods; pods gated or unschedulable; claims unallocated; containers not
starting). Within a stage, the longest-standing cause comes first (the stages and the
ranking are ``wait_reasons``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from openrl_inspect.adapters.kubernetes import ClaimRecord, Condition, PodRecord, WorkloadRecord
from openrl_inspect.core.domain import WAITING_STATES, WaitKind
from openrl_inspect.resolvers.cluster.wait_reasons import REQUEUED_HISTORY_STAGE, Causes, WaitReason
from openrl_inspect.state.records import ModelRecord

_QUOTA = re.compile(
    r"insufficient (?:unused )?quota for (?P<resource>[^\s,;]+) in flavor "
    r"(?P<flavor>[^\s,;]+)(?:,\s*(?P<more>\d+) more needed)?"
)
_CONTAINER_ERRORS = ("BackOff", "Err", "Invalid", "Error")


def _ref(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _is_finished(w: WorkloadRecord) -> bool:
    return w.is_true("Finished")


def _is_pending(w: WorkloadRecord) -> bool:
    return w.active and not _is_finished(w) and not w.is_true("QuotaReserved")


def queue_position(
    workload: WorkloadRecord, peers: Sequence[WorkloadRecord]
) -> tuple[int, int] | None:
    """Where ``workload`` stands among the pending Workloads of its LocalQueue, as Kueue
    orders them (priority, then creation): ``(position, pending)``, or None when it is
    not pending or has no queue. An estimate: Kueue's visibility API is authoritative."""
    if workload.queue_name is None or not _is_pending(workload):
        return None
    same = {
        w.key: w
        for w in (*peers, workload)
        if w.namespace == workload.namespace and w.queue_name == workload.queue_name
    }
    pending = sorted(
        (w for w in same.values() if _is_pending(w)),
        key=lambda w: (-(w.priority or 0), w.created or 0.0, w.name),
    )
    keys = [w.key for w in pending]
    return keys.index(workload.key) + 1, len(keys)


def _workload_causes(out: Causes, w: WorkloadRecord, peers: Sequence[WorkloadRecord]) -> bool:
    """Add the Workload's causes; True when it is admitted (pods may then be the cause)."""
    ref = _ref("Workload", w.namespace, w.name)
    quota = w.condition("QuotaReserved")
    admitted = w.is_true("Admitted")
    if not w.active:
        out.add(
            WaitKind.WORKLOAD_INACTIVE,
            "The Workload is deactivated (spec.active is false): Kueue will not admit it.",
            obj=ref,
            reason="Inactive",
            since=_since(w.condition("Evicted")) or w.created,
        )
    for ctype, kind in (("Evicted", WaitKind.EVICTED), ("Preempted", WaitKind.PREEMPTED)):
        cond = w.condition(ctype)
        if cond is not None and cond.status == "True" and not admitted:
            out.add(
                kind,
                cond.message or f"The Workload was {ctype.lower()}.",
                obj=ref,
                reason=cond.reason,
                since=cond.last_transition,
            )
    if not admitted and quota is not None and quota.status != "True":
        _quota_cause(out, w, quota, ref, peers)
    elif quota is None and not admitted and w.active:
        out.add(
            WaitKind.PENDING,
            "Kueue has not evaluated the Workload yet (no QuotaReserved condition).",
            obj=ref,
            since=w.created,
            position=queue_position(w, peers),
        )
    requeued = w.condition("Requeued")
    if w.requeue_count:
        message = f"Requeued {w.requeue_count} time(s) after eviction."
        if requeued is not None and requeued.message:
            message = f"{message} {requeued.message}"
        out.add(
            WaitKind.REQUEUED,
            message,
            obj=ref,
            reason=requeued.reason if requeued else None,
            since=requeued.last_transition if requeued else None,
            stage=REQUEUED_HISTORY_STAGE if admitted else None,
        )
    if quota is not None and quota.status == "True" and not admitted:
        cond = w.condition("Admitted")
        out.add(
            WaitKind.ADMISSION_CHECK,
            (cond.message if cond and cond.message else None)
            or "Quota is reserved; waiting for the admission checks to pass.",
            obj=ref,
            reason=cond.reason if cond else None,
            since=_since(cond) or quota.last_transition,
        )
    return admitted


def _since(cond: Condition | None) -> float | None:
    return None if cond is None else cond.last_transition


def _quota_cause(
    out: Causes,
    w: WorkloadRecord,
    quota: Condition,
    ref: str,
    peers: Sequence[WorkloadRecord],
) -> None:
    message = quota.message or "Waiting for quota."
    match = _QUOTA.search(message)
    details: tuple[str | None, str | None, int | None] = (None, None, None)
    if quota.reason == "Inadmissible":
        kind = WaitKind.INADMISSIBLE
    elif match is not None:
        kind = WaitKind.QUOTA
        more = match.group("more")
        details = (match.group("resource"), match.group("flavor"), int(more) if more else None)
    else:
        kind = WaitKind.PENDING
    out.add(
        kind,
        message,
        obj=ref,
        reason=quota.reason,
        since=quota.last_transition,
        quota=details,
        # An inadmissible Workload is in no queue Kueue serves (no LocalQueue, a stopped
        # ClusterQueue): it has no place to count.
        position=None if kind == WaitKind.INADMISSIBLE else queue_position(w, peers),
    )


def _pod_causes(out: Causes, pod: PodRecord, claims: Sequence[ClaimRecord]) -> None:
    ref = _ref("Pod", pod.namespace, pod.name)
    failure = pod.scheduling_failure
    if pod.phase == "Failed":
        out.add(
            WaitKind.POD_FAILED,
            f"The pod failed (phase Failed) on {pod.node_name or 'no node'}.",
            obj=ref,
            reason="Failed",
            since=pod.started or pod.created,
        )
    if failure is not None and pod.node_name is None:
        gated = failure.reason == "SchedulingGated"
        out.add(
            WaitKind.POD_GATED if gated else WaitKind.UNSCHEDULABLE,
            failure.message
            or ("The pod is gated until its Workload is admitted." if gated else "Unschedulable."),
            obj=ref,
            reason=failure.reason,
            since=failure.since,
        )
    _claim_causes(out, pod, claims)
    if pod.phase in ("Failed", "Succeeded"):
        return
    for container in pod.containers:
        if container.state != "waiting" or container.reason is None:
            continue
        error = any(marker in container.reason for marker in _CONTAINER_ERRORS)
        out.add(
            WaitKind.CONTAINER_ERROR if error else WaitKind.CONTAINER_WAITING,
            container.message or f"Container {container.name} is waiting: {container.reason}.",
            obj=ref,
            reason=container.reason,
            since=pod.started or pod.created,
        )


def _claim_causes(out: Causes, pod: PodRecord, claims: Sequence[ClaimRecord]) -> None:
    """The pod's DRA ResourceClaims that are not allocated, or not created yet."""
    ref = _ref("Pod", pod.namespace, pod.name)
    mine = [
        c
        for c in claims
        if c.namespace == pod.namespace
        and (c.name in pod.claim_names or any(r.name == pod.name for r in c.reserved_pods))
    ]
    for claim in sorted(mine, key=lambda c: c.name):
        if not claim.allocated:
            wanted = ", ".join(
                f"{r.count or 1} x {r.device_class or r.name}" for r in claim.requests
            )
            out.add(
                WaitKind.CLAIM_UNALLOCATED,
                f"ResourceClaim {claim.name} is not allocated"
                + (f" (requests {wanted})." if wanted else "."),
                obj=_ref("ResourceClaim", claim.namespace, claim.name),
                reason="NotAllocated",
                since=claim.created,
            )
    for entry in pod.resource_claims:
        if entry.claim_name is None and entry.template_name is not None:
            out.add(
                WaitKind.CLAIM_UNALLOCATED,
                f"The ResourceClaim for {entry.name!r} (template {entry.template_name}) "
                "has not been created yet.",
                obj=ref,
                reason="ClaimNotCreated",
                since=pod.created,
            )


def _missing_workload_causes(
    out: Causes, model: ModelRecord, workloads: Sequence[WorkloadRecord], has_pods: bool
) -> None:
    """The first stage: no Workload at all, only finished ones, or pods without one."""
    since = model.state_at
    if not workloads and not has_pods:
        out.add(
            WaitKind.NO_WORKLOAD,
            f"No Kueue Workload and no pods belong to model {model.id} (by its label or "
            "through its job): the model's job has not been created (or is not managed "
            "by Kueue).",
            obj=None,
            reason="NotFound",
            since=since,
        )
    elif workloads and all(_is_finished(w) for w in workloads):
        last = max(workloads, key=lambda w: _since(w.condition("Finished")) or 0.0)
        cond = last.condition("Finished")
        out.add(
            WaitKind.WORKLOAD_FINISHED,
            (cond.message if cond and cond.message else None)
            or "The model's Workload has finished; no new one was created.",
            obj=_ref("Workload", last.namespace, last.name),
            reason=cond.reason if cond else None,
            since=_since(cond),
        )
    elif not workloads:
        out.add(
            WaitKind.NO_WORKLOAD_FOR_PODS,
            "The model's pods have no Kueue Workload: they are not queued by Kueue.",
            obj=None,
            reason="NotFound",
            since=since,
        )


def why_waiting(
    model: ModelRecord,
    workloads: Sequence[WorkloadRecord],
    pods: Sequence[PodRecord],
    claims: Sequence[ClaimRecord],
    now: float,
    queue_peers: Sequence[WorkloadRecord] = (),
) -> list[WaitReason]:
    """The likely causes, most likely first (``rank`` 1). Empty unless the model is
    waiting or placed. ``workloads``, ``pods`` and ``claims`` are the model's (by its
    label or through the jobs that own them, claims of those pods); ``queue_peers`` are other
    Workloads of the same namespaces, for the position in the queue."""
    if model.state not in WAITING_STATES:
        return []
    out = Causes(now)
    since = model.state_at
    current = [w for w in workloads if not _is_finished(w)]
    live_pods = [p for p in pods if not p.deleting and p.phase != "Succeeded"]
    _missing_workload_causes(out, model, workloads, bool(live_pods))
    admitted = [w for w in current if _workload_causes(out, w, queue_peers)]
    if admitted and not live_pods:
        first = admitted[0]
        out.add(
            WaitKind.NO_PODS,
            "The Workload is admitted but none of the model's pods exist yet.",
            obj=_ref("Workload", first.namespace, first.name),
            reason="NoPods",
            since=_since(first.condition("Admitted")),
        )
    for pod in sorted(live_pods, key=lambda p: p.key):
        _pod_causes(out, pod, claims)
    if not out.causes:
        out.add(
            WaitKind.NOTHING_FOUND,
            "Kubernetes shows nothing blocking this model: its Workload is admitted and "
            "its pods are scheduled; the workers may still be starting.",
            obj=None,
            since=since,
        )
    return out.ranked()


def waiting_seconds(model: ModelRecord, now: float) -> float | None:
    """Seconds in the current state while waiting or placed-not-running, else None."""
    if model.state not in WAITING_STATES:
        return None
    since = model.state_at if model.state_at is not None else model.created_at
    return None if since is None else max(0.0, now - since)

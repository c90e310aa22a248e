"""Placements from Kubernetes: what Kueue gave each model, recorded so it outlives the pods.

``derive_placement`` is pure: from a model's Kueue Workload, its pods, their
ResourceClaims and the GPUs those name, it says whether the model holds a placement and
what: the pods, the node, the GPU UUIDs and when it was admitted. The placement id is
the Workload's UID and its admission time, so recording the same admission twice writes
the same record (idempotent) and a re-admission after an eviction is a new placement.

``PlacementTracker`` remembers what it has recorded: ``observe`` calls
``placement_admitted`` for a new admission or when more pods or GPUs show up (it keeps
every pod and GPU the placement ever had: the history), and ``placement_released``
when the Workload finishes, is evicted or disappears. ``sync`` reads one snapshot from
a ``KubernetesSource`` (the watch cache) and observes it.

A tracker starts empty: after a restart it records the current admissions again (the
same ids, so nothing is duplicated), but cannot know of releases that happened while it
was not running.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from openrl_inspect.adapters.kubernetes import (
    ClaimRecord,
    DeviceKey,
    GpuDevice,
    KubernetesSource,
    ObjectKey,
    PodRecord,
    WorkloadRecord,
)
from openrl_inspect.state.keys import valid_id

ENDED_PHASES = ("Succeeded", "Failed")
MAX_WORKLOAD_PAGES = 100
PAGE = 500


class PlacementWriter(Protocol):
    """The two recorder methods placements need (``RecorderBase`` has them)."""

    def placement_admitted(
        self,
        mid: str,
        pid: str,
        workload: str,
        namespace: str,
        pods: Sequence[str],
        node: str,
        gpu_ids: Sequence[str],
        at: float | None = None,
    ) -> None: ...

    def placement_released(self, mid: str, pid: str, at: float | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class PlacementFacts:
    model_id: str
    placement_id: str
    workload: str
    namespace: str
    pods: tuple[str, ...]
    node: str
    gpu_ids: tuple[str, ...]
    admitted_at: float | None


def admission_time(w: WorkloadRecord) -> float | None:
    cond = w.condition("Admitted")
    return cond.last_transition if cond is not None and cond.status == "True" else None


def is_admitted(w: WorkloadRecord) -> bool:
    return w.active and w.is_true("Admitted") and not w.is_true("Finished")


def placement_id(w: WorkloadRecord) -> str:
    """``<workload uid>.<admitted at, whole seconds>``: stable for one admission."""
    base = w.uid or f"{w.namespace}.{w.name}"
    at = admission_time(w)
    pid = base if at is None else f"{base}.{int(at)}"
    return pid if valid_id(pid) else f"{w.namespace}.{w.name}"[:128]


def _device_id(key: DeviceKey, gpus: Mapping[DeviceKey, GpuDevice]) -> str:
    gpu = gpus.get(key)
    if gpu is not None and gpu.uuid:
        return gpu.uuid
    return f"{key.pool}/{key.device}"  # not published (yet): keep its DRA name


def _pod_claims(pod: PodRecord, claims: Sequence[ClaimRecord]) -> list[ClaimRecord]:
    return [
        c
        for c in claims
        if c.namespace == pod.namespace
        and (c.name in pod.claim_names or any(r.name == pod.name for r in c.reserved_pods))
    ]


def _of_workload(pod: PodRecord, workload: WorkloadRecord) -> bool:
    """The pod runs the Workload's job: same namespace and model, and (when both name
    their jobs) a shared job UID — the Job's own, or a JobSet's on its pods."""
    if pod.namespace != workload.namespace or pod.model_id != workload.model_id:
        return False
    if pod.job_uids and workload.job_uids:
        return not set(pod.job_uids).isdisjoint(workload.job_uids)
    return True


def derive_placement(
    workload: WorkloadRecord,
    pods: Sequence[PodRecord],
    claims: Sequence[ClaimRecord],
    gpus: Sequence[GpuDevice],
) -> PlacementFacts | None:
    """The placement an admitted Workload of a model holds now, or None.

    ``pods`` are candidates; those of the Workload's job (``_of_workload``) that are
    bound to a node and have not ended count, and without one there is no placement yet
    (admitted is not placed). GPUs are the devices allocated to their claims, by UUID
    when published (else ``pool/device``); the node is the one most of the pods run on.
    """
    mid = workload.model_id
    if not mid or not valid_id(mid) or not is_admitted(workload):
        return None
    mine = sorted(
        (
            p
            for p in pods
            if _of_workload(p, workload) and p.node_name and p.phase not in ENDED_PHASES
        ),
        key=lambda p: p.name,
    )
    if not mine:
        return None
    by_key = {g.key: g for g in gpus}
    gpu_ids: list[str] = []
    gpu_nodes: list[str] = []
    for pod in mine:
        for claim in _pod_claims(pod, claims):
            if not claim.allocated:
                continue
            for device in claim.devices:
                ident = _device_id(device.key, by_key)
                if ident not in gpu_ids:
                    gpu_ids.append(ident)
                    gpu = by_key.get(device.key)
                    if gpu is not None and gpu.node_name:
                        gpu_nodes.append(gpu.node_name)
    nodes = Counter(p.node_name for p in mine if p.node_name) or Counter(gpu_nodes)
    node = min(nodes, key=lambda n: (-nodes[n], n)) if nodes else ""
    return PlacementFacts(
        model_id=mid,
        placement_id=placement_id(workload),
        workload=workload.name,
        namespace=workload.namespace,
        pods=tuple(p.name for p in mine),
        node=node,
        gpu_ids=tuple(gpu_ids),
        admitted_at=admission_time(workload),
    )


def release_time(w: WorkloadRecord | None, now: float, admitted_at: float | None = None) -> float:
    """When a placement admitted at ``admitted_at`` ended: the Workload's Finished,
    Evicted or Preempted transition after it, else its re-admission (an eviction and a
    re-admission both between two passes), else now."""
    if w is None:
        return now
    ends = []
    for ctype in ("Finished", "Evicted", "Preempted"):
        cond = w.condition(ctype)
        if cond is not None and cond.status == "True" and cond.last_transition:
            ends.append(cond.last_transition)
    readmitted = admission_time(w) if is_admitted(w) else None
    if admitted_at is not None:
        ends = [t for t in ends if t >= admitted_at]
        if readmitted is not None and readmitted > admitted_at:
            ends.append(readmitted)
    return min(ends, default=now)


def _merge(old: PlacementFacts, new: PlacementFacts) -> PlacementFacts:
    """Keep every pod and GPU the placement ever had."""
    pods = old.pods + tuple(p for p in new.pods if p not in old.pods)
    gpus = old.gpu_ids + tuple(g for g in new.gpu_ids if g not in old.gpu_ids)
    return replace(old, pods=pods, gpu_ids=gpus, node=old.node or new.node)


@dataclass(frozen=True, slots=True)
class Change:
    kind: str  # admitted | updated | released
    model_id: str
    placement_id: str


class PlacementTracker:
    """Records placements as Workloads are admitted and released (see the module doc)."""

    def __init__(self, writer: PlacementWriter) -> None:
        self.writer = writer
        self.open: dict[str, PlacementFacts] = {}
        self._workloads: dict[str, ObjectKey] = {}  # placement id -> its Workload

    def observe(
        self,
        workloads: Sequence[WorkloadRecord],
        pods: Sequence[PodRecord],
        claims: Sequence[ClaimRecord],
        gpus: Sequence[GpuDevice],
        now: float,
        *,
        complete: bool = True,
    ) -> list[Change]:
        """Record what changed since the last call. ``complete`` says the Workloads are
        all of them: only then does a missing Workload release its placement."""
        changes: list[Change] = []
        current: dict[str, WorkloadRecord] = {}
        by_key = {w.key: w for w in workloads}
        for w in sorted(workloads, key=lambda w: w.key):
            facts = derive_placement(w, pods, claims, gpus)
            if facts is None:
                continue
            pid = facts.placement_id
            current[pid] = w
            old = self.open.get(pid)
            if old is None:
                if facts.admitted_at is None:
                    facts = replace(facts, admitted_at=now)
                kind = "admitted"
            else:
                facts = _merge(old, facts)
                if facts == old:
                    continue
                kind = "updated"
            self._admit(facts)
            self.open[pid] = facts
            self._workloads[pid] = w.key
            changes.append(Change(kind, facts.model_id, pid))
        for pid, facts in sorted(self.open.items()):
            if pid in current:
                continue
            workload = by_key.get(self._workloads[pid])
            if workload is None and not complete:
                continue  # maybe just not in this partial snapshot
            at = release_time(workload, now, facts.admitted_at)
            self.writer.placement_released(facts.model_id, pid, at=at)
            del self.open[pid], self._workloads[pid]
            changes.append(Change("released", facts.model_id, pid))
        return changes

    def _admit(self, f: PlacementFacts) -> None:
        self.writer.placement_admitted(
            f.model_id,
            f.placement_id,
            workload=f.workload,
            namespace=f.namespace,
            pods=list(f.pods),
            node=f.node,
            gpu_ids=list(f.gpu_ids),
            at=f.admitted_at,
        )

    async def sync(
        self, source: KubernetesSource, now: float, namespace: str | None = None
    ) -> list[Change]:
        """Read the Workloads (all, or one namespace), their models' pods, claims and
        GPUs from ``source`` and observe them."""
        snap = await snapshot(source, namespace)
        return self.observe(
            snap.workloads, snap.pods, snap.claims, snap.gpus, now, complete=snap.complete
        )


@dataclass(frozen=True)
class Snapshot:
    workloads: list[WorkloadRecord]
    pods: list[PodRecord]
    claims: list[ClaimRecord]
    gpus: list[GpuDevice]
    # False when a list was truncated or answered while a cache was not in sync.
    complete: bool


async def snapshot(source: KubernetesSource, namespace: str | None = None) -> Snapshot:
    workloads: list[WorkloadRecord] = []
    complete = True
    after: ObjectKey | None = None
    for _ in range(MAX_WORKLOAD_PAGES):
        page = await source.list_workloads(namespace=namespace, after=after, limit=PAGE)
        workloads.extend(page.items)
        complete = complete and not page.degraded
        if not page.truncated or not page.items:
            break
        after = page.items[-1].key
    else:
        complete = False
    admitted = [w.key for w in workloads if w.model_id and is_admitted(w)]
    pod_lists = await source.pods_for_workloads(admitted, PAGE)
    pods = list({p.key: p for listing in pod_lists for p in listing.items}.values())
    claim_lists = await source.claims_for_pods([p.key for p in pods], PAGE)
    claims = list({c.key: c for listing in claim_lists for c in listing.items}.values())
    keys = sorted({d.key for c in claims for d in c.devices})
    gpus = [g for g in await source.gpus_by_device(keys) if g is not None]
    complete = complete and not any(x.truncated or x.degraded for x in pod_lists)
    complete = complete and not any(x.truncated or x.degraded for x in claim_lists)
    status = await source.status()
    complete = complete and not status.degraded
    return Snapshot(workloads, pods, claims, gpus, complete)

"""What the past rules read from the evidence: Events about an object, the recorded
placement of a pod, its role, its GPUs, and the pods a device taint evicted."""

from __future__ import annotations

from collections.abc import Sequence

from openrl_inspect.adapters.kubernetes import DeviceTaint, EventRecord, GpuDevice, ObjectKey
from openrl_inspect.resolvers.diagnosis import lookups
from openrl_inspect.resolvers.diagnosis.causes import Lookup
from openrl_inspect.resolvers.diagnosis.evidence import KubeEvidence, ModelEvidence
from openrl_inspect.state.records import PlacementRecord

DEVICE_TAINT_EVICTION = "DeviceTaintManagerEviction"
DEVICE_TAINT_DISRUPTION = "DeletionByDeviceTaintManager"


def at_of(e: EventRecord) -> float:
    return e.last_at or e.first_at or 0.0


def about(events: Sequence[EventRecord], kind: str, namespace: str, name: str) -> list[EventRecord]:
    found = [
        e
        for e in events
        if (e.regarding.kind, e.regarding.namespace, e.regarding.name) == (kind, namespace, name)
    ]
    return sorted(found, key=lambda e: (at_of(e), e.name))


def placement_of(evidence: ModelEvidence, namespace: str, pod: str) -> PlacementRecord | None:
    for p in evidence.state.placements:  # newest first
        if p.namespace == namespace and pod in p.pods:
            return p
    return None


def role_of(evidence: ModelEvidence, kube: KubeEvidence, pod: str) -> str | None:
    live = next((p for p in kube.pods if p.name == pod), None)
    if live is not None and live.worker_role:
        return live.worker_role
    return next((w.role for w, _ in evidence.state.workers if w.pod == pod), None)


def devices_of(kube: KubeEvidence, uuids: Sequence[str]) -> list[GpuDevice]:
    wanted = set(uuids)
    seen: dict[object, GpuDevice] = {}
    for g in (*kube.placement_gpus, *kube.gpus):
        if g.uuid in wanted or (g.parent_uuid is not None and g.parent_uuid in wanted):
            seen.setdefault(g.key, g)
    return list(seen.values())


def xid_of(taint: DeviceTaint) -> str | None:
    """The Xid a taint reports (NVIDIA's DRA driver: ``gpu.nvidia.com/xid=79``)."""
    return taint.value if "xid" in taint.key.lower() and taint.value else None


def pod_next(evidence: ModelEvidence, key: ObjectKey, node: str | None, at: float) -> Lookup:
    return lookups.lookup(
        lookups.node_query(node) if node else lookups.summary_query(evidence.model.id),
        logs=lookups.logs(evidence, (key,), (at - 300.0, at + 60.0), events=True),
        pods=(key,),
        nodes=[node],
    )


def taint_evictions(kube: KubeEvidence) -> dict[tuple[str, str], tuple[float, str | None]]:
    """Pods the device taint eviction controller deleted: (namespace, name) -> when, and
    the message."""
    found: dict[tuple[str, str], tuple[float, str | None]] = {}
    for e in kube.events:
        if e.reason != DEVICE_TAINT_EVICTION or e.regarding.kind != "Pod":
            continue
        if (e.note or "").startswith("Cancelling"):
            continue  # the taint went away (or got tolerated) before the deletion
        key = (e.regarding.namespace, e.regarding.name)
        if key not in found or at_of(e) > found[key][0]:
            found[key] = (at_of(e), e.note)
    for pod in kube.pods:
        for cond in pod.conditions:
            if cond.type == "DisruptionTarget" and cond.reason == DEVICE_TAINT_DISRUPTION:
                at = cond.last_transition or 0.0
                found.setdefault((pod.namespace, pod.name), (at, cond.message))
    return found

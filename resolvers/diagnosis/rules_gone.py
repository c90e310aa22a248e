"""The existing causes of a pod that no longer exists, from its Events and its node's:
CRASH_LOOP (BackOff), IMAGE_PULL (Failed pulls), EVICTED (the kubelet's Evicted), and
OOM_KILLED (the node's OOMKilling while the pod ran there). A pod the device taint
eviction controller deleted is ``rules_past``'s."""

from __future__ import annotations

from openrl_inspect.adapters.kubernetes import EventRecord, ObjectKey
from openrl_inspect.core.domain import CauseKind
from openrl_inspect.resolvers.diagnosis.causes import Finding
from openrl_inspect.resolvers.diagnosis.evidence import KubeEvidence, ModelEvidence
from openrl_inspect.resolvers.diagnosis.past_facts import (
    about,
    at_of,
    placement_of,
    pod_next,
    role_of,
    taint_evictions,
)
from openrl_inspect.resolvers.diagnosis.text import clip, dur, fact, facts, ref, statement
from openrl_inspect.state.records import PlacementRecord

NODE_OOM_REASONS = frozenset({"OOMKilling", "SystemOOM"})
MAX_GONE_PODS = 2


def gone_pods(evidence: ModelEvidence, kube: KubeEvidence) -> list[Finding]:
    out = []
    evicted_by_taint = taint_evictions(kube)
    for namespace, name in kube.gone_pods:
        if (namespace, name) in evicted_by_taint:
            continue
        finding = _gone_pod(evidence, kube, namespace, name)
        if finding is not None:
            out.append(finding)
    return out[:MAX_GONE_PODS]


Pick = tuple[CauseKind, EventRecord, str, str]  # kind, its Event, statement, clause


def _from_pod_events(evidence: ModelEvidence, events: list[EventRecord]) -> Pick | None:
    for e in reversed(events):
        note = e.note or ""
        if e.reason == "BackOff" and e.count >= evidence.thresholds.crash_restarts:
            return (CauseKind.CRASH_LOOP, e, f"crash-looped ({e.count} back-offs)", "crash-looped")
        if e.reason in ("Failed", "ErrImagePull") and "pull" in note.lower():
            return (CauseKind.IMAGE_PULL, e, "could not pull its image", "could not pull its image")
        if e.reason == "Evicted":
            return (CauseKind.EVICTED, e, "was evicted by the kubelet", "was evicted")
    return None


def _from_node_oom(
    evidence: ModelEvidence, kube: KubeEvidence, placement: PlacementRecord | None
) -> Pick | None:
    """The node's OOM kill while the pod ran there."""
    if placement is None or not placement.node:
        return None
    end = placement.released_at or evidence.now
    start = placement.admitted_at or end
    ooms = [
        e
        for e in about(kube.events, "Node", "", placement.node)
        if e.reason in NODE_OOM_REASONS and start <= at_of(e) <= end + 60.0
    ]
    if not ooms:
        return None
    text = f"ran on {placement.node} when it OOM-killed"
    return (CauseKind.OOM_KILLED, ooms[-1], text, "was OOM-killed")


def _gone_pod(
    evidence: ModelEvidence, kube: KubeEvidence, namespace: str, name: str
) -> Finding | None:
    events = about(kube.events, "Pod", namespace, name)
    placement = placement_of(evidence, namespace, name)
    node = placement.node if placement else None
    key = ObjectKey(namespace, name)
    role = role_of(evidence, kube, name) or "worker"
    pick = _from_pod_events(evidence, events) or _from_node_oom(evidence, kube, placement)
    if pick is None:
        return None
    kind, event, text, clause = pick
    at = at_of(event)
    if not evidence.recent(at):
        return None
    return Finding(
        kind,
        statement(
            f"Pod {name} (gone) {text} {dur(evidence.now - at)} ago: {clip(event.note or '', 70)}"
        ),
        since=at,
        facts=facts(
            fact("pod", name),
            fact("role", role),
            fact("node", node),
            fact("reason", event.reason),
            fact("at", at, "unix_s"),
            fact("count", event.count),
            fact("message", event.note),
            fact("pod_gone", "yes"),
        ),
        refs=(ref("Pod", namespace, name),),
        next=pod_next(evidence, key, node, at),
        about=ref("Pod", namespace, name),
        pods=(name,),
        clause=f"its {role} pod {clause}",
    )

"""Causes in what outlives the pods: the recorded placements' pods, Workloads, nodes and
GPUs, and the Events about them (the watch cache, then Cloud Logging's events log).

- EVICTED_BY_DEVICE_TAINT: the device taint eviction controller deleted a pod of the
  model (Event ``DeviceTaintManagerEviction`` "Marking for deletion", or the pod's
  ``DisruptionTarget`` condition ``DeletionByDeviceTaintManager``): the NoExecute taint
  on a GPU its placement held, the DeviceTaintRule that put it there, the Xid.
- PREEMPTED (past): Kueue preempted the model's Workload and it runs again, or not yet:
  by which Workload (the UID Kueue's message names), when, and where it was re-admitted
  (the placement admitted after it). Kueue keeps the trace in the Workload's Evicted and
  Preempted conditions ("Previously: ..." once re-admitted) and in its Preempted Event.
- NODE_LOST: the node of the current placement is gone from the cluster or NotReady,
  or a recent placement ended as its node went (the node's Events say so).
- The existing causes of a pod that no longer exists, from its Events: CRASH_LOOP
  (BackOff), IMAGE_PULL (Failed pulls), EVICTED (the kubelet's Evicted), OOM_KILLED (the
  node's OOMKilling while the pod ran there).

A live pod's own causes are ``rules_pods``'s; a waiting model's preemption is
``rules_waiting``'s. Only what happened recently counts (``ModelEvidence.recent``).
"""

from __future__ import annotations

import re

from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.core.domain import CauseKind, ModelState
from openrl_inspect.resolvers.diagnosis import lookups, rules_gone
from openrl_inspect.resolvers.diagnosis.causes import Finding
from openrl_inspect.resolvers.diagnosis.evidence import KubeEvidence, ModelEvidence
from openrl_inspect.resolvers.diagnosis.past_facts import (
    about,
    at_of,
    devices_of,
    placement_of,
    pod_next,
    role_of,
    taint_evictions,
    xid_of,
)
from openrl_inspect.resolvers.diagnosis.text import clip, dur, fact, facts, ref, statement

NODE_GONE_REASONS = frozenset({"NodeNotReady", "RemovingNode", "DeletingNode", "NodeShutdown"})
NODE_OOM_REASONS = frozenset({"OOMKilling", "SystemOOM"})
MAX_PAST_PODS = 2
SLACK_S = 120.0
_UID = re.compile(r"\(UID: ([^,)]+)")
_PREVIOUSLY = "Previously: "


# --- evicted by a device taint ----------------------------------------------------------


def evicted_by_device_taint(evidence: ModelEvidence, kube: KubeEvidence) -> list[Finding]:
    out = []
    evictions = sorted(taint_evictions(kube).items(), key=lambda kv: (-kv[1][0], kv[0]))
    for (namespace, name), (at, note) in evictions[:MAX_PAST_PODS]:
        if not evidence.recent(at):
            continue
        placement = placement_of(evidence, namespace, name)
        live = next((p for p in kube.pods if (p.namespace, p.name) == (namespace, name)), None)
        node = placement.node if placement else (live.node_name if live else None)
        uuids = placement.gpu_ids if placement else []
        tainted = [
            (g, t) for g in devices_of(kube, uuids) for t in g.taints if t.effect == "NoExecute"
        ]
        device, taint = tainted[0] if tainted else (None, None)
        xid = xid_of(taint) if taint else None
        role = role_of(evidence, kube, name) or "worker"
        gone = (namespace, name) in kube.gone_pods
        what = (
            f"{taint.key}={taint.value}" if taint and taint.value else (taint.key if taint else "?")
        )
        gpu = (device.uuid or device.device) if device else "its GPU"
        rule = taint.rule if taint else None
        by = f"DeviceTaintRule {rule}" if rule else "a device taint"
        xid_text = f", Xid {xid}" if xid else ""
        out.append(
            Finding(
                CauseKind.EVICTED_BY_DEVICE_TAINT,
                statement(
                    f"Pod {name} evicted {dur(evidence.now - at)} ago by {by} (NoExecute {what} "
                    f"on {gpu} of {node or '?'}{xid_text})" + ("; the pod is gone" if gone else "")
                ),
                since=at,
                facts=facts(
                    fact("pod", name),
                    fact("role", role),
                    fact("rule", rule),
                    fact("device", device.device if device else None),
                    fact("uuid", device.uuid if device else None),
                    fact("node", node),
                    fact("taint", f"{what}:NoExecute" if taint else None),
                    fact("xid", xid),
                    fact("evicted_at", at, "unix_s"),
                    fact("pod_gone", "yes" if gone else "no"),
                    fact("message", note),
                ),
                refs=(
                    ref("Pod", namespace, name),
                    *((f"GPU {device.uuid}",) if device and device.uuid else ()),
                    *((ref("DeviceTaintRule", "", rule),) if rule else ()),
                ),
                next=pod_next(evidence, ObjectKey(namespace, name), node, at),
                about=ref("Pod", namespace, name),
                pods=(name,),
                clause=f"its {role} pod was evicted by {by} "
                + (f"(Xid {xid} on {gpu})" if xid else f"({what} on {gpu})"),
            )
        )
    return out


# --- preempted, and re-admitted ----------------------------------------------------------


def _workload_names(evidence: ModelEvidence, kube: KubeEvidence) -> list[tuple[str, str]]:
    names = [(w.namespace, w.name) for w in kube.workloads]
    names += [(p.namespace, p.workload) for p in evidence.state.placements if p.workload]
    return list(dict.fromkeys(names))


def _preemption(kube: KubeEvidence, namespace: str, name: str) -> tuple[float, str] | None:
    """When the Workload was last preempted and Kueue's message: its Preempted Event,
    else the reset conditions of a re-admitted Workload ("Previously: ...")."""
    events = [e for e in about(kube.events, "Workload", namespace, name) if e.reason == "Preempted"]
    if events:
        return at_of(events[-1]), events[-1].note or ""
    w = next((w for w in kube.workloads if (w.namespace, w.name) == (namespace, name)), None)
    for ctype in ("Preempted", "Evicted"):
        cond = w.condition(ctype) if w else None
        message = (cond.message or "") if cond is not None else ""
        if cond is not None and message.startswith(_PREVIOUSLY + "Preempted"):
            # The reset's time is the re-admission; the preemption was before it.
            return cond.last_transition or 0.0, message[len(_PREVIOUSLY) :]
    return None


def preempted(evidence: ModelEvidence, kube: KubeEvidence) -> list[Finding]:
    if evidence.model.state == ModelState.WAITING:
        return []  # rules_waiting says why it waits
    if any(w.is_true("Preempted") for w in kube.workloads):
        return []  # preempted now: rules_waiting's running evictions
    out = []
    for namespace, name in _workload_names(evidence, kube):
        found = _preemption(kube, namespace, name)
        if found is None or not evidence.recent(found[0]):
            continue
        at, message = found
        uid = _UID.search(message)
        by = uid.group(1) if uid else None
        after = [p for p in evidence.state.placements if (p.admitted_at or 0.0) > at]
        again = min(after, key=lambda p: p.admitted_at or 0.0) if after else None
        before = next((p for p in evidence.state.placements if (p.admitted_at or 0.0) <= at), None)
        where = (
            f"; re-admitted on {again.node} {dur((again.admitted_at or at) - at)} later"
            if again
            else "; not re-admitted"
        )
        who = f" by workload UID {by}" if by else ""
        out.append(
            Finding(
                CauseKind.PREEMPTED,
                statement(
                    f"Workload {name} preempted {dur(evidence.now - at)} ago{who}"
                    + (f" on {before.node}" if before else "")
                    + where
                ),
                since=at,
                facts=facts(
                    fact("workload", name),
                    fact("preempted_at", at, "unix_s"),
                    fact("preemptor_uid", by),
                    fact("node", before.node if before else None),
                    fact("readmitted_on", again.node if again else None),
                    fact("readmitted_at", again.admitted_at if again else None, "unix_s"),
                    fact("message", clip(message)),
                ),
                refs=(ref("Workload", namespace, name),),
                next=lookups.lookup(
                    lookups.workloads_query(evidence.model.id),
                    nodes=[before.node if before else None, again.node if again else None],
                ),
                about=ref("Workload", namespace, name),
                clause=f"its Workload was preempted{who} {dur(evidence.now - at)} ago"
                + (f", re-admitted on {again.node}" if again else ", not re-admitted"),
            )
        )
        break  # the model's one Workload at a time
    return out


# --- a node lost -------------------------------------------------------------------------


def nodes_lost(evidence: ModelEvidence, kube: KubeEvidence) -> list[Finding]:
    ready = {n.name: n.ready for n in (*kube.nodes, *kube.placement_nodes)}
    out = []
    for p in evidence.state.placements:
        gone = p.node in kube.nodes_gone
        if not (gone or ready.get(p.node) is False):
            continue
        node_events = about(kube.events, "Node", "", p.node)
        events = [e for e in node_events if e.reason in NODE_GONE_REASONS]
        if p.released_at is not None:
            # A placement that ended did so for a reason of its own (a preemption, the
            # model's end) unless its node's Events say it went away as it ended.
            end = p.released_at
            if not evidence.recent(end):
                continue
            events = [e for e in events if end - 600.0 <= at_of(e) <= end + SLACK_S]
            if not events:
                continue
        at = at_of(events[-1]) if events else (p.released_at or p.admitted_at)
        state = "is gone from the cluster" if gone else "is NotReady"
        seen = (
            f" ({events[-1].reason} {dur(evidence.now - at_of(events[-1]))} ago)" if events else ""
        )
        out.append(
            Finding(
                CauseKind.NODE_LOST,
                statement(
                    f"Node {p.node} {state}{seen}; it ran the model's pods "
                    f"{', '.join(p.pods[:2]) or '?'} on {len(p.gpu_ids)} GPU(s)"
                ),
                since=at,
                facts=facts(
                    fact("node", p.node),
                    fact("state", "gone" if gone else "NotReady"),
                    fact("event", events[-1].reason if events else None),
                    fact("message", events[-1].note if events else None),
                    fact("at", at, "unix_s"),
                    fact("pods", ", ".join(p.pods)),
                    fact("gpus", len(p.gpu_ids)),
                ),
                refs=(ref("Node", "", p.node),),
                next=lookups.lookup(lookups.node_query(p.node), nodes=[p.node]),
                about=ref("Node", "", p.node),
                pods=tuple(p.pods),
                clause=f"its node {p.node} {'went away' if gone else 'went NotReady'}",
            )
        )
        break  # the newest such placement
    return out


def rules(evidence: ModelEvidence) -> list[Finding]:
    kube = evidence.kube
    if not isinstance(kube, KubeEvidence) or evidence.model.state == ModelState.ENDED:
        return []
    return [
        *evicted_by_device_taint(evidence, kube),
        *preempted(evidence, kube),
        *nodes_lost(evidence, kube),
        *rules_gone.gone_pods(evidence, kube),
    ]

"""Kubernetes Events as the API server serves them through ``events.k8s.io/v1``.

Two shapes reach a client of events.k8s.io/v1:

* events written through the new API (the scheduler's ``tools/events`` recorder):
  ``eventTime`` (MicroTime, microseconds), a ``series`` once repeated, ``action``, and
  the deprecated fields left empty (``null`` times, ``deprecatedSource: {}``);
* events written through core/v1 (the kubelet, Kueue, the node controller), converted by
  the API server: ``eventTime: null`` (a zero MicroTime), no series, and their times,
  count and source in ``deprecatedFirstTimestamp``/``deprecatedLastTimestamp``,
  ``deprecatedCount``, ``deprecatedSource``; a Node's events live in ``default`` and
  their ``regarding`` has no namespace.

``cloud_logging_entry`` is the same event as GKE's event exporter writes it to Cloud
Logging: log ``events``, resource ``k8s_pod`` / ``k8s_node`` / ``k8s_cluster``, the
core/v1 Event as ``jsonPayload`` without count and first/last timestamps, timestamp the
last time seen, severity WARNING for Warning and INFO otherwise.
"""

from __future__ import annotations

from typing import Any

from support.kube_objects import NAMESPACE, PENDING_QUOTA_MESSAGE, UNSCHEDULABLE_MESSAGE

Obj = dict[str, Any]

KUEUE_API = "kueue.x-k8s.io/v1beta1"
SCHEDULER_INSTANCE = "default-scheduler-gke-openrl-control-plane"


def _meta(name: str, namespace: str, created: str, rv: str = "48213") -> Obj:
    return {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-ev-{name}",
        "resourceVersion": rv,
        "creationTimestamp": created,
    }


def regarding(kind: str, name: str, namespace: str | None = NAMESPACE, **extra: str) -> Obj:
    api = {"Pod": "v1", "Node": "v1", "Workload": KUEUE_API}.get(kind, "v1")
    ref: Obj = {"kind": kind, "name": name, "uid": f"uid-{kind.lower()}-{name}"}
    if namespace:
        ref["namespace"] = namespace
    ref.update({"apiVersion": api, "resourceVersion": "40110", **extra})
    return ref


def failed_scheduling(
    pod: str = "lora-b-trainer-0",
    *,
    count: int = 12,
    first: str = "2026-01-05T09:30:01.234567Z",
    last: str = "2026-01-05T09:39:30.000000Z",
    suffix: str = "1881c6a3f0e2b7d4",
) -> Obj:
    """The scheduler's FailedScheduling, repeated: a new-API event with a series."""
    return {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": _meta(f"{pod}.{suffix}", NAMESPACE, first[:19] + "Z"),
        "eventTime": first,
        "series": {"count": count, "lastObservedTime": last},
        "reportingController": "default-scheduler",
        "reportingInstance": SCHEDULER_INSTANCE,
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "regarding": regarding("Pod", pod),
        "note": UNSCHEDULABLE_MESSAGE + " preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod.",
        "type": "Warning",
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }


def scheduled(pod: str = "lora-a-trainer-0", node: str = "gpu-h100-1") -> Obj:
    """A single new-API event: no series."""
    at = "2026-01-05T09:00:41.503219Z"
    return {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": _meta(f"{pod}.1881c5e9d4a0c311", NAMESPACE, "2026-01-05T09:00:41Z"),
        "eventTime": at,
        "reportingController": "default-scheduler",
        "reportingInstance": SCHEDULER_INSTANCE,
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": regarding("Pod", pod),
        "note": f"Successfully assigned {NAMESPACE}/{pod} to {node}",
        "type": "Normal",
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }


def back_off(
    pod: str = "lora-a-trainer-0",
    node: str = "gpu-h100-1",
    *,
    count: int = 7,
    first: str = "2026-01-05T09:12:00Z",
    last: str = "2026-01-05T09:18:00Z",
) -> Obj:
    """The kubelet's BackOff, written through core/v1: only deprecated* times."""
    return {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": _meta(f"{pod}.1881c63d0b9e5a27", NAMESPACE, first),
        "eventTime": None,
        "reportingController": "kubelet",
        "reportingInstance": node,
        "reason": "BackOff",
        "regarding": regarding("Pod", pod, fieldPath="spec.containers{trainer}"),
        "note": f"Back-off restarting failed container trainer in pod {pod}_{NAMESPACE}"
        f"(uid-pod-{pod})",
        "type": "Warning",
        "deprecatedSource": {"component": "kubelet", "host": node},
        "deprecatedFirstTimestamp": first,
        "deprecatedLastTimestamp": last,
        "deprecatedCount": count,
    }


def kueue_pending(workload: str = "job-lora-b-trainer-3f9c2") -> Obj:
    """Kueue's Pending on a Workload (core/v1 recorder, no reporting fields)."""
    return {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": _meta(f"{workload}.1881c6a3e1f40a9b", NAMESPACE, "2026-01-05T09:30:00Z"),
        "eventTime": None,
        "reason": "Pending",
        "regarding": regarding("Workload", workload),
        "note": PENDING_QUOTA_MESSAGE,
        "type": "Normal",
        "deprecatedSource": {"component": "kueue-admission"},
        "deprecatedFirstTimestamp": "2026-01-05T09:30:00Z",
        "deprecatedLastTimestamp": "2026-01-05T09:41:00Z",
        "deprecatedCount": 23,
    }


def node_not_ready(node: str = "gpu-h200-1") -> Obj:
    """The node controller's NodeNotReady: a cluster-scoped object, event in default."""
    return {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": _meta(f"{node}.1881c70155d2e8f0", "default", "2026-01-05T09:50:12Z"),
        "eventTime": None,
        "reportingController": "node-controller",
        "reason": "NodeNotReady",
        "regarding": regarding("Node", node, namespace=None),
        "note": f"Node {node} status is now: NodeNotReady",
        "type": "Normal",
        "deprecatedSource": {"component": "node-controller"},
        "deprecatedFirstTimestamp": "2026-01-05T09:50:12Z",
        "deprecatedLastTimestamp": "2026-01-05T09:50:12Z",
        "deprecatedCount": 1,
    }


def all_events() -> list[Obj]:
    return [
        failed_scheduling(),
        scheduled(),
        back_off(),
        kueue_pending(),
        node_not_ready(),
    ]


# --------------------------------------------------------------------- Cloud Logging


def core_v1(event: Obj) -> Obj:
    """The core/v1 Event the API server holds for an events.k8s.io/v1 one."""
    series = event.get("series") or {}
    meta = dict(event["metadata"])
    core: Obj = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": meta,
        "involvedObject": event["regarding"],
        "reason": event.get("reason"),
        "message": event.get("note"),
        "source": event.get("deprecatedSource") or {},
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp") or series.get("lastObservedTime"),
        "count": event.get("deprecatedCount") or series.get("count") or 1,
        "type": event.get("type"),
        "eventTime": event.get("eventTime"),
        "reportingComponent": event.get("reportingController", ""),
        "reportingInstance": event.get("reportingInstance", ""),
    }
    if "action" in event:
        core["action"] = event["action"]
    if "series" in event:
        core["series"] = {"count": series["count"], "lastObservedTime": series["lastObservedTime"]}
    return core


def cloud_logging_entry(
    event: Obj,
    *,
    project: str = "openrl-local",
    cluster: str = "openrl-gke",
    location: str = "us-central1",
    insert_id: str | None = None,
) -> Obj:
    """The LogEntry GKE's event exporter writes for ``event`` (events.k8s.io/v1 shape)."""
    core = core_v1(event)
    involved = core["involvedObject"]
    namespace = core["metadata"]["namespace"]
    labels = {"project_id": project, "location": location, "cluster_name": cluster}
    if involved["kind"] == "Pod" and involved.get("namespace") == namespace:
        resource = {"type": "k8s_pod", "labels": {**labels, "pod_name": involved["name"],
                                                  "namespace_name": namespace}}  # fmt: skip
    elif involved["kind"] == "Node" and namespace in ("default", "kube-system"):
        resource = {"type": "k8s_node", "labels": {**labels, "node_name": involved["name"]}}
    else:
        resource = {"type": "k8s_cluster", "labels": labels}
    stamp = core["lastTimestamp"] or core["eventTime"]
    payload = {k: v for k, v in core.items() if k not in ("count", "firstTimestamp",
                                                           "lastTimestamp")}  # fmt: skip
    return {
        "insertId": insert_id or f"ev-{core['metadata']['name']}",
        "jsonPayload": payload,
        "resource": resource,
        "timestamp": stamp,
        "severity": "WARNING" if core.get("type") == "Warning" else "INFO",
        "logName": f"projects/{project}/logs/events",
        "receiveTimestamp": stamp,
    }

"""Events (``events.k8s.io/v1``) as the API server serves them, for staging.

Two shapes, as they reach a reader of events.k8s.io/v1: what the scheduler records
through the new API (``eventTime``, a ``series`` once repeated, ``action``,
``reportingController``), and what the kubelet, Kueue, node-problem-detector and the
controller manager record through core/v1, converted by the API server
(``eventTime: null``; ``deprecatedSource``, first and last timestamps and count). A
Node's events live in namespace ``default`` and regard it without a namespace.

A repeating event (a back-off, a scheduling retry) is seen again every ``every_s``
up to the simulation's present, so the demo keeps it fresh as the cluster would.
"""

from __future__ import annotations

import zlib
from typing import Any

from openrl_inspect.simulator.kube_twin import NAMESPACE
from openrl_inspect.simulator.scenarios.objects import iso, micro

Json = dict[str, Any]
API = {"Pod": "v1", "Node": "v1", "Workload": "kueue.x-k8s.io/v1beta2"}
SCHEDULER_INSTANCE = "default-scheduler-gke-openrl-control-plane"


def regarding(kind: str, name: str, uid: str, namespace: str = NAMESPACE, **extra: str) -> Json:
    ref: Json = {"kind": kind, "name": name, "uid": uid, "apiVersion": API.get(kind, "v1")}
    if namespace:
        ref["namespace"] = namespace
    return {**ref, **extra}


def repeats(first: float, every_s: float, now: float) -> tuple[int, float]:
    """How many times an event first seen at ``first`` and repeating every ``every_s``
    was seen by ``now``, and when last."""
    count = 1 + max(0, int((now - first) // every_s))
    return count, first + (count - 1) * every_s


def _name(ref: Json, reason: str, first: float) -> str:
    return f"{ref['name']}.{zlib.crc32(f'{reason}{first:.0f}'.encode()):08x}{int(first):x}"


def core_event(
    ref: Json,
    reason: str,
    note: str,
    *,
    component: str,
    first: float,
    last: float | None = None,
    count: int = 1,
    host: str = "",
    warning: bool = True,
) -> Json:
    """An event recorded through core/v1 (kubelet, Kueue, node-problem-detector, the
    controller manager), as events.k8s.io/v1 serves it."""
    source = {"component": component, **({"host": host} if host else {})}
    namespace = ref.get("namespace") or "default"
    return {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {
            "name": _name(ref, reason, first),
            "namespace": namespace,
            "uid": f"uid-ev-{_name(ref, reason, first)}",
            "creationTimestamp": iso(first),
        },
        "eventTime": None,
        "reason": reason,
        "regarding": ref,
        "note": note,
        "type": "Warning" if warning else "Normal",
        "deprecatedSource": source,
        "deprecatedFirstTimestamp": iso(first),
        "deprecatedLastTimestamp": iso(last if last is not None else first),
        "deprecatedCount": count,
    }


def scheduler_event(ref: Json, note: str, *, first: float, last: float, count: int) -> Json:
    """The scheduler's FailedScheduling, through the new API, with its series."""
    event: Json = {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {
            "name": _name(ref, "FailedScheduling", first),
            "namespace": ref.get("namespace") or "default",
            "uid": f"uid-ev-{_name(ref, 'FailedScheduling', first)}",
            "creationTimestamp": iso(first),
        },
        "eventTime": micro(first),
        "reportingController": "default-scheduler",
        "reportingInstance": SCHEDULER_INSTANCE,
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "regarding": ref,
        "note": note,
        "type": "Warning",
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }
    if count > 1:
        event["series"] = {"count": count, "lastObservedTime": micro(last)}
    return event

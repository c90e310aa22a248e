"""What the API server does when an object stored at one version is read at another.

A CRD with several served versions converts through its conversion webhook (Kueue's:
v1beta2 is the hub, ``apis/kueue/v1beta1/*_conversion.go``); built-in groups convert
in the API server (``resource.k8s.io``: v1 and v1beta2 have one shape, v1beta1 nests a
device under ``basic`` and inlines a claim request). ``convert`` does the same for the
fields the fixtures carry, so ``FakeKube`` serves each object at the version asked for,
``apiVersion`` included, whatever version a test wrote it in.

Not converted (no fixture carries them): Kueue's topology assignments (``domains`` in
v1beta1, ``slices`` in v1beta2) and the ClusterQueue/LocalQueue renames.
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

KUEUE = "kueue.x-k8s.io"
DRA = "resource.k8s.io"
# v1beta1 priorityClassSource <-> v1beta2 priorityClassRef (group, kind).
_PRIORITY = {
    "kueue.x-k8s.io/workloadpriorityclass": ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    "scheduling.k8s.io/priorityclass": ("scheduling.k8s.io", "PriorityClass"),
}
# The fields v1beta1 keeps under a device's "basic" and v1/v1beta2 on the device.
_BASIC = (
    "attributes",
    "capacity",
    "consumesCounters",
    "nodeName",
    "nodeSelector",
    "allNodes",
    "taints",
    "bindsToNode",
    "bindingConditions",
    "bindingFailureConditions",
    "allowMultipleAllocations",
)
# The fields v1beta1 inlines on a claim request and v1/v1beta2 put under "exactly".
_EXACTLY = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


def version_of(obj: Obj) -> str:
    return str(obj.get("apiVersion", "")).rpartition("/")[2]


def convert(obj: Obj, group: str, version: str) -> Obj:
    """``obj`` (a deep copy) as the API server serves it at ``group/version``."""
    out = copy.deepcopy(obj)
    have = version_of(out)
    if have != version:
        if group == KUEUE and out.get("kind") == "Workload":
            _workload(out, version)
        elif group == DRA and out.get("kind") == "ResourceSlice":
            _slice(out, have, version)
        elif group == DRA and out.get("kind") == "ResourceClaim":
            _claim(out, have, version)
    if group:
        out["apiVersion"] = f"{group}/{version}"
    return out


def _workload(obj: Obj, version: str) -> None:
    spec, status = obj.setdefault("spec", {}), obj.get("status") or {}
    if version == "v1beta1":
        ref = spec.pop("priorityClassRef", None)
        if ref:
            source = next(
                (s for s, gk in _PRIORITY.items() if gk == (ref.get("group"), ref.get("kind"))),
                "",
            )
            spec["priorityClassName"] = ref.get("name", "")
            spec["priorityClassSource"] = source
        if "accumulatedPastExecutionTimeSeconds" in status:
            value = status.pop("accumulatedPastExecutionTimeSeconds")
            status["accumulatedPastExexcutionTimeSeconds"] = value
        return
    name = spec.pop("priorityClassName", None)
    source = spec.pop("priorityClassSource", "")
    if name and source in _PRIORITY:
        group, kind = _PRIORITY[source]
        spec["priorityClassRef"] = {"group": group, "kind": kind, "name": name}
    if "accumulatedPastExexcutionTimeSeconds" in status:
        value = status.pop("accumulatedPastExexcutionTimeSeconds")
        status["accumulatedPastExecutionTimeSeconds"] = value


def _slice(obj: Obj, have: str, version: str) -> None:
    devices = (obj.get("spec") or {}).get("devices") or []
    if version == "v1beta1" and have != "v1beta1":
        for device in devices:
            basic = {k: device.pop(k) for k in _BASIC if k in device}
            device["basic"] = basic
    elif have == "v1beta1" and version != "v1beta1":
        for device in devices:
            device.update(device.pop("basic", None) or {})


def _claim(obj: Obj, have: str, version: str) -> None:
    requests = ((obj.get("spec") or {}).get("devices") or {}).get("requests") or []
    if version == "v1beta1" and have != "v1beta1":
        for request in requests:
            request.update(request.pop("exactly", None) or {})
    elif have == "v1beta1" and version != "v1beta1":
        for request in requests:
            exactly = {k: request.pop(k) for k in _EXACTLY if k in request}
            if exactly:
                request["exactly"] = exactly

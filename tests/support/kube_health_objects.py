"""Objects about GPU and container health, as the kubelet and the DRA driver write them.

* a sampler pod in CrashLoopBackOff whose previous run was OOMKilled (exit 137): the
  kubelet's ``state.waiting`` and ``lastState.terminated``, its back-off message;
* ResourceSlices whose devices carry the taints NVIDIA's DRA driver publishes for Xid
  errors (``gpu.nvidia.com/xid``, the Xid as value; NoSchedule for a critical one, None
  for an informational one), in v1 (``devices[].taints``) and v1beta1
  (``devices[].basic.taints``);
* DeviceTaintRules: the 1.35+ shape (v1alpha3, v1beta2, v1: driver/pool/device) and the
  1.33/1.34 v1alpha3 shape with a DeviceClass and CEL selectors.
"""

from __future__ import annotations

from typing import Any

from support import kube_objects

Obj = dict[str, Any]

XID_TAINT = "gpu.nvidia.com/xid"
TAINTED_AT = "2026-01-05T09:40:00Z"
BACK_OFF = (
    "back-off 2m40s restarting failed container=sampler "
    "pod=lora-a-sampler-0_openrl(uid-pod-lora-a-sampler-0)"
)


def crashlooping_sampler(node_name: str = "gpu-h100-1") -> Obj:
    """A sampler pod whose container the kernel OOM-killed five times: now waiting in
    CrashLoopBackOff; the previous run's end is in ``lastState.terminated``."""
    obj = kube_objects.pod(
        "lora-a-sampler-0",
        model_id="lora-a",
        role="sampler",
        node_name=node_name,
        claim_name="lora-a-sampler-0-gpus-q8w3t",
        conditions=[
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": kube_objects.CREATED},
            {
                "type": "Ready",
                "status": "False",
                "reason": "ContainersNotReady",
                "message": "containers with unready status: [sampler]",
                "lastTransitionTime": "2026-01-05T09:20:11Z",
            },
        ],
    )
    obj["spec"]["containers"][0]["image"] = "ghcr.io/openrl/sampler:1.4.2"
    obj["status"]["containerStatuses"] = [
        {
            "name": "sampler",
            "image": "ghcr.io/openrl/sampler:1.4.2",
            "imageID": "ghcr.io/openrl/sampler@sha256:4567",
            "containerID": "containerd://5f1e0c2d9a",
            "ready": False,
            "restartCount": 5,
            "started": False,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": BACK_OFF}},
            "lastState": {
                "terminated": {
                    "exitCode": 137,
                    "reason": "OOMKilled",
                    "startedAt": "2026-01-05T09:19:02Z",
                    "finishedAt": "2026-01-05T09:20:10Z",
                    "containerID": "containerd://5f1e0c2d9a",
                }
            },
        }
    ]
    return obj


def xid_taint(xid: int, effect: str = "NoSchedule") -> Obj:
    return {"key": XID_TAINT, "value": str(xid), "effect": effect, "timeAdded": TAINTED_AT}


def tainted_slice(
    node: str = "gpu-h100-1", taints: dict[int, list[Obj]] | None = None, version: str = "v1"
) -> Obj:
    """The node's slice with taints on some devices (by index): by default Xid 79 (the
    GPU fell off the bus) on gpu-3 and an informational Xid 43 on gpu-5."""
    obj = kube_objects.h100_slice(node, version=version)
    chosen = taints if taints is not None else {3: [xid_taint(79)], 5: [xid_taint(43, "None")]}
    for index, device_taints in chosen.items():
        device = obj["spec"]["devices"][index]
        (device["basic"] if version == "v1beta1" else device)["taints"] = device_taints
    return obj


def taint_rule(
    name: str = "drain-gpu-h100-1-gpu-6",
    *,
    selector: Obj | None = None,
    effect: str = "NoExecute",
    version: str = "v1alpha3",
) -> Obj:
    """A DeviceTaintRule as an admin writes it (1.35+ selector: driver, pool, device),
    with the timeAdded the API server adds."""
    chosen = (
        selector
        if selector is not None
        else {"driver": "gpu.nvidia.com", "pool": "gpu-h100-1", "device": "gpu-6"}
    )
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "DeviceTaintRule",
        "metadata": {
            "name": name,
            "uid": f"uid-rule-{name}",
            "generation": 1,
            "creationTimestamp": TAINTED_AT,
        },
        "spec": {
            "deviceSelector": chosen,
            "taint": {
                "key": "example.com/maintenance",
                "value": "hbm-replacement",
                "effect": effect,
                "timeAdded": TAINTED_AT,
            },
        },
    }


def cel_taint_rule() -> Obj:
    """The 1.33/1.34 v1alpha3 shape: a DeviceClass and a CEL selector."""
    return taint_rule(
        "taint-old-drivers",
        selector={
            "deviceClassName": "gpu.nvidia.com",
            "driver": "gpu.nvidia.com",
            "selectors": [
                {
                    "cel": {
                        "expression": "device.attributes['gpu.nvidia.com'].driverVersion "
                        "< semver('570.0.0')"
                    }
                }
            ],
        },
        effect="NoSchedule",
    )

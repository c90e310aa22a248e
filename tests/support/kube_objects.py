"""Realistic Kubernetes objects, as the API server sends them, for the fake cluster.

A small GPU cluster running OpenRL: two 8-GPU nodes (H100 80GB and H200), the NVIDIA DRA
driver's ResourceSlices for them (``gpu.nvidia.com``: uuid, index, minor, productName,
architecture, driverVersion, pcieBusID; capacity memory), a trainer pod holding all
eight H100s through an allocated and reserved ResourceClaim, a Kueue Workload admitted
for it, another Workload pending on quota and its pod the scheduler cannot place.
"""

from __future__ import annotations

import uuid
from typing import Any

Obj = dict[str, Any]

NAMESPACE = "openrl"
CREATED = "2026-01-05T09:00:00Z"
H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"
PENDING_QUOTA_MESSAGE = (
    "couldn't assign flavors to pod set main: insufficient unused quota for "
    "nvidia.com/gpu in flavor h100-flavor, 8 more needed"
)
UNSCHEDULABLE_MESSAGE = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."


def gpu_uuid(node: str, index: int) -> str:
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{index}')}"


def _attributes(node: str, index: int, product: str, architecture: str) -> Obj:
    return {
        "type": {"string": "gpu"},
        "uuid": {"string": gpu_uuid(node, index)},
        "index": {"int": index},
        "minor": {"int": index},
        "productName": {"string": product},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": architecture},
        "cudaComputeCapability": {"version": "9.0.0"},
        "driverVersion": {"version": "570.133.20"},
        "cudaDriverVersion": {"version": "12.8.0"},
        "pcieBusID": {"string": f"0000:{0x18 + 0x10 * index:02x}:00.0"},
    }


def resource_slice(
    node: str,
    *,
    product: str = H100,
    memory: str = "80Gi",
    architecture: str = "Hopper",
    generation: int = 1,
    count: int = 8,
    version: str = "v1",
    name: str | None = None,
) -> Obj:
    """The slice NVIDIA's DRA driver publishes for one node (v1, or v1beta1's ``basic``)."""
    devices = []
    for index in range(count):
        body = {
            "attributes": _attributes(node, index, product, architecture),
            "capacity": {"memory": {"value": memory}},
        }
        if version == "v1beta1":
            devices.append({"name": f"gpu-{index}", "basic": body})
        else:
            devices.append({"name": f"gpu-{index}", **body})
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceSlice",
        "metadata": {
            "name": name or f"{node}-gpu.nvidia.com-{generation}",
            "creationTimestamp": CREATED,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node, "uid": f"uid-node-{node}"}
            ],
        },
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def h100_slice(node: str = "gpu-h100-1", **kw: Any) -> Obj:
    return resource_slice(node, product=H100, memory="80Gi", **kw)


def h200_slice(node: str = "gpu-h200-1", **kw: Any) -> Obj:
    return resource_slice(node, product=H200, memory="141Gi", **kw)


def node(name: str, *, gpus: int = 8, product: str = H100, ready: bool = True) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "creationTimestamp": CREATED,
            "labels": {
                "kubernetes.io/hostname": name,
                "nvidia.com/gpu.product": product.replace(" ", "-"),
                "nvidia.com/gpu.count": str(gpus),
            },
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "208", "memory": "2113300Mi", "nvidia.com/gpu": str(gpus)},
            "allocatable": {"cpu": "207", "memory": "2100000Mi", "nvidia.com/gpu": str(gpus)},
            "conditions": [
                {
                    "type": "MemoryPressure",
                    "status": "False",
                    "reason": "KubeletHasSufficientMemory",
                    "message": "kubelet has sufficient memory available",
                    "lastHeartbeatTime": "2026-01-05T10:00:00Z",
                    "lastTransitionTime": CREATED,
                },
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": "2026-01-05T10:00:00Z",
                    "lastTransitionTime": CREATED,
                },
            ],
            "nodeInfo": {
                "machineID": "m",
                "systemUUID": "s",
                "bootID": "b",
                "kernelVersion": "6.8.0",
                "osImage": "Ubuntu 24.04",
                "containerRuntimeVersion": "containerd://2.0.0",
                "kubeletVersion": "v1.34.0",
                "kubeProxyVersion": "v1.34.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def pod(
    name: str,
    *,
    model_id: str,
    role: str = "trainer",
    node_name: str | None = None,
    phase: str = "Running",
    claim_template: str | None = "h100x8",
    claim_name: str | None = None,
    gpus: int = 0,
    conditions: list[Obj] | None = None,
    namespace: str = NAMESPACE,
) -> Obj:
    """A worker pod of an OpenRL model (labels ``openrl.ai/model-id`` and ``role``)."""
    container: Obj = {
        "name": role,
        "image": "ghcr.io/openrl/worker:1.4.2",
        "command": ["python", "-m", "openrl.worker"],
        "resources": {"requests": {"cpu": "16", "memory": "128Gi"}},
    }
    if gpus:
        container["resources"]["limits"] = {"nvidia.com/gpu": str(gpus)}
    spec: Obj = {"containers": [container], "schedulerName": "default-scheduler"}
    status: Obj = {"phase": phase, "conditions": conditions or []}
    if node_name:
        spec["nodeName"] = node_name
    if claim_template:
        container["resources"]["claims"] = [{"name": "gpus"}]
        spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": claim_template}]
        if claim_name:
            status["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": claim_name}]
    if phase == "Running":
        status["startTime"] = "2026-01-05T09:01:00Z"
        status["containerStatuses"] = [
            {
                "name": role,
                "image": "ghcr.io/openrl/worker:1.4.2",
                "imageID": "ghcr.io/openrl/worker@sha256:0123",
                "ready": True,
                "restartCount": 1,
                "started": True,
                "state": {"running": {"startedAt": "2026-01-05T09:02:00Z"}},
                "lastState": {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "OOMKilled",
                        "startedAt": "2026-01-05T09:01:10Z",
                        "finishedAt": "2026-01-05T09:01:50Z",
                    }
                },
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-pod-{name}",
            "creationTimestamp": CREATED,
            "labels": {"openrl.ai/model-id": model_id, "openrl.ai/role": role},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": f"{model_id}-{role}",
                    "uid": f"uid-job-{model_id}",
                    "controller": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def running_trainer(node_name: str = "gpu-h100-1") -> Obj:
    return pod(
        "lora-a-trainer-0",
        model_id="lora-a",
        node_name=node_name,
        claim_name="lora-a-trainer-0-gpus-x7k2p",
        conditions=[
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": CREATED},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-05T09:02:05Z"},
        ],
    )


def unschedulable_pod() -> Obj:
    """Waiting for GPUs: PodScheduled=False/Unschedulable, as the scheduler reports it."""
    return pod(
        "lora-b-trainer-0",
        model_id="lora-b",
        phase="Pending",
        claim_template=None,
        gpus=8,
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": UNSCHEDULABLE_MESSAGE,
                "lastProbeTime": None,
                "lastTransitionTime": "2026-01-05T09:30:00Z",
            }
        ],
    )


def allocated_claim(node_name: str = "gpu-h100-1", count: int = 8, version: str = "v1") -> Obj:
    """The trainer's claim: 8 GPUs allocated on one node, reserved for the pod
    (v1 puts the request under ``exactly``; v1beta1 inlines it)."""
    request: Obj = {
        "deviceClassName": "gpu.nvidia.com",
        "allocationMode": "ExactCount",
        "count": count,
    }
    request = (
        {"name": "gpus", **request}
        if version == "v1beta1"
        else {"name": "gpus", "exactly": request}
    )
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "lora-a-trainer-0-gpus-x7k2p",
            "namespace": NAMESPACE,
            "uid": "uid-claim-lora-a",
            "creationTimestamp": CREATED,
            "annotations": {"resource.kubernetes.io/pod-claim-name": "gpus"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "lora-a-trainer-0",
                    "uid": "uid-pod-lora-a-trainer-0",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"devices": {"requests": [request]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpus",
                            "driver": "gpu.nvidia.com",
                            "pool": node_name,
                            "device": f"gpu-{i}",
                        }
                        for i in range(count)
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node_name]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [
                {"resource": "pods", "name": "lora-a-trainer-0", "uid": "uid-pod-lora-a-trainer-0"}
            ],
        },
    }


def _workload(name: str, model_id: str, conditions: list[Obj], admission: Obj | None) -> Obj:
    status: Obj = {"conditions": conditions}
    if admission is not None:
        status["admission"] = admission
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-wl-{name}",
            "creationTimestamp": CREATED,
            "labels": {
                "openrl.ai/model-id": model_id,
                "kueue.x-k8s.io/job-uid": f"uid-job-{model_id}",
            },
        },
        "spec": {
            "queueName": "openrl-training",
            "priority": 100,
            "priorityClassName": "openrl-standard",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
            "active": True,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "trainer",
                                    "image": "ghcr.io/openrl/worker:1.4.2",
                                    "resources": {"requests": {"nvidia.com/gpu": "8"}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
        "status": status,
    }


def pending_workload() -> Obj:
    """Pending on quota: QuotaReserved=False/Pending with Kueue's flavor message."""
    return _workload(
        "job-lora-b-trainer-3f9c2",
        "lora-b",
        [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": PENDING_QUOTA_MESSAGE,
                "lastTransitionTime": "2026-01-05T09:30:00Z",
                "observedGeneration": 1,
            }
        ],
        None,
    )


def admitted_workload() -> Obj:
    condition = {"status": "True", "lastTransitionTime": "2026-01-05T09:00:30Z"}
    return _workload(
        "job-lora-a-trainer-8d1e4",
        "lora-a",
        [
            {
                "type": "QuotaReserved",
                "reason": "QuotaReserved",
                "message": "Quota reserved in ClusterQueue gpu-cq",
                **condition,
            },
            {
                "type": "Admitted",
                "reason": "Admitted",
                "message": "The workload is admitted",
                **condition,
            },
            {
                "type": "PodsReady",
                "reason": "PodsReady",
                "message": "All pods reached readiness and the workload is running",
                **condition,
            },
        ],
        {
            "clusterQueue": "gpu-cq",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"nvidia.com/gpu": "h100-flavor", "cpu": "default-flavor"},
                    "resourceUsage": {"nvidia.com/gpu": "8", "cpu": "16"},
                    "count": 1,
                }
            ],
        },
    )


def cluster() -> list[Obj]:
    """The whole fake cluster."""
    return [
        node("gpu-h100-1"),
        node("gpu-h200-1", product=H200),
        node("cpu-1", gpus=0),
        h100_slice(),
        h200_slice(),
        running_trainer(),
        unschedulable_pod(),
        allocated_claim(),
        admitted_workload(),
        pending_workload(),
    ]

"""Pods, ResourceClaims and ResourceSlices as the API server serves them, for staging.

The same objects the Kubernetes twin derives for a simulated model (names, uids,
labels, owners, claims: ``kube_twin``), written out whole, the way the kubelet, the
scheduler and NVIDIA's DRA driver leave them (``resource.k8s.io/v1``), so that a
scenario can change one part (a container's state, a condition, a device's taints)
and the adapter's parsers read the rest as they read a real cluster.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from openrl_inspect.adapters.kubernetes import (
    JOBSET_UID_LABEL,
    MODEL_ID_LABEL,
    NVIDIA_GPU_DRIVER,
    ROLE_LABEL,
)
from openrl_inspect.simulator.cluster import Node
from openrl_inspect.simulator.kube_twin import (
    CONTROLLER_UID_LABEL,
    JOBSET_NAME_LABEL,
    MEMORY,
    NAMESPACE,
    job_uid,
    jobset_uid,
    workload_name,
)

Json = dict[str, Any]
IMAGES = {
    "trainer": "us-docker.pkg.dev/openrl-prod/images/trainer:1.4.2",
    "sampler": "us-docker.pkg.dev/openrl-prod/images/sampler:1.4.2",
}
CLAIM_TEMPLATE = "openrl-gpu"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


def iso(t: float) -> str:
    """A metav1.Time: whole seconds, UTC."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro(t: float) -> str:
    """A metav1.MicroTime."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pod_name(model_id: str, role: str) -> str:
    return f"openrl-{role}-{model_id}-0"  # as Simulation.place names its pods


def claim_name(pod: str) -> str:
    return f"{pod}-gpus"  # as the twin names a pod's generated claim


def condition(type_: str, status: str, at: float, reason: str = "", message: str = "") -> Json:
    """A pod condition as the kubelet or the scheduler sets it."""
    out: Json = {"type": type_, "status": status, "lastProbeTime": None}
    out["lastTransitionTime"] = iso(at)
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def running_conditions(scheduled: float, ready: float | None, waiting: str = "") -> list[Json]:
    """A scheduled pod's conditions: Ready from ``ready`` on, else not ready because of
    ``waiting`` containers."""
    if ready is not None:
        state = [condition(t, "True", ready) for t in ("Ready", "ContainersReady")]
    else:
        note = f"containers with unready status: [{waiting}]"
        state = [
            condition(t, "False", scheduled, "ContainersNotReady", note)
            for t in ("Ready", "ContainersReady")
        ]
    return [
        condition("PodReadyToStartContainers", "True", scheduled + 3),
        condition("Initialized", "True", scheduled),
        *state,
        condition("PodScheduled", "True", scheduled),
    ]


def container_status(
    role: str,
    state: Json,
    *,
    ready: bool = False,
    restarts: int = 0,
    last: Json | None = None,
    image: str | None = None,
) -> Json:
    """A containerStatuses entry. ``state`` is ``{"running": ...}``, ``{"waiting": ...}``
    or ``{"terminated": ...}``; ``last`` the previous run's ``terminated``."""
    image = image or IMAGES[role]
    pulled = "waiting" not in state or state["waiting"].get("reason") != "ImagePullBackOff"
    out: Json = {
        "name": role,
        "image": image,
        "imageID": f"{image.split(':')[0]}@sha256:{_digest(image)}" if pulled else "",
        "ready": ready,
        "restartCount": restarts,
        "started": "running" in state,
        "state": state,
        "lastState": {"terminated": last} if last else {},
    }
    if "running" in state or last:
        out["containerID"] = f"containerd://{_digest(role + image)}"
    return out


def _digest(text: str) -> str:
    return f"{zlib.crc32(text.encode()):08x}" * 8  # stable run to run, unlike hash()


def running(since: float) -> Json:
    return {"running": {"startedAt": iso(since)}}


def terminated(reason: str, code: int, started: float, finished: float, message: str = "") -> Json:
    out: Json = {
        "exitCode": code,
        "reason": reason,
        "startedAt": iso(started),
        "finishedAt": iso(finished),
    }
    if message:
        out["message"] = message
    return out


def _labels(model_id: str, role: str) -> Json:
    """The pod's labels: the model's and role's from the pod template, then what the Job
    and JobSet controllers add."""
    return {
        MODEL_ID_LABEL: model_id,
        ROLE_LABEL: role,
        CONTROLLER_UID_LABEL: job_uid(model_id, role),
        JOB_NAME_LABEL: job_name(model_id, role),
        JOBSET_NAME_LABEL: workload_name(model_id),
        JOBSET_UID_LABEL: jobset_uid(model_id),
    }


def job_name(model_id: str, role: str) -> str:
    return f"{workload_name(model_id)}-{role}-0"


def pod_spec(role: str, image: str | None = None, template: str = CLAIM_TEMPLATE) -> Json:
    """A worker's pod spec: one container, its GPUs through a claim from ``template``."""
    container: Json = {
        "name": role,
        "image": image or IMAGES[role],
        "command": ["python", "-m", f"openrl.{role}"],
        "resources": {
            "requests": {"cpu": "16", "memory": "256Gi"},
            "claims": [{"name": "gpus"}],
        },
    }
    return {
        "containers": [container],
        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": template}],
        "restartPolicy": "OnFailure",
        "schedulerName": "default-scheduler",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }


def worker_pod(
    model_id: str,
    role: str,
    *,
    created: float,
    node: str | None,
    phase: str,
    conditions: Sequence[Json],
    statuses: Sequence[Json] = (),
    claim: bool = True,
    image: str | None = None,
    template: str = CLAIM_TEMPLATE,
) -> Json:
    """A worker pod of a model, owned by its role's Job in the model's JobSet;
    ``claim``: its generated ResourceClaim exists (the claim controller recorded it in
    the pod's status)."""
    name = pod_name(model_id, role)
    spec = pod_spec(role, image, template)
    status: Json = {"phase": phase, "conditions": list(conditions), "qosClass": "Burstable"}
    if node:
        spec["nodeName"] = node
        status["startTime"] = iso(created + 1)
    if statuses:
        status["containerStatuses"] = list(statuses)
    if claim:
        status["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": claim_name(name)}]
    owner: Json = {"apiVersion": "batch/v1", "kind": "Job", "name": job_name(model_id, role)}
    owner |= {"uid": job_uid(model_id, role), "controller": True, "blockOwnerDeletion": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-pod-{name}",
            "creationTimestamp": iso(created),
            "labels": _labels(model_id, role),
            "ownerReferences": [owner],
        },
        "spec": spec,
        "status": status,
    }


def pending_claim(pod: str, created: float, count: int) -> Json:
    """The claim the claim controller generated for ``pod``: ``count`` GPUs asked for,
    not allocated (the scheduler allocates it when it places the pod)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": claim_name(pod),
            "namespace": NAMESPACE,
            "uid": f"uid-claim-{pod}",
            "creationTimestamp": iso(created),
            "annotations": {"resource.kubernetes.io/pod-claim-name": "gpus"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod,
                    "uid": f"uid-pod-{pod}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {
                            "deviceClassName": NVIDIA_GPU_DRIVER,
                            "allocationMode": "ExactCount",
                            "count": count,
                        },
                    }
                ]
            }
        },
        "status": {},
    }


def _attributes(gpu_index: int, uuid: str, product: str) -> Json:
    return {
        "type": {"string": "gpu"},
        "uuid": {"string": uuid},
        "index": {"int": gpu_index},
        "minor": {"int": gpu_index},
        "productName": {"string": product},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": "Hopper"},
        "cudaComputeCapability": {"version": "9.0.0"},
        "driverVersion": {"version": "570.133.20"},
        "cudaDriverVersion": {"version": "12.8.0"},
        "pcieBusID": {"string": f"0000:{0x18 + 0x10 * gpu_index:02x}:00.0"},
    }


def resource_slice(
    node: Node,
    created: float,
    generation: int = 1,
    taints: Mapping[int, Sequence[Json]] | None = None,
) -> Json:
    """The ResourceSlice NVIDIA's DRA driver publishes for ``node`` (as the twin's
    ``slice_record``), ``taints`` on devices by GPU index; a republished pool has a
    higher ``generation``."""
    memory = f"{(MEMORY.get(node.pool) or 0) // 2**30}Gi"
    devices = []
    for gpu in node.gpus:
        device: Json = {
            "name": f"gpu-{gpu.index}",
            "attributes": _attributes(gpu.index, gpu.uuid, gpu.product),
            "capacity": {"memory": {"value": memory}},
        }
        if taints and gpu.index in taints:
            device["taints"] = list(taints[gpu.index])
        devices.append(device)
    name = f"{node.name}-{NVIDIA_GPU_DRIVER}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": name,
            "uid": f"uid-slice-{name}",
            "creationTimestamp": iso(created),
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": f"uid-{node.name}"}
            ],
        },
        "spec": {
            "driver": NVIDIA_GPU_DRIVER,
            "nodeName": node.name,
            "pool": {"name": node.name, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }

"""The second GKE-shaped cluster of issue 24, as Kueue 0.16+ (``kueue.x-k8s.io/v1beta2``,
its storage version), JobSet, the Job controller, DRA v1 and NVIDIA's DRA driver 25.12
write it; served by ``FakeKube`` with Kueue at v1beta2 only.

- ``grpo-llama-8b``: a JobSet with two replicated jobs (trainer: 8 GPUs, rollout: 4) on
  one Workload that carries no model label (Kueue's default: it names its JobSet by owner
  reference and ``kueue.x-k8s.io/job-uid``), admitted; the pods run;
- ``dpo-qwen-7b``: its Workload preempted by grpo's (``Preempted to accommodate a
  workload (UID: ...)``), requeued, its JobSet suspended again;
- ``sft-mistral-7b``: a pod group (Kueue's plain-pod integration) held by Kueue's
  admission gate (``kueue.x-k8s.io/admission``) and short of CPU quota in flavor
  ``cpu-highmem``: 2 pods of 64 CPUs, 16 more needed;
- capacity: four nodes of 8 H100 (the fourth cordoned) and one of 4 H100 partitioned by
  static MIG into 16 slices, 8 of which other teams' pods hold on three of the GPUs: 36
  GPUs (not 48), 15 held (not 20), 13 free (not 20), 8 tainted; 16 slices, 8 held.
"""

from __future__ import annotations

import hashlib
from typing import Any

from support import kube_objects
from support.second_cluster_gpus import MIG_NODE, NODES, gpu_objects, settled, uid

__all__ = ["MIG_NODE", "NODES", "uid"]  # the GPUs' part, for the tests

Obj = dict[str, Any]

NAMESPACE = "rl-team"
LOCAL_QUEUE, CLUSTER_QUEUE = "rl-lq", "rl-cq"
GPU_FLAVOR, CPU_FLAVOR = "a3-highgpu-8g", "cpu-highmem"
KUEUE = "kueue.x-k8s.io/v1beta2"
JOBSET = "jobset.x-k8s.io/v1alpha2"
MODEL_LABEL, ROLE_LABEL = "openrl.ai/model-id", "openrl.ai/role"
GRPO, DPO, SFT = "grpo-llama-8b", "dpo-qwen-7b", "sft-mistral-7b"
GRPO_WORKLOAD, DPO_WORKLOAD = "jobset-grpo-llama-8b-4c1d2", "jobset-dpo-qwen-7b-9e0a1"
ROLE_HASH = "7c3d9a1e"  # the pod group's pod set (Kueue names it by the role hash)
QUOTA_MESSAGE = (
    f"couldn't assign flavors to pod set {ROLE_HASH}: insufficient unused quota for cpu "
    f"in flavor {CPU_FLAVOR}, 16 more needed"
)
ADMITTED_AT = "2026-09-12T10:05:00Z"
PREEMPTED_AT = "2026-09-12T10:04:58Z"


def cond(kind: str, status: str, reason: str, message: str, at: str) -> Obj:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": 1,
        "lastTransitionTime": at,
    }


PREEMPTION = (
    f"Preempted to accommodate a workload (UID: {uid('wl', GRPO_WORKLOAD)}, JobUID: "
    f"{uid('jobset', GRPO)}) due to prioritization in the ClusterQueue; preemptor path: "
    f"/{CLUSTER_QUEUE}; preemptee path: /{CLUSTER_QUEUE}"
)

# --- the JobSets, their Jobs and pods ---------------------------------------------------


def _jobset_labels(model: str, role: str, index: int, replicas: int) -> dict[str, str]:
    job = f"{model}-{role}-0"
    return {
        "jobset.sigs.k8s.io/jobset-name": model,
        "jobset.sigs.k8s.io/jobset-uid": uid("jobset", model),
        "jobset.sigs.k8s.io/replicatedjob-name": role,
        "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
        "jobset.sigs.k8s.io/global-replicas": str(replicas),
        "jobset.sigs.k8s.io/job-index": "0",
        "jobset.sigs.k8s.io/job-global-index": str(index),
        "jobset.sigs.k8s.io/job-key": hashlib.sha1(f"{NAMESPACE}/{job}".encode()).hexdigest(),
        "jobset.sigs.k8s.io/restart-attempt": "0",
        "jobset.sigs.k8s.io/group-name": "default",
        "jobset.sigs.k8s.io/group-replicas": str(replicas),
        "jobset.sigs.k8s.io/job-group-index": str(index),
    }


def _pod_template(model: str, role: str, gpus: int, cpu: str) -> Obj:
    return {
        "metadata": {"labels": {MODEL_LABEL: model, ROLE_LABEL: role}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": role,
                    "image": f"us-docker.pkg.dev/rl-prod/images/{role}:2.1.0",
                    "resources": {"requests": {"cpu": cpu, "memory": "400Gi"},
                                  "claims": [{"name": "gpus"}]},
                }
            ],
            "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": f"h100x{gpus}"}],
        },
    }  # fmt: skip


def _owner(kind: str, api: str, name: str, owner_uid: str) -> Obj:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": owner_uid,
            "controller": True, "blockOwnerDeletion": True}  # fmt: skip


ROLES = {GRPO: (("trainer", 8, "48"), ("rollout", 4, "24")), DPO: (("trainer", 8, "48"),)}


def jobset(model: str, suspended: bool) -> Obj:
    jobs = [
        {"name": role, "replicas": 1, "template": {"spec": {
            "parallelism": 1, "completions": 1, "completionMode": "Indexed",
            "backoffLimit": 0, "template": _pod_template(model, role, gpus, cpu)}}}
        for role, gpus, cpu in ROLES[model]
    ]  # fmt: skip
    return {
        "apiVersion": JOBSET,
        "kind": "JobSet",
        "metadata": {
            "name": model,
            "namespace": NAMESPACE,
            "uid": uid("jobset", model),
            "creationTimestamp": "2026-09-12T10:00:00Z",
            "labels": {MODEL_LABEL: model, "kueue.x-k8s.io/queue-name": LOCAL_QUEUE},
        },
        "spec": {"suspend": suspended, "replicatedJobs": jobs},
        "status": {"restarts": 0},
    }


def _job(model: str, index: int, role: str, gpus: int, cpu: str) -> Obj:
    labels = _jobset_labels(model, role, index, len(ROLES[model]))
    template = _pod_template(model, role, gpus, cpu)
    template["metadata"]["labels"] |= labels | {
        "kueue.x-k8s.io/podset": role,
        "kueue.x-k8s.io/local-queue-name": LOCAL_QUEUE,
        "kueue.x-k8s.io/cluster-queue-name": CLUSTER_QUEUE,
    }
    template["metadata"]["annotations"] = dict(labels)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{model}-{role}-0",
            "namespace": NAMESPACE,
            "uid": uid("job", model, role),
            "creationTimestamp": ADMITTED_AT,
            "labels": labels,
            "annotations": dict(labels),
            "ownerReferences": [_owner("JobSet", JOBSET, model, uid("jobset", model))],
        },
        "spec": {"parallelism": 1, "completions": 1, "completionMode": "Indexed",
                 "backoffLimit": 0, "suspend": False, "template": template},
    }  # fmt: skip


def _pod(model: str, index: int, role: str, gpus: int, cpu: str, node: str) -> Obj:
    job = _job(model, index, role, gpus, cpu)
    name = f"{job['metadata']['name']}-0-{hashlib.sha1(role.encode()).hexdigest()[:5]}"
    controller = job["metadata"]["uid"]
    labels = job["spec"]["template"]["metadata"]["labels"] | {
        "batch.kubernetes.io/controller-uid": controller,
        "controller-uid": controller,
        "batch.kubernetes.io/job-name": job["metadata"]["name"],
        "job-name": job["metadata"]["name"],
        "batch.kubernetes.io/job-completion-index": "0",
    }
    pod = kube_objects.pod(
        name, model_id=model, role=role, node_name=node, namespace=NAMESPACE,
        claim_template=f"h100x{gpus}", claim_name=f"{name}-gpus-{role[:5]}",
        conditions=[{"type": "PodScheduled", "status": "True",
                     "lastTransitionTime": "2026-09-12T10:05:02Z"}],
    )  # fmt: skip
    pod["metadata"] |= {
        "uid": uid("pod", name),
        "labels": labels,
        "annotations": {**job["metadata"]["annotations"],
                        "batch.kubernetes.io/job-completion-index": "0"},
        "ownerReferences": [_owner("Job", "batch/v1", job["metadata"]["name"], controller)],
    }  # fmt: skip
    return settled(pod)


def _claim(pod: Obj, node: str, gpus: int) -> Obj:
    claim = kube_objects.allocated_claim(node_name=node, count=gpus)
    name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    claim["metadata"] |= {"name": name, "namespace": NAMESPACE, "uid": uid("claim", name)}
    claim["metadata"]["ownerReferences"][0] |= {
        "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]
    }  # fmt: skip
    claim["status"]["reservedFor"] = [
        {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
    ]
    return claim


def grpo_running() -> list[Obj]:
    """grpo's JobSet, Jobs, pods and claims: the trainer on NODES[0] (8 GPUs), the
    rollout on NODES[1] (4)."""
    out = [jobset(GRPO, suspended=False)]
    for index, ((role, gpus, cpu), node) in enumerate(zip(ROLES[GRPO], NODES, strict=False)):
        pod = _pod(GRPO, index, role, gpus, cpu, node)
        out += [_job(GRPO, index, role, gpus, cpu), pod, _claim(pod, node, gpus)]
    return out


# --- Kueue ------------------------------------------------------------------------------


def workload(model: str, name: str, priority: tuple[str, int], status: Obj) -> Obj:
    """The Workload Kueue created for the model's JobSet: no model label, the JobSet as
    its controlling owner, the pod sets its replicated jobs."""
    pod_sets = [{"name": role, "count": 1, "template": _pod_template(model, role, gpus, cpu)}
                for role, gpus, cpu in ROLES[model]]  # fmt: skip
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": uid("wl", name),
            "generation": 1,
            "creationTimestamp": "2026-09-12T10:00:01Z",
            "labels": {"kueue.x-k8s.io/job-uid": uid("jobset", model)},
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "ownerReferences": [_owner("JobSet", JOBSET, model, uid("jobset", model))],
        },
        "spec": {
            "active": True,
            "queueName": LOCAL_QUEUE,
            "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                 "name": priority[0]},
            "priority": priority[1],
            "podSets": pod_sets,
        },
        "status": status,
    }  # fmt: skip


def grpo_workload() -> Obj:
    flavors = {"cpu": GPU_FLAVOR, "memory": GPU_FLAVOR, "nvidia.com/gpu": GPU_FLAVOR}
    assignments = [
        {"name": role, "flavors": flavors, "count": 1,
         "resourceUsage": {"cpu": cpu, "memory": "400Gi", "nvidia.com/gpu": str(gpus)}}
        for role, gpus, cpu in ROLES[GRPO]
    ]  # fmt: skip
    status = {
        "admission": {"clusterQueue": CLUSTER_QUEUE, "podSetAssignments": assignments},
        "conditions": [
            cond("QuotaReserved", "True", "QuotaReserved",
                 f"Quota reserved in ClusterQueue {CLUSTER_QUEUE}", ADMITTED_AT),
            cond("Admitted", "True", "Admitted", "The workload is admitted", ADMITTED_AT),
            cond("PodsReady", "True", "Started",
                 "All pods reached readiness and the workload is running", "2026-09-12T10:07:42Z"),
        ],
    }  # fmt: skip
    return workload(GRPO, GRPO_WORKLOAD, ("rl-high", 1000), status)


def dpo_preempted() -> list[Obj]:
    """dpo's Workload as Kueue leaves it preempted and requeued; its JobSet suspended."""
    status = {
        "conditions": [
            cond("Evicted", "True", "Preempted", PREEMPTION, PREEMPTED_AT),
            cond("Preempted", "True", "InClusterQueue", PREEMPTION, PREEMPTED_AT),
            cond("Requeued", "True", "Preempted", PREEMPTION, PREEMPTED_AT),
            cond("QuotaReserved", "False", "Pending", PREEMPTION, PREEMPTED_AT),
            cond("Admitted", "False", "NoReservation", "The workload has no reservation",
                 PREEMPTED_AT),
        ],
        "schedulingStats": {"evictions": [{"reason": "Preempted", "underlyingCause": "",
                                           "count": 1}]},
    }  # fmt: skip
    return [jobset(DPO, suspended=True), workload(DPO, DPO_WORKLOAD, ("rl-standard", 100), status)]


def sft_pod_group() -> list[Obj]:
    """Two plain pods of one group, gated by Kueue, and the group's Workload, short of
    CPU quota: named after the group, owned by the pods, annotated as a group's."""
    pods = []
    for i in range(2):
        name = f"{SFT}-{i}"
        pod = kube_objects.pod(
            name, model_id=SFT, role="trainer", phase="Pending", claim_template=None,
            namespace=NAMESPACE,
            conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                         "message": "Scheduling is blocked due to non-empty scheduling gates",
                         "lastProbeTime": None, "lastTransitionTime": "2026-09-12T10:20:00Z"}],
        )  # fmt: skip
        meta = pod["metadata"]
        del meta["ownerReferences"]
        meta["uid"] = uid("pod", name)
        meta["labels"] |= {
            "kueue.x-k8s.io/managed": "true",
            "kueue.x-k8s.io/pod-group-name": SFT,
            "kueue.x-k8s.io/queue-name": LOCAL_QUEUE,
        }
        meta["annotations"] = {
            "kueue.x-k8s.io/pod-group-total-count": "2",
            "kueue.x-k8s.io/role-hash": ROLE_HASH,
        }
        meta["finalizers"] = ["kueue.x-k8s.io/managed"]
        pod["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
        pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "64", "memory": "256Gi"}
        pods.append(pod)
    template = {"spec": {k: v for k, v in pods[0]["spec"].items() if k != "schedulingGates"}}
    wl = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {
            "name": SFT,
            "namespace": NAMESPACE,
            "uid": uid("wl", SFT),
            "generation": 1,
            "creationTimestamp": "2026-09-12T10:20:00Z",
            "annotations": {"kueue.x-k8s.io/is-group-workload": "true"},
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": p["metadata"]["name"],
                 "uid": p["metadata"]["uid"]} for p in pods
            ],
        },
        "spec": {
            "active": True,
            "queueName": LOCAL_QUEUE,
            "priority": 0,
            "podSets": [{"name": ROLE_HASH, "count": 2, "template": template}],
        },
        "status": {
            "conditions": [cond("QuotaReserved", "False", "Pending", QUOTA_MESSAGE,
                                "2026-09-12T10:20:01Z")],
            "resourceRequests": [{"name": ROLE_HASH,
                                  "resources": {"cpu": "128", "memory": "512Gi"}}],
        },
    }  # fmt: skip
    return [*pods, wl]


def objects() -> list[Obj]:
    """Everything the API server holds for the cluster."""
    return [
        *gpu_objects(),
        *grpo_running(),
        grpo_workload(),
        *dpo_preempted(),
        *sft_pod_group(),
    ]

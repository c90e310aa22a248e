"""Objects shaped exactly as Kueue, the Job controller and JobSet write them, with no
model label copied to the Workloads (Kueue's default: no ``labelKeysToCopy``).

- ``lora-c`` runs as a JobSet: JobSet (labelled with the model) -> child Job (owned by
  the JobSet, ``jobset.sigs.k8s.io/*`` labels, no model label) -> pod (owned by the Job,
  the Job controller's and JobSet's labels, no model label either) on ``gpu-h100-1``.
  Its Workload is owned by the JobSet and carries ``kueue.x-k8s.io/job-uid``; admitted.
- ``lora-d`` is a suspended batch Job (labelled with the model) whose Workload waits on
  quota: no pods exist, as with any job Kueue has not admitted.
"""

from __future__ import annotations

from typing import Any

from support.kube_objects import CREATED, NAMESPACE, PENDING_QUOTA_MESSAGE

Obj = dict[str, Any]

JOBSET_UID = "5f0e9a43-2b1c-4f3e-9d6a-0c1b2d3e4f50"
CHILD_JOB_UID = "8a7b6c5d-4e3f-4a1b-8c9d-0e1f2a3b4c5d"
JOB_D_UID = "1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5"
POD_C = "lora-c-trainer-0-0-x7q2m"
WORKLOAD_C = "jobset-lora-c-5a1b2"
WORKLOAD_D = "job-lora-d-7c3e1"
QUEUE = {"kueue.x-k8s.io/queue-name": "openrl-training"}


def _owner(api_version: str, kind: str, name: str, uid: str) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _pod_template(labels: Obj) -> Obj:
    return {
        "metadata": {"labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "trainer",
                    "image": "ghcr.io/openrl/worker:1.4.2",
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                }
            ],
        },
    }


def jobset_c() -> Obj:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "lora-c",
            "namespace": NAMESPACE,
            "uid": JOBSET_UID,
            "creationTimestamp": CREATED,
            "labels": {"openrl.ai/model-id": "lora-c", **QUEUE},
        },
        "spec": {
            "suspend": False,
            "replicatedJobs": [
                {
                    "name": "trainer",
                    "replicas": 1,
                    "template": {"spec": {"parallelism": 1, "template": _pod_template({})}},
                }
            ],
        },
        "status": {"replicatedJobsStatus": [{"name": "trainer", "active": 1}]},
    }


_JOBSET_LABELS = {
    "jobset.sigs.k8s.io/jobset-name": "lora-c",
    "jobset.sigs.k8s.io/jobset-uid": JOBSET_UID,
    "jobset.sigs.k8s.io/replicatedjob-name": "trainer",
    "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
    "jobset.sigs.k8s.io/job-index": "0",
    "jobset.sigs.k8s.io/restart-attempt": "0",
}


def child_job_c() -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "lora-c-trainer-0",
            "namespace": NAMESPACE,
            "uid": CHILD_JOB_UID,
            "creationTimestamp": CREATED,
            "labels": dict(_JOBSET_LABELS),
            "ownerReferences": [_owner("jobset.x-k8s.io/v1alpha2", "JobSet", "lora-c", JOBSET_UID)],
        },
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "suspend": False,
            "template": _pod_template(dict(_JOBSET_LABELS)),
        },
        "status": {"active": 1, "startTime": "2026-01-05T09:01:00Z"},
    }


def pod_c(node_name: str = "gpu-h100-1") -> Obj:
    labels = {
        **_JOBSET_LABELS,
        "batch.kubernetes.io/controller-uid": CHILD_JOB_UID,
        "batch.kubernetes.io/job-name": "lora-c-trainer-0",
        "batch.kubernetes.io/job-completion-index": "0",
        "controller-uid": CHILD_JOB_UID,
        "job-name": "lora-c-trainer-0",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": POD_C,
            "namespace": NAMESPACE,
            "uid": "3b4c5d6e-7f80-4912-a3b4-c5d6e7f80912",
            "creationTimestamp": CREATED,
            "labels": labels,
            "ownerReferences": [_owner("batch/v1", "Job", "lora-c-trainer-0", CHILD_JOB_UID)],
        },
        "spec": {
            "nodeName": node_name,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "trainer",
                    "image": "ghcr.io/openrl/worker:1.4.2",
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                }
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-01-05T09:01:00Z",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [
                {
                    "name": "trainer",
                    "image": "ghcr.io/openrl/worker:1.4.2",
                    "imageID": "ghcr.io/openrl/worker@sha256:0123",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": "2026-01-05T09:01:20Z"}},
                }
            ],
        },
    }


def job_d() -> Obj:
    """Suspended by Kueue until admitted: no pods yet."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "lora-d-trainer",
            "namespace": NAMESPACE,
            "uid": JOB_D_UID,
            "creationTimestamp": CREATED,
            "labels": {"openrl.ai/model-id": "lora-d", **QUEUE},
        },
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "suspend": True,
            "template": _pod_template({"openrl.ai/model-id": "lora-d"}),
        },
        "status": {},
    }


def _workload(name: str, owner: Obj, conditions: list[Obj], admission: Obj | None) -> Obj:
    status: Obj = {"conditions": conditions}
    if admission is not None:
        status["admission"] = admission
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"wl-{owner['uid']}",
            "creationTimestamp": CREATED,
            "labels": {"kueue.x-k8s.io/job-uid": owner["uid"]},
            "ownerReferences": [owner],
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
        },
        "spec": {
            "queueName": "openrl-training",
            "priority": 0,
            "active": True,
            "podSets": [
                {"name": "trainer" if owner["kind"] == "JobSet" else "main", "count": 1,
                 "template": _pod_template({})}
            ],
        },
        "status": status,
    }  # fmt: skip


def workload_c(admitted_at: str = "2026-01-05T09:00:30Z") -> Obj:
    true = {"status": "True", "lastTransitionTime": admitted_at}
    return _workload(
        WORKLOAD_C,
        _owner("jobset.x-k8s.io/v1alpha2", "JobSet", "lora-c", JOBSET_UID),
        [
            {"type": "QuotaReserved", "reason": "QuotaReserved", "message": "Quota reserved "
             "in ClusterQueue gpu-cq", **true},
            {"type": "Admitted", "reason": "Admitted", "message": "The workload is admitted",
             **true},
        ],
        {
            "clusterQueue": "gpu-cq",
            "podSetAssignments": [
                {"name": "trainer", "flavors": {"nvidia.com/gpu": "h100-flavor"},
                 "resourceUsage": {"nvidia.com/gpu": "8"}, "count": 1}
            ],
        },
    )  # fmt: skip


def workload_d() -> Obj:
    return _workload(
        WORKLOAD_D,
        _owner("batch/v1", "Job", "lora-d-trainer", JOB_D_UID),
        [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending",
             "message": PENDING_QUOTA_MESSAGE, "lastTransitionTime": "2026-01-05T09:30:00Z"}
        ],
        None,
    )  # fmt: skip


def owned_cluster() -> list[Obj]:
    return [jobset_c(), child_job_c(), pod_c(), job_d(), workload_c(), workload_d()]

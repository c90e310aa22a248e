"""Kueue Workloads (``kueue.x-k8s.io/v1beta2``, Kueue's storage version since 0.16) as
Kueue writes them, and the JobSet and Jobs it queues, for staging.

Kueue's words, from its source: the preemption message ("Preempted to accommodate a
workload (UID: ..., JobUID: ...) due to prioritization in the ClusterQueue; preemptor
path: ...; preemptee path: ..."), eviction on ``waitForPodsReady`` ("Exceeded the
PodsReady timeout ns/name"), deactivation after too many requeues, an unknown
LocalQueue, admission checks pending, and ``Admitted=False/NoReservation`` once the
quota is given back. Conditions are metav1.Conditions; the pod set templates are the
JobSet's pod templates, copied with their labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openrl_inspect.adapters.kubernetes import (
    GPU_RESOURCE,
    JOBSET_UID_LABEL,
    KUEUE_JOB_UID_LABEL,
    MODEL_ID_LABEL,
    ROLE_LABEL,
)
from openrl_inspect.simulator.kube_twin import (
    CLUSTER_QUEUE,
    JOBSET_NAME_LABEL,
    LOCAL_QUEUE,
    NAMESPACE,
    QUEUE_LABEL,
    flavor,
    job_uid,
    jobset_uid,
    workload_name,
)
from openrl_inspect.simulator.scenarios.objects import (
    CLAIM_TEMPLATE,
    IMAGES,
    iso,
    job_name,
    pod_spec,
)

Json = dict[str, Any]
API_VERSION = "kueue.x-k8s.io/v1beta2"
ROLES = ("trainer", "sampler")
NO_RESERVATION = ("NoReservation", "The workload has no reservation")


def cond(type_: str, status: str, at: float, reason: str, message: str) -> Json:
    """A metav1.Condition as Kueue sets it."""
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": iso(at),
        "observedGeneration": 1,
    }


def preemption_message(preemptor: str) -> str:
    """Kueue's message for a Workload preempted by ``preemptor`` (a Workload name in
    the same namespace and ClusterQueue): its UID and its job's UID."""
    return (
        f"Preempted to accommodate a workload (UID: uid-wl-{preemptor}, JobUID: "
        f"uid-job-{preemptor}) due to prioritization in the ClusterQueue; preemptor path: "
        f"/{CLUSTER_QUEUE}; preemptee path: /{CLUSTER_QUEUE}"
    )


def _pod_set(model_id: str, role: str) -> Json:
    return {
        "name": role,
        "count": 1,
        "template": {
            "metadata": {"labels": {MODEL_ID_LABEL: model_id, ROLE_LABEL: role}},
            "spec": {
                "containers": [
                    {
                        "name": role,
                        "image": IMAGES[role],
                        "resources": {"claims": [{"name": "gpus"}]},
                    }
                ],
                "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": CLAIM_TEMPLATE}],
                "restartPolicy": "OnFailure",
            },
        },
    }


def admission(pool: str, gpus: int) -> Json:
    """Quota reserved in the ClusterQueue: each role's ``gpus`` in the pool's flavor."""
    return {
        "clusterQueue": CLUSTER_QUEUE,
        "podSetAssignments": [
            {
                "name": role,
                "flavors": {GPU_RESOURCE: flavor(pool)},
                "resourceUsage": {GPU_RESOURCE: str(gpus)},
                "count": 1,
            }
            for role in ROLES
        ],
    }


def workload(
    model_id: str,
    created: float,
    conditions: Sequence[Json],
    *,
    active: bool = True,
    queue: str = LOCAL_QUEUE,
    status: Json | None = None,
) -> Json:
    """The Workload Kueue created for the model's JobSet (owned by it, Kueue's job-uid
    label), with ``conditions`` and more ``status`` (admission, requeueState, checks)."""
    name = workload_name(model_id)
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-wl-{model_id}",
            "creationTimestamp": iso(created),
            "generation": 1,
            "labels": {KUEUE_JOB_UID_LABEL: jobset_uid(model_id)},
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": name,
                    "uid": jobset_uid(model_id),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "active": active,
            "queueName": queue,
            "priority": 100,
            "priorityClassRef": {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "openrl-standard",
            },
            "podSets": [_pod_set(model_id, role) for role in ROLES],
        },
        "status": {"conditions": list(conditions), **(status or {})},
    }


def requeue_state(count: int, at: float) -> Json:
    return {"requeueState": {"count": count, "requeueAt": iso(at)}}


def jobset(model_id: str, created: float, suspended: bool) -> Json:
    """The model's JobSet (queued in the LocalQueue); Kueue unsuspends it on admission."""
    name = workload_name(model_id)
    jobs = [
        {"name": role, "replicas": 1, "template": {"spec": _job_spec(model_id, role)}}
        for role in ROLES
    ]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": jobset_uid(model_id),
            "creationTimestamp": iso(created),
            "labels": {MODEL_ID_LABEL: model_id, QUEUE_LABEL: LOCAL_QUEUE},
        },
        "spec": {"suspend": suspended, "replicatedJobs": jobs},
    }


def _job_spec(model_id: str, role: str) -> Json:
    labels = {MODEL_ID_LABEL: model_id, ROLE_LABEL: role}
    template = {"metadata": {"labels": labels}, "spec": pod_spec(role)}
    return {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": template}


def child_job(model_id: str, role: str, created: float) -> Json:
    """The JobSet controller's Job for ``role``, once the JobSet runs."""
    owner: Json = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}
    owner |= {"name": workload_name(model_id), "uid": jobset_uid(model_id), "controller": True}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(model_id, role),
            "namespace": NAMESPACE,
            "uid": job_uid(model_id, role),
            "creationTimestamp": iso(created),
            "labels": {
                JOBSET_NAME_LABEL: workload_name(model_id),
                JOBSET_UID_LABEL: jobset_uid(model_id),
            },
            "ownerReferences": [{**owner, "blockOwnerDeletion": True}],
        },
        "spec": {**_job_spec(model_id, role), "suspend": False},
    }

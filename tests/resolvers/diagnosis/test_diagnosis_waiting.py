"""Waiting for GPUs: Kueue's, the scheduler's and DRA's causes, from ``why_waiting``'s
reasons over objects shaped as the controllers write them."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from openrl_inspect.adapters.kubernetes import (
    ClaimRecord,
    EventRecord,
    ObjectRef,
    PodRecord,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._dra import parse_claim
from openrl_inspect.adapters.kubernetes._pods import parse_pod
from openrl_inspect.adapters.kubernetes._workloads import parse_workload
from openrl_inspect.core.domain import CauseKind, Verdict
from openrl_inspect.resolvers.cluster.waiting import why_waiting
from openrl_inspect.resolvers.diagnosis import (
    Cause,
    Diagnosis,
    KubeEvidence,
    ModelEvidence,
    StateEvidence,
    diagnose,
)
from support import diagnosis_evidence, kube_objects

WAITING_SINCE = diagnosis_evidence.NOW - 1903
PREEMPTOR_UID = "6f1d7c2e-9a8b-4c1d-8e2f-0a1b2c3d4e5f"
PREEMPTED_MESSAGE = (
    f"Preempted to accommodate a workload (UID: {PREEMPTOR_UID}, JobUID: uid-job-lora-z) "
    "due to prioritization in the ClusterQueue"
)
SCHEDULER_MESSAGE = (
    "0/12 nodes are available: 4 Insufficient nvidia.com/gpu, 8 node(s) had untolerated "
    "taint {nvidia.com/gpu: present}. preemption: 0/12 nodes are available: 12 Preemption "
    "is not helpful for scheduling."
)


def facts(cause: Cause) -> dict[str, object]:
    return {f.name: f.value for f in cause.facts}


def kinds(d: Diagnosis) -> list[CauseKind]:
    return [c.kind for c in d.causes]


def workload(obj: dict[str, Any], **changes: Any) -> WorkloadRecord:
    rec = parse_workload(obj)
    assert rec is not None
    return replace(rec, **changes)


def pod(obj: dict[str, Any]) -> PodRecord:
    rec = parse_pod(obj)
    assert rec is not None
    return rec


def cond(type_: str, status: str, reason: str, message: str, at: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
        "observedGeneration": 1,
    }


def wl_obj(conditions: list[dict[str, Any]], name: str = "job-lora-a-trainer-3f9c2") -> Any:
    return kube_objects._workload(name, diagnosis_evidence.MODEL, conditions, None)


def evidence(
    workloads: Sequence[WorkloadRecord],
    pods: Sequence[PodRecord] = (),
    claims: Sequence[ClaimRecord] = (),
    events: Sequence[EventRecord] = (),
    state: str = "waiting",
) -> ModelEvidence:
    model = diagnosis_evidence.model(state, at=WAITING_SINCE)
    reasons = why_waiting(model, workloads, pods, claims, diagnosis_evidence.NOW)
    kube = KubeEvidence(
        workloads=tuple(workloads),
        pods=tuple(pods),
        claims=tuple(claims),
        events=tuple(events),
        wait_reasons=tuple(reasons),
    )
    return diagnosis_evidence.healthy(state=StateEvidence(model=model), kube=kube)


def test_waiting_on_quota_names_flavor_shortfall_and_queue_position() -> None:
    pending = workload(kube_objects.pending_workload(), model_id=diagnosis_evidence.MODEL)
    d = diagnose(evidence([pending], [pod(kube_objects.unschedulable_pod())]))
    assert d.verdict == Verdict.WAITING
    assert kinds(d) == [CauseKind.QUOTA, CauseKind.UNSCHEDULABLE]
    quota = d.causes[0]
    assert facts(quota) == {
        "resource": "nvidia.com/gpu",
        "flavor": "h100-flavor",
        "shortfall": 8,
        "queue_position": 1,
        "queue_length": 1,
        "waited_s": 1800.0,
    }
    assert quota.statement == (
        "Kueue: not enough quota, 8 more nvidia.com/gpu needed in flavor h100-flavor; "
        "1 of 1 in its queue; waiting 30m"
    )
    assert quota.refs == ("Workload openrl/job-lora-b-trainer-3f9c2",)
    assert quota.next.graphql is not None and "workloads" in quota.next.graphql
    sched = d.causes[1]
    assert facts(sched)["nodes: Insufficient nvidia.com/gpu"] == 3
    assert (facts(sched)["nodes_fit"], facts(sched)["nodes_total"]) == (0, 3)


def test_unschedulable_condenses_the_newest_scheduler_message_into_node_counts() -> None:
    admitted = workload(kube_objects.admitted_workload())
    raw = kube_objects.pod(
        diagnosis_evidence.TRAINER_POD,
        model_id=diagnosis_evidence.MODEL,
        phase="Pending",
        claim_template=None,
        gpus=8,
    )
    raw["status"]["conditions"] = [
        cond(
            "PodScheduled",
            "False",
            "Unschedulable",
            kube_objects.UNSCHEDULABLE_MESSAGE,
            "2026-01-05T09:40:00Z",
        )
    ]
    pending = pod(raw)
    scheduling = diagnosis_evidence.event(
        "FailedScheduling",
        SCHEDULER_MESSAGE,
        ObjectRef("Pod", kube_objects.NAMESPACE, diagnosis_evidence.TRAINER_POD, pending.uid),
        at=diagnosis_evidence.NOW - 20,
        count=37,
        type_="Warning",
        controller="default-scheduler",
    )
    d = diagnose(evidence([admitted], [pending], events=[scheduling], state="placed"))
    (cause,) = d.causes
    assert cause.kind == CauseKind.UNSCHEDULABLE
    assert facts(cause) == {
        "pod": diagnosis_evidence.TRAINER_POD,
        "nodes_fit": 0,
        "nodes_total": 12,
        "nodes: had untolerated taint {nvidia.com/gpu: present}": 8,
        "nodes: Insufficient nvidia.com/gpu": 4,
        "attempts": 37,
    }
    assert cause.statement == (
        f"Pod {diagnosis_evidence.TRAINER_POD} unschedulable for 20m: 0/12 nodes fit: 8 had untolerated taint "
        "{nvidia.com/gpu: present}, 4 Insufficient nvidia.com/gpu"
    )
    assert cause.next.pods == (pending.key,)
    assert cause.next.logs is not None and cause.next.logs.include_events


def test_inadmissible_when_the_local_queue_does_not_exist() -> None:
    message = "LocalQueue openrl-training doesn't exist"
    wl = workload(
        wl_obj([cond("QuotaReserved", "False", "Inadmissible", message, "2026-01-05T09:45:00Z")])
    )
    d = diagnose(evidence([wl]))
    (cause,) = d.causes
    assert cause.kind == CauseKind.INADMISSIBLE
    assert facts(cause)["message"] == message and facts(cause)["waited_s"] == 900.0
    assert message in cause.statement
    assert "in its queue" not in cause.statement  # no queue Kueue serves: no position


def test_admission_checks_pending_after_quota_is_reserved() -> None:
    wl = workload(
        wl_obj(
            [
                cond(
                    "QuotaReserved",
                    "True",
                    "QuotaReserved",
                    "Quota reserved in ClusterQueue gpu-cq",
                    "2026-01-05T09:50:00Z",
                ),
                cond(
                    "Admitted",
                    "False",
                    "UnsatisfiedChecks",
                    "The workload has not all checks ready",
                    "2026-01-05T09:50:00Z",
                ),
            ]
        )
    )
    d = diagnose(evidence([wl]))
    (cause,) = d.causes
    assert cause.kind == CauseKind.ADMISSION_CHECK
    assert facts(cause)["reason"] == "UnsatisfiedChecks"
    assert "The workload has not all checks ready" in cause.statement


def test_not_queued_without_any_workload_or_pod() -> None:
    d = diagnose(evidence([]))
    (cause,) = d.causes
    assert cause.kind == CauseKind.NOT_QUEUED
    assert facts(cause)["waited_s"] == 1903.0
    assert "model lora-a" in cause.statement


def test_a_deactivated_workload() -> None:
    wl = workload(wl_obj([]), active=False, created=diagnosis_evidence.NOW - 3600)
    d = diagnose(evidence([wl]))
    assert kinds(d) == [CauseKind.WORKLOAD_INACTIVE]
    assert facts(d.causes[0])["waited_s"] == 3600.0


def _preempted_conditions() -> list[dict[str, Any]]:
    at = "2026-01-05T09:48:00Z"
    return [
        cond("QuotaReserved", "False", "Pending", "Preempted to accommodate a workload", at),
        cond("Evicted", "True", "Preempted", PREEMPTED_MESSAGE, at),
        cond("Preempted", "True", "InClusterQueue", PREEMPTED_MESSAGE, at),
        cond("Requeued", "True", "Preempted", PREEMPTED_MESSAGE, at),
    ]


def _preempted_event(name: str) -> EventRecord:
    ref = ObjectRef("Workload", kube_objects.NAMESPACE, name, "uid-wl")
    return diagnosis_evidence.event(
        "Preempted",
        PREEMPTED_MESSAGE,
        ref,
        at=diagnosis_evidence.NOW - 720,
        type_="Normal",
        controller="kueue-admission",
    )


def test_preempted_says_by_what_and_when_once() -> None:
    name = "job-lora-a-trainer-3f9c2"
    wl = workload(wl_obj(_preempted_conditions(), name), requeue_count=2)
    d = diagnose(evidence([wl], events=[_preempted_event(name)]))
    assert kinds(d) == [CauseKind.PREEMPTED]  # Kueue's Evicted/Preempted pair is one cause
    cause = d.causes[0]
    f = facts(cause)
    assert (f["reason"], f["preemptor_uid"], f["requeues"], f["events"]) == (
        "InClusterQueue",
        PREEMPTOR_UID,
        2,
        1,
    )
    assert f["at"] == diagnosis_evidence.NOW - 720
    assert cause.statement == (
        f"Workload preempted 12m ago (InClusterQueue) for workload {PREEMPTOR_UID}"
    )


def test_a_running_model_whose_workload_is_preempted_now() -> None:
    name = "job-lora-a-trainer-3f9c2"
    wl = workload(wl_obj(_preempted_conditions(), name))
    ev = diagnosis_evidence.with_kube(
        diagnosis_evidence.healthy(), workloads=(wl,), events=(_preempted_event(name),)
    )
    d = diagnose(ev)
    assert kinds(d) == [CauseKind.PREEMPTED]
    assert facts(d.causes[0])["preemptor_uid"] == PREEMPTOR_UID
    assert d.verdict == Verdict.PROGRESSING  # the state has not caught up: the cause says it


def test_evicted_for_pods_ready_timeout() -> None:
    message = "Exceeded the PodsReady timeout openrl/job-lora-a-trainer-3f9c2"
    wl = workload(
        wl_obj(
            [
                cond(
                    "QuotaReserved", "False", "Pending", "Waiting for quota", "2026-01-05T09:55:00Z"
                ),
                cond("Evicted", "True", "PodsReadyTimeout", message, "2026-01-05T09:55:00Z"),
            ]
        )
    )
    d = diagnose(evidence([wl]))
    assert kinds(d)[0] == CauseKind.EVICTED
    f = facts(d.causes[0])
    assert f["reason"] == "PodsReadyTimeout" and f["message"] == message
    assert "evicted 5m00s ago (PodsReadyTimeout)" in d.causes[0].statement


def test_claims_not_allocated() -> None:
    raw = copy.deepcopy(kube_objects.allocated_claim())
    del raw["status"]
    claim = parse_claim(raw)
    assert claim is not None
    pending = pod(
        kube_objects.pod(
            diagnosis_evidence.TRAINER_POD,
            model_id=diagnosis_evidence.MODEL,
            phase="Pending",
            claim_name=claim.name,
        )
    )
    d = diagnose(
        evidence([workload(kube_objects.admitted_workload())], [pending], [claim], state="placed")
    )
    assert kinds(d) == [CauseKind.CLAIM_UNALLOCATED]
    assert d.causes[0].refs == (f"ResourceClaim openrl/{claim.name}",)
    assert "requests 8 x gpu.nvidia.com" in d.causes[0].statement


def test_placed_with_nothing_blocking_is_waiting_other() -> None:
    running = diagnosis_evidence.pod()
    d = diagnose(evidence([workload(kube_objects.admitted_workload())], [running], state="placed"))
    assert kinds(d) == [CauseKind.WAITING_OTHER]
    assert "workers may still be starting" in d.causes[0].statement


def test_a_running_model_with_a_replacement_pod_the_scheduler_cannot_place() -> None:
    raw = kube_objects.unschedulable_pod()
    raw["metadata"]["labels"]["openrl.ai/model-id"] = diagnosis_evidence.MODEL
    d = diagnose(
        diagnosis_evidence.with_kube(
            diagnosis_evidence.healthy(), pods=(diagnosis_evidence.pod(), pod(raw))
        )
    )
    assert kinds(d) == [CauseKind.UNSCHEDULABLE]
    assert facts(d.causes[0])["nodes: Insufficient nvidia.com/gpu"] == 3

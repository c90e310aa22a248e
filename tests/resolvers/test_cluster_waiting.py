"""``why_waiting``: a waiting model's causes, from Kubernetes records, most likely first."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from openrl_inspect.adapters.kubernetes import (
    ClaimRecord,
    Condition,
    ContainerState,
    PodRecord,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._dra import parse_claim
from openrl_inspect.adapters.kubernetes._json import parse_time
from openrl_inspect.adapters.kubernetes._pods import parse_pod
from openrl_inspect.adapters.kubernetes._workloads import parse_workload
from openrl_inspect.resolvers.cluster.waiting import queue_position, waiting_seconds, why_waiting
from openrl_inspect.state.decode import JsonField
from openrl_inspect.state.records import ModelRecord
from support import kube_objects

NOW = parse_time("2026-01-05T10:00:00Z") or 0.0
WAITING_SINCE = parse_time("2026-01-05T09:20:00Z")


def model(
    mid: str = "lora-b", state: str = "waiting", at: float | None = WAITING_SINCE
) -> ModelRecord:
    return ModelRecord(
        id=mid,
        session_id="s",
        base_model="Qwen/Qwen3-8B",
        lora=JsonField.of({}),
        settings=JsonField.of({}),
        state=state,
        state_at=at,
        created_at=at,
        transitions={state: at} if at is not None else {},
        failure_reason=None,
    )


def workload(obj: dict[str, Any]) -> WorkloadRecord:
    rec = parse_workload(obj)
    assert rec is not None
    return rec


def pod(obj: dict[str, Any]) -> PodRecord:
    rec = parse_pod(obj)
    assert rec is not None
    return rec


def claim(obj: dict[str, Any]) -> ClaimRecord:
    rec = parse_claim(obj)
    assert rec is not None
    return rec


def kinds(reasons: list[Any]) -> list[str]:
    return [r.kind for r in reasons]


def test_pending_on_quota_says_so_first_with_flavor_and_shortfall() -> None:
    reasons = why_waiting(
        model(),
        [workload(kube_objects.pending_workload())],
        [pod(kube_objects.unschedulable_pod())],
        [],
        NOW,
    )
    first = reasons[0]
    assert (first.rank, first.kind, first.source) == (1, "QUOTA", "kueue")
    assert first.message == kube_objects.PENDING_QUOTA_MESSAGE
    assert (first.resource, first.flavor, first.shortfall) == ("nvidia.com/gpu", "h100-flavor", 8)
    assert first.object == "Workload openrl/job-lora-b-trainer-3f9c2"
    assert first.since == parse_time("2026-01-05T09:30:00Z")
    assert first.waited_seconds == pytest.approx(1800.0)
    assert (first.queue_position, first.queue_length) == (1, 1)
    # the pod the scheduler cannot place comes after: quota blocks it first
    assert kinds(reasons) == ["QUOTA", "UNSCHEDULABLE"]
    assert reasons[1].message == kube_objects.UNSCHEDULABLE_MESSAGE and reasons[1].rank == 2


def test_queue_position_follows_priority_then_age() -> None:
    mine = workload(kube_objects.pending_workload())
    older = replace(mine, name="older", uid="u1", created=(mine.created or 0) - 60)
    urgent = replace(mine, name="urgent", uid="u2", priority=1000, created=(mine.created or 0) + 60)
    other_queue = replace(mine, name="elsewhere", uid="u3", queue_name="other", priority=5000)
    admitted = replace(
        workload(kube_objects.admitted_workload()), name="running", queue_name="openrl-training"
    )
    peers = [older, urgent, other_queue, admitted]
    assert queue_position(mine, peers) == (3, 3)
    assert queue_position(admitted, peers) is None
    (reason,) = [r for r in why_waiting(model(), [mine], [], [], NOW, peers) if r.kind == "QUOTA"]
    assert (reason.queue_position, reason.queue_length) == (3, 3)


def test_admitted_but_pods_unschedulable() -> None:
    admitted = replace(workload(kube_objects.admitted_workload()), model_id="lora-b")
    reasons = why_waiting(
        model(state="placed"), [admitted], [pod(kube_objects.unschedulable_pod())], [], NOW
    )
    assert kinds(reasons) == ["UNSCHEDULABLE"]
    assert reasons[0].source == "scheduler" and reasons[0].reason == "Unschedulable"
    assert reasons[0].message == kube_objects.UNSCHEDULABLE_MESSAGE


def test_claims_not_allocated_and_not_created() -> None:
    unallocated = copy.deepcopy(kube_objects.allocated_claim())
    del unallocated["status"]
    pending_pod = kube_objects.pod(
        "lora-a-trainer-0",
        model_id="lora-a",
        phase="Pending",
        claim_name="lora-a-trainer-0-gpus-x7k2p",
    )
    no_claim_yet = kube_objects.pod(
        "lora-a-sampler-0", model_id="lora-a", role="sampler", phase="Pending"
    )
    reasons = why_waiting(
        model("lora-a", state="placed"),
        [workload(kube_objects.admitted_workload())],
        [pod(pending_pod), pod(no_claim_yet)],
        [claim(unallocated)],
        NOW,
    )
    assert kinds(reasons) == ["CLAIM_UNALLOCATED", "CLAIM_UNALLOCATED"]
    by_reason = {r.reason: r for r in reasons}
    assert (
        "ResourceClaim lora-a-trainer-0-gpus-x7k2p is not allocated"
        in by_reason["NotAllocated"].message
    )
    assert "8 x gpu.nvidia.com" in by_reason["NotAllocated"].message
    assert by_reason["ClaimNotCreated"].object == "Pod openrl/lora-a-sampler-0"
    assert {r.source for r in reasons} == {"dra"}


def _with_conditions(obj: dict[str, Any], *conditions: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["status"]["conditions"] = list(conditions)
    return obj


def test_evicted_preempted_and_requeued_rank_before_quota() -> None:
    pending = kube_objects.pending_workload()
    quota = pending["status"]["conditions"][0]
    evicted = {
        "type": "Evicted",
        "status": "True",
        "reason": "Preempted",
        "message": "Preempted to accommodate a higher priority Workload",
        "lastTransitionTime": "2026-01-05T09:25:00Z",
    }
    preempted = {
        "type": "Preempted",
        "status": "True",
        "reason": "InClusterQueue",
        "message": "Preempted to accommodate a workload (UID: x) in the ClusterQueue",
        "lastTransitionTime": "2026-01-05T09:25:00Z",
    }
    requeued = {
        "type": "Requeued",
        "status": "True",
        "reason": "BackoffFinished",
        "message": "The workload backoff was finished",
        "lastTransitionTime": "2026-01-05T09:28:00Z",
    }
    obj = _with_conditions(pending, quota, evicted, preempted, requeued)
    obj["status"]["requeueState"] = {"count": 2}
    reasons = why_waiting(model(), [workload(obj)], [], [], NOW)
    assert kinds(reasons) == ["EVICTED", "PREEMPTED", "QUOTA", "REQUEUED"]
    assert reasons[0].message == "Preempted to accommodate a higher priority Workload"
    assert reasons[3].message.startswith("Requeued 2 time(s) after eviction.")
    assert [r.rank for r in reasons] == [1, 2, 3, 4]


def test_deactivated_workload_comes_first() -> None:
    obj = copy.deepcopy(kube_objects.pending_workload())
    obj["spec"]["active"] = False
    reasons = why_waiting(model(), [workload(obj)], [], [], NOW)
    assert kinds(reasons)[0] == "WORKLOAD_INACTIVE"
    assert "QUOTA" in kinds(reasons)


def test_no_workload_at_all() -> None:
    reasons = why_waiting(model("lora-z"), [], [], [], NOW)
    (only,) = reasons
    assert only.kind == "NO_WORKLOAD" and only.rank == 1
    assert "model lora-z" in only.message
    assert only.since == WAITING_SINCE and only.waited_seconds == pytest.approx(2400.0)


def test_pods_without_a_workload_are_not_queued_by_kueue() -> None:
    reasons = why_waiting(model(), [], [pod(kube_objects.unschedulable_pod())], [], NOW)
    assert kinds(reasons) == ["UNSCHEDULABLE", "NO_WORKLOAD_FOR_PODS"]


def test_quota_reserved_waiting_on_admission_checks() -> None:
    obj = _with_conditions(
        kube_objects.pending_workload(),
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "Quota reserved in ClusterQueue gpu-cq",
            "lastTransitionTime": "2026-01-05T09:40:00Z",
        },
        {
            "type": "Admitted",
            "status": "False",
            "reason": "NoChecks",
            "message": "The workload has not all checks ready",
            "lastTransitionTime": "2026-01-05T09:40:00Z",
        },
    )
    (reason,) = why_waiting(model(), [workload(obj)], [], [], NOW)
    assert reason.kind == "ADMISSION_CHECK"
    assert reason.message == "The workload has not all checks ready"


def test_admitted_with_no_pods_and_crashing_containers() -> None:
    admitted = workload(kube_objects.admitted_workload())
    (no_pods,) = why_waiting(model("lora-a", state="placed"), [admitted], [], [], NOW)
    assert no_pods.kind == "NO_PODS"
    crashing = pod(kube_objects.running_trainer())
    crashing = replace(
        crashing,
        containers=(
            ContainerState(
                "trainer", "waiting", reason="CrashLoopBackOff", message="back-off 5m0s"
            ),
        ),
    )
    (crash,) = why_waiting(model("lora-a", state="placed"), [admitted], [crashing], [], NOW)
    assert (crash.kind, crash.source, crash.message) == (
        "CONTAINER_ERROR",
        "kubelet",
        "back-off 5m0s",
    )


def test_running_models_have_nothing_to_explain() -> None:
    args: tuple[list[Any], list[Any], list[Any]] = (
        [workload(kube_objects.pending_workload())],
        [pod(kube_objects.unschedulable_pod())],
        [],
    )
    assert why_waiting(model(state="active"), *args, NOW) == []
    assert why_waiting(model(state="ended"), *args, NOW) == []
    running = why_waiting(
        model("lora-a", state="placed"),
        [workload(kube_objects.admitted_workload())],
        [pod(kube_objects.running_trainer())],
        [claim(kube_objects.allocated_claim())],
        NOW,
    )
    assert kinds(running) == ["NOTHING_FOUND"]


def test_finished_workload() -> None:
    obj = copy.deepcopy(kube_objects.admitted_workload())
    obj["status"]["conditions"].append(
        {
            "type": "Finished",
            "status": "True",
            "reason": "Succeeded",
            "message": "Job finished successfully",
            "lastTransitionTime": "2026-01-05T09:50:00Z",
        }
    )
    (reason,) = why_waiting(model("lora-a"), [workload(obj)], [], [], NOW)
    assert (reason.kind, reason.message) == ("WORKLOAD_FINISHED", "Job finished successfully")


def test_waiting_seconds() -> None:
    assert waiting_seconds(model(), NOW) == pytest.approx(2400.0)
    assert waiting_seconds(model(state="active"), NOW) is None
    assert waiting_seconds(model(at=None), NOW) is None
    assert waiting_seconds(replace(model(), state_at=NOW + 5), NOW) == 0.0


def test_condition_record_order_does_not_change_the_ranking() -> None:
    base = workload(kube_objects.pending_workload())
    extra = Condition(
        "Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout", NOW - 10
    )
    a = why_waiting(model(), [replace(base, conditions=(*base.conditions, extra))], [], [], NOW)
    b = why_waiting(model(), [replace(base, conditions=(extra, *base.conditions))], [], [], NOW)
    assert a == b and kinds(a) == ["EVICTED", "QUOTA"]

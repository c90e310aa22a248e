"""Causes in the model's pods and GPUs: OOM kills, crash loops, image pulls, config
errors, failed and evicted pods, tainted GPUs; container states as the kubelet reports
them, Events as the kubelet and node-problem-detector write them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from openrl_inspect.adapters.kubernetes import (
    Condition,
    ContainerState,
    DeviceTaint,
    ObjectKey,
    ObjectRef,
    Termination,
)
from openrl_inspect.core.domain import CauseKind, Verdict
from openrl_inspect.resolvers.diagnosis import Cause, Diagnosis, ModelEvidence, diagnose
from support import diagnosis_evidence


def facts(cause: Cause) -> dict[str, object]:
    return {f.name: f.value for f in cause.facts}


def kinds(d: Diagnosis) -> list[CauseKind]:
    return [c.kind for c in d.causes]


def with_trainer(container: ContainerState, **pod_changes: Any) -> ModelEvidence:
    trainer = replace(diagnosis_evidence.pod(containers=[container]), **pod_changes)
    return diagnosis_evidence.with_kube(
        diagnosis_evidence.healthy(),
        pods=(trainer, diagnosis_evidence.pod(diagnosis_evidence.SAMPLER_POD, "sampler")),
    )


def oom(at: float) -> Termination:
    return Termination(reason="OOMKilled", exit_code=137, started_at=at - 1800, finished_at=at)


def test_oom_killed_with_exit_code_restarts_and_the_nodes_oom_event() -> None:
    killed = diagnosis_evidence.NOW - 300
    container = ContainerState(
        name="trainer",
        state="waiting",
        reason="CrashLoopBackOff",
        message="back-off 2m40s restarting failed container=trainer pod=lora-a-trainer-0",
        restart_count=4,
        image=diagnosis_evidence.IMAGE,
        last_termination=oom(killed),
    )
    node_event = diagnosis_evidence.event(
        "OOMKilling",
        "Memory cgroup out of memory: Killed process 48211 (python) total-vm:412023112kB, "
        "anon-rss:251658240kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:498212kB "
        "oom_score_adj:-997",
        ObjectRef("Node", "", diagnosis_evidence.NODE),
        at=killed + 1,
        controller="kernel-monitor",
    )
    ev = with_trainer(container)
    ev = diagnosis_evidence.with_kube(ev, events=(node_event,))
    d = diagnose(ev)
    assert kinds(d) == [CauseKind.OOM_KILLED]  # not also a crash loop: the OOM is why
    cause = d.causes[0]
    f = facts(cause)
    assert (f["container"], f["exit_code"], f["killed_at"], f["restarts"], f["state"]) == (
        "trainer",
        137,
        killed,
        4,
        "CrashLoopBackOff",
    )
    assert str(f["node_oom"]).startswith("Memory cgroup out of memory: Killed process 48211")
    assert cause.statement == (
        "Container trainer of pod lora-a-trainer-0 OOM-killed 5m00s ago (exit 137), "
        "4 restart(s); now CrashLoopBackOff"
    )
    assert cause.refs == ("Pod openrl/lora-a-trainer-0", "Node gpu-h100-1")
    logs = cause.next.logs
    assert logs is not None and logs.containers == ("trainer",)
    assert (logs.start, logs.end) == (killed - 300, killed + 60)


def test_a_failed_models_oom_counts_from_its_failure_not_from_now() -> None:
    failed_at = diagnosis_evidence.NOW - 86400
    ev = with_trainer(
        diagnosis_evidence.running_container(restart_count=1, last_termination=oom(failed_at - 20))
    )
    ev = diagnosis_evidence.with_state(
        ev, model=diagnosis_evidence.model("failed", at=failed_at, failure_reason="trainer exited")
    )
    d = diagnose(ev)
    assert d.verdict == Verdict.FAILED
    assert kinds(d) == [CauseKind.OOM_KILLED, CauseKind.MODEL_FAILED]  # the root, then the end


def test_crash_loop_with_the_last_exit() -> None:
    last = Termination(
        reason="Error",
        exit_code=1,
        message="ValueError: lora rank must be positive",
        started_at=diagnosis_evidence.NOW - 95,
        finished_at=diagnosis_evidence.NOW - 90,
    )
    container = ContainerState(
        name="trainer",
        state="waiting",
        reason="CrashLoopBackOff",
        restart_count=7,
        last_termination=last,
    )
    d = diagnose(with_trainer(container))
    (cause,) = d.causes
    assert cause.kind == CauseKind.CRASH_LOOP
    f = facts(cause)
    assert (f["restarts"], f["exit_code"], f["reason"], f["message"]) == (
        7,
        1,
        "Error",
        "ValueError: lora rank must be positive",
    )
    assert cause.statement == (
        "Container trainer of pod lora-a-trainer-0 crash-looping: 7 restart(s), "
        "last exit 1 (Error) 90s ago"
    )
    assert cause.next.logs is not None and cause.next.logs.severity == "ERROR"


def test_image_pull_back_off() -> None:
    message = (
        'Back-off pulling image "ghcr.io/openrl/worker:1.4.3": ErrImagePull: rpc error: '
        "code = NotFound desc = failed to pull and unpack image"
    )
    container = ContainerState(
        name="trainer",
        state="waiting",
        reason="ImagePullBackOff",
        message=message,
        image="ghcr.io/openrl/worker:1.4.3",
    )
    d = diagnose(with_trainer(container, phase="Pending", started=diagnosis_evidence.NOW - 600))
    (cause,) = d.causes
    assert cause.kind == CauseKind.IMAGE_PULL
    assert facts(cause)["image"] == "ghcr.io/openrl/worker:1.4.3"
    assert facts(cause)["reason"] == "ImagePullBackOff"
    assert cause.statement == (
        "Pod lora-a-trainer-0/trainer cannot pull ghcr.io/openrl/worker:1.4.3 for 10m "
        "(ImagePullBackOff): ErrImagePull: rpc error: code = NotFound desc = failed to pull…"
    )


def test_container_config_error_names_the_missing_secret() -> None:
    container = ContainerState(
        name="trainer",
        state="waiting",
        reason="CreateContainerConfigError",
        message='secret "hf-token" not found',
    )
    d = diagnose(with_trainer(container, phase="Pending", started=diagnosis_evidence.NOW - 120))
    (cause,) = d.causes
    assert cause.kind == CauseKind.CONTAINER_CONFIG
    assert facts(cause)["message"] == 'secret "hf-token" not found'
    assert cause.statement.endswith(': secret "hf-token" not found')


def test_pod_failed_with_its_exit_codes() -> None:
    container = ContainerState(
        name="trainer",
        state="terminated",
        reason="Error",
        exit_code=2,
        finished_at=diagnosis_evidence.NOW - 240,
    )
    d = diagnose(with_trainer(container, phase="Failed"))
    (cause,) = d.causes
    assert cause.kind == CauseKind.POD_FAILED
    assert (
        facts(cause)["message"] == "trainer exit 2" and cause.since == diagnosis_evidence.NOW - 240
    )


def test_pod_evicted_by_the_kubelet_under_memory_pressure() -> None:
    note = (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. "
        "Container trainer was using 250Gi, request is 128Gi, has larger consumption of memory."
    )
    container = ContainerState(name="trainer", state="terminated", reason="Error", exit_code=137)
    disruption = Condition(
        "DisruptionTarget",
        "True",
        "TerminationByKubelet",
        "The node was low on resource: memory.",
        diagnosis_evidence.NOW - 400,
    )
    ev = with_trainer(container, phase="Failed", conditions=(disruption,))
    evicted = diagnosis_evidence.event(
        "Evicted",
        note,
        ObjectRef("Pod", "openrl", diagnosis_evidence.TRAINER_POD),
        at=diagnosis_evidence.NOW - 400,
    )
    d = diagnose(diagnosis_evidence.with_kube(ev, events=(evicted,)))
    (cause,) = d.causes
    assert cause.kind == CauseKind.EVICTED
    f = facts(cause)
    assert f["reason"] == "TerminationByKubelet" and f["at"] == diagnosis_evidence.NOW - 400
    assert str(f["message"]).startswith("The node was low on resource: memory.")
    assert cause.next.pods == (ObjectKey("openrl", diagnosis_evidence.TRAINER_POD),)


def test_a_pod_preempted_by_the_scheduler() -> None:
    disruption = Condition(
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod",
        diagnosis_evidence.NOW - 30,
    )
    d = diagnose(with_trainer(diagnosis_evidence.running_container(), conditions=(disruption,)))
    assert kinds(d) == [CauseKind.PREEMPTED]
    assert "preempting to accommodate a higher priority pod" in d.causes[0].statement


def test_a_tainted_gpu_under_the_model() -> None:
    devices = list(diagnosis_evidence.gpus())
    xid = DeviceTaint(
        "gpu.nvidia.com/xid",
        "NoExecute",
        value="79",
        time_added=diagnosis_evidence.NOW - 700,
        rule="gpu-xid-79",
    )
    devices[3] = replace(devices[3], taints=(xid,))
    d = diagnose(diagnosis_evidence.with_kube(diagnosis_evidence.healthy(), gpus=tuple(devices)))
    (cause,) = d.causes
    assert cause.kind == CauseKind.GPU_UNHEALTHY
    f = facts(cause)
    assert (f["tainted_gpus"], f["gpus"], f["device"], f["uuid"], f["taint"], f["rule"]) == (
        1,
        8,
        "gpu-3",
        devices[3].uuid,
        "gpu.nvidia.com/xid=79:NoExecute",
        "gpu-xid-79",
    )
    assert cause.refs == (f"GPU {devices[3].uuid}",)
    assert cause.statement == (
        "1 of 8 GPU(s) under the model tainted; gpu-3 on gpu-h100-1: "
        "gpu.nvidia.com/xid=79:NoExecute for 11m"
    )


def test_eight_pods_alike_are_two_causes_and_a_count() -> None:
    crash = ContainerState(
        name="trainer",
        state="waiting",
        reason="CrashLoopBackOff",
        restart_count=5,
        last_termination=Termination(
            reason="Error", exit_code=1, finished_at=diagnosis_evidence.NOW - 60
        ),
    )
    pods = tuple(
        replace(diagnosis_evidence.pod(containers=[crash]), name=f"lora-a-trainer-{i}")
        for i in range(8)
    )
    d = diagnose(diagnosis_evidence.with_kube(diagnosis_evidence.healthy(), pods=pods))
    assert kinds(d) == [CauseKind.CRASH_LOOP, CauseKind.CRASH_LOOP]
    assert d.left_off == 6

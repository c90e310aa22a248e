"""No false alarms: healthy models of several shapes get no cause at all."""

from __future__ import annotations

from dataclasses import replace

import pytest
from openrl_inspect.adapters.kubernetes import DeviceTaint, Termination
from openrl_inspect.core.domain import Verdict
from openrl_inspect.resolvers.diagnosis import (
    Diagnosis,
    DutyEvidence,
    KubeEvidence,
    ModelEvidence,
    SamplingEvidence,
    diagnose,
)
from support import diagnosis_evidence


def assert_healthy(evidence: ModelEvidence) -> Diagnosis:
    d = diagnose(evidence)
    assert [c.statement for c in d.causes] == []
    assert (d.verdict, d.left_off, d.unknown) == (Verdict.PROGRESSING, 0, ())
    return d


def test_steady_steps_with_natural_jitter_have_no_cause() -> None:
    assert_healthy(diagnosis_evidence.healthy())


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6, 7, 8])
def test_many_seeds_of_jitter_raise_no_alarm(seed: int) -> None:
    assert_healthy(
        diagnosis_evidence.healthy(
            diagnosis_evidence.history(seed=seed),
            sampling=SamplingEvidence(tuple(diagnosis_evidence.batches(seed=seed))),
        )
    )


def test_one_slow_step_among_fifty_is_not_a_regression() -> None:
    # the straggler is inside the recent window, tripling every op of that step
    assert_healthy(diagnosis_evidence.healthy(diagnosis_evidence.history(straggler_step=47)))


def test_a_model_that_just_started_has_no_baseline() -> None:
    # three steps, the last two far slower: no baseline to be slower than
    hist = diagnosis_evidence.history(3, slow={"forward_backward": 3.0, "sample": 3.0}, slow_from=1)
    sampling = SamplingEvidence(tuple(diagnosis_evidence.batches(4, slow_from=2, factor=3.0)))
    assert_healthy(diagnosis_evidence.healthy(hist, sampling=sampling))


def test_a_restarted_trainer_replaced_by_a_live_one_is_history() -> None:
    evidence = diagnosis_evidence.healthy()
    old = replace(
        diagnosis_evidence.worker("w-trainer-0"), last_heartbeat_at=diagnosis_evidence.NOW - 5000
    )
    workers = ((old, False), *evidence.state.workers)
    assert_healthy(diagnosis_evidence.with_state(evidence, workers=workers))


def test_an_old_oom_kill_since_recovered_is_history() -> None:
    old_oom = Termination(
        reason="OOMKilled",
        exit_code=137,
        started_at=diagnosis_evidence.NOW - 7000,
        finished_at=diagnosis_evidence.NOW - 6000,
    )
    container = diagnosis_evidence.running_container(restart_count=1, last_termination=old_oom)
    evidence = diagnosis_evidence.with_kube(
        diagnosis_evidence.healthy(),
        pods=(
            diagnosis_evidence.pod(containers=[container]),
            diagnosis_evidence.pod(diagnosis_evidence.SAMPLER_POD, "sampler"),
        ),
    )
    assert_healthy(evidence)


def test_an_informational_device_taint_is_not_unhealthy() -> None:
    evidence = diagnosis_evidence.healthy()
    devices = list(diagnosis_evidence.gpus())
    devices[0] = replace(devices[0], taints=(DeviceTaint("gpu.nvidia.com/ecc", "None"),))
    assert_healthy(diagnosis_evidence.with_kube(evidence, gpus=tuple(devices)))


def test_gpus_busy_between_bursts_are_not_idle() -> None:
    # low duty but ops ran in the window: the model works, the GPUs are just light
    evidence = diagnosis_evidence.healthy()
    assert isinstance(evidence.duty, DutyEvidence)
    light = DutyEvidence(600.0, {u: 0.02 for u in evidence.duty.by_uuid})
    assert_healthy(replace(evidence, duty=light))


def test_a_healthy_model_without_kubernetes_evidence_is_judged_on_the_rest() -> None:
    evidence = diagnosis_evidence.healthy(kube=KubeEvidence())
    assert_healthy(evidence)

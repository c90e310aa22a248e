"""Slow rather than stopped: idle reservations, a slow trainer or sampler, a client the
workers wait on, and steps slower than the model's own past."""

from __future__ import annotations

from dataclasses import replace

import pytest
from openrl_inspect.core.domain import CauseKind, OpHealth, Verdict
from openrl_inspect.resolvers.diagnosis import (
    Cause,
    Diagnosis,
    DutyEvidence,
    SamplingEvidence,
    Thresholds,
    Unknown,
    diagnose,
)
from support import diagnosis_evidence


def facts(cause: Cause) -> dict[str, object]:
    return {f.name: f.value for f in cause.facts}


def kinds(d: Diagnosis) -> list[CauseKind]:
    return [c.kind for c in d.causes]


def idle_duty(value: float) -> DutyEvidence:
    return DutyEvidence(600.0, {d.uuid or "": value for d in diagnosis_evidence.gpus()})


def test_idle_reservation_gpus_held_duty_low_no_op_run() -> None:
    # the client went quiet 40 minutes ago; the GPUs are still held
    hist = diagnosis_evidence.history(end=diagnosis_evidence.NOW - 2400)
    d = diagnose(diagnosis_evidence.healthy(hist, duty=idle_duty(0.004)))
    assert d.verdict == Verdict.STALLED
    assert kinds(d) == [CauseKind.STALLED, CauseKind.IDLE_RESERVATION]
    cause = d.causes[1]
    f = facts(cause)
    assert (f["gpus_held"], f["mean_duty"], f["window_s"], f["gpus_with_samples"]) == (
        8,
        0.004,
        600.0,
        8,
    )
    assert f["held_since"] == diagnosis_evidence.NOW - 7100
    assert cause.statement == (
        "8 GPU(s) held for 1h58m at mean DCGM duty 0.4% over the last 10m, with no op run"
    )
    assert cause.next.graphql is not None and "gpuActivity(windowSeconds: 600)" in (
        cause.next.graphql
    )


def test_no_idle_reservation_while_an_op_runs_or_without_samples() -> None:
    hist = diagnosis_evidence.history(end=diagnosis_evidence.NOW - 2400)
    running = diagnosis_evidence.open_op(
        "op-x", "sample", 50, diagnosis_evidence.NOW - 30, diagnosis_evidence.SAMPLER
    )
    ev = diagnosis_evidence.with_state(
        diagnosis_evidence.healthy(hist, duty=idle_duty(0.0)),
        open_ops=((running, OpHealth.RUNNING),),
    )
    assert CauseKind.IDLE_RESERVATION not in kinds(diagnose(ev))
    no_samples = DutyEvidence(600.0, {})
    assert CauseKind.IDLE_RESERVATION not in kinds(
        diagnose(diagnosis_evidence.healthy(hist, duty=no_samples))
    )


def test_idle_reservation_needs_the_duty_backend() -> None:
    unknown = Unknown("prometheus", "BACKEND_UNAVAILABLE", "connection refused")
    hist = diagnosis_evidence.history(end=diagnosis_evidence.NOW - 2400)
    d = diagnose(diagnosis_evidence.healthy(hist, duty=unknown))
    assert kinds(d) == [CauseKind.STALLED] and d.unknown == (unknown,)


def test_trainer_slow_against_its_own_baseline() -> None:
    hist = diagnosis_evidence.history(slow={"forward_backward": 2.0}, slow_from=46)
    d = diagnose(diagnosis_evidence.healthy(hist))
    assert d.verdict == Verdict.SLOW
    (cause,) = d.causes
    assert cause.kind == CauseKind.TRAINER_SLOW
    f = facts(cause)
    assert f["kind"] == "forward_backward" and f["worker"] == diagnosis_evidence.TRAINER
    assert isinstance(f["ratio"], float) and 1.8 < f["ratio"] < 2.2
    assert isinstance(f["baseline_median"], float) and 1.1 < f["baseline_median"] < 1.3
    assert (f["recent_samples"], f["baseline_samples"]) == (5, 95)
    assert cause.statement.startswith("forward_backward slowed 2.0x: median 2.4s over the last 5")


def test_sampler_slow_against_its_own_baseline() -> None:
    sampling = SamplingEvidence(tuple(diagnosis_evidence.batches(40, slow_from=33, factor=2.5)))
    d = diagnose(diagnosis_evidence.healthy(sampling=sampling))
    assert d.verdict == Verdict.SLOW
    (cause,) = d.causes
    assert cause.kind == CauseKind.SAMPLER_SLOW
    f = facts(cause)
    assert isinstance(f["recent_median"], float) and 4000 < f["recent_median"] < 5500
    assert isinstance(f["baseline_median"], float) and 11000 < f["baseline_median"] < 13000
    assert cause.refs == (f"worker {diagnosis_evidence.SAMPLER}",)
    assert cause.since == sampling.batches[-5].at


def test_sampler_unknown_is_said_not_guessed() -> None:
    unknown = Unknown("redis", "BACKEND_TIMEOUT", "sampler batches timed out")
    d = diagnose(diagnosis_evidence.healthy(sampling=unknown))
    assert d.causes == () and d.unknown == (unknown,)


def test_client_bound_when_gaps_between_ops_dominate() -> None:
    hist = diagnosis_evidence.history(think_s=4.0, between_steps_s=6.0)
    d = diagnose(diagnosis_evidence.healthy(hist))
    assert d.verdict == Verdict.SLOW
    (cause,) = d.causes
    assert cause.kind == CauseKind.CLIENT_BOUND
    f = facts(cause)
    assert isinstance(f["idle_share"], float) and 0.7 < f["idle_share"] < 0.9
    assert f["steps"] == 5
    assert isinstance(f["longest_gap_s"], float) and f["longest_gap_s"] > 4
    assert cause.statement.startswith("Workers idle ")


def test_pace_regression_when_every_step_slows() -> None:
    slow = {"sample": 2.0, "forward_backward": 2.0, "optim_step": 2.0}
    hist = diagnosis_evidence.history(slow=slow, slow_from=44)
    thresholds = Thresholds(slow_factor=1.6)  # the trainer and sampler at 2x: all found
    d = diagnose(diagnosis_evidence.healthy(hist, thresholds=thresholds))
    assert kinds(d) == [CauseKind.TRAINER_SLOW, CauseKind.PACE_REGRESSION]
    pace = d.causes[1]
    f = facts(pace)
    assert isinstance(f["ratio"], float) and 1.7 < f["ratio"] < 2.1
    assert f["since_step"] == 45 and f["recent_samples"] == 5
    assert pace.since == hist.steps[45].started_at
    assert pace.statement.startswith("Steps slowed ")


@pytest.mark.parametrize("factor", [1.1, 1.3])
def test_mild_drift_is_not_a_regression(factor: float) -> None:
    slow = {"sample": factor, "forward_backward": factor, "optim_step": factor}
    d = diagnose(diagnosis_evidence.healthy(diagnosis_evidence.history(slow=slow, slow_from=40)))
    assert d.causes == () and d.verdict == Verdict.PROGRESSING


def test_slow_causes_are_only_judged_for_active_models() -> None:
    hist = diagnosis_evidence.history(slow={"forward_backward": 3.0}, slow_from=40)
    ev = diagnosis_evidence.with_state(
        diagnosis_evidence.healthy(hist), model=diagnosis_evidence.model("placed")
    )
    ev = replace(ev, kube=Unknown("kubernetes", "BACKEND_NOT_CONFIGURED", "off"))
    assert diagnose(ev).causes == ()


def test_one_long_pause_between_steps_is_not_client_bound() -> None:
    """A client away once (a notebook left alone for a minute) idles the workers for
    most of the last steps' wall time, but not in most steps: no cause."""
    hist = diagnosis_evidence.history()
    cut = hist.steps[-3].started_at
    assert cut is not None

    def earlier(t: float | None) -> float | None:
        return None if t is None or t >= cut else t - 60.0

    steps = [replace(s, started_at=earlier(s.started_at) or s.started_at,
                     finished_at=earlier(s.finished_at) or s.finished_at)
             for s in hist.steps]  # fmt: skip
    ops = [replace(o, accepted_at=earlier(o.accepted_at) or o.accepted_at,
                   enqueued_at=earlier(o.enqueued_at) or o.enqueued_at,
                   started_at=earlier(o.started_at) or o.started_at,
                   finished_at=earlier(o.finished_at) or o.finished_at)
           for o in hist.ops]  # fmt: skip
    paused = diagnosis_evidence.History(steps, ops)
    d = diagnose(diagnosis_evidence.healthy(paused))
    assert CauseKind.CLIENT_BOUND not in kinds(d), d.causes

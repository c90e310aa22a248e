"""Causes from OpenRL's own record: failed model and ops, lost and stuck ops, lost
workers, stalls; and the verdicts, with the meaning the summary gives them."""

from __future__ import annotations

from dataclasses import replace

from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.core.domain import CauseKind, OpHealth, OpStatus, Verdict
from openrl_inspect.resolvers.diagnosis import Cause, Diagnosis, StateEvidence, Unknown, diagnose
from support import diagnosis_evidence


def facts(cause: Cause) -> dict[str, object]:
    return {f.name: f.value for f in cause.facts}


def kinds(d: Diagnosis) -> list[CauseKind]:
    return [c.kind for c in d.causes]


def test_a_failed_model_says_why_and_where_to_read_logs() -> None:
    failed_at = diagnosis_evidence.NOW - 900
    evidence = diagnosis_evidence.with_state(
        diagnosis_evidence.healthy(),
        model=diagnosis_evidence.model(
            "failed",
            at=failed_at,
            failure_reason="trainer exited: CUDA error: an illegal memory access",
            latest_step=49,
        ),
    )
    d = diagnose(evidence)
    assert d.verdict == Verdict.FAILED
    (cause,) = d.causes
    assert cause.kind == CauseKind.MODEL_FAILED and cause.rank == 1
    assert cause.statement == (
        "Model failed 15m ago: trainer exited: CUDA error: an illegal memory access"
    )
    assert facts(cause) == {
        "failure_reason": "trainer exited: CUDA error: an illegal memory access",
        "failed_at": failed_at,
        "latest_step": 49,
    }
    logs = cause.next.logs
    assert logs is not None
    assert (logs.start, logs.end, logs.severity) == (failed_at - 600, failed_at + 120, "ERROR")
    assert set(logs.pods) == {
        ObjectKey("openrl", diagnosis_evidence.TRAINER_POD),
        ObjectKey("openrl", diagnosis_evidence.SAMPLER_POD),
    }
    assert logs.include_events


def test_failed_ops_quote_the_last_error() -> None:
    hist = diagnosis_evidence.history()
    bad = [
        replace(op, status=OpStatus.FAILED, error=f"RuntimeError: NCCL timeout on rank {i}")
        for i, op in enumerate(hist.ops[-9:-7])
    ]
    ops = [*hist.ops[:-9], *bad, *hist.ops[-7:]]
    d = diagnose(diagnosis_evidence.with_state(diagnosis_evidence.healthy(hist), ops=ops))
    assert d.verdict == Verdict.PROGRESSING  # failed ops do not change the verdict
    (cause,) = d.causes
    assert cause.kind == CauseKind.OP_FAILED
    f = facts(cause)
    assert f["failed_ops"] == 2 and f["last_op"] == bad[-1].id
    assert f["error"] == "RuntimeError: NCCL timeout on rank 1"
    assert (f["kind"], f["step"]) == (bad[-1].kind, bad[-1].step)
    assert "RuntimeError: NCCL timeout on rank 1" in cause.statement
    assert cause.refs[0] == f"op {bad[-1].id}"
    assert cause.next.graphql is not None and bad[-1].id in cause.next.graphql


def test_ops_lost_with_their_silent_worker() -> None:
    evidence = diagnosis_evidence.healthy()
    beat = diagnosis_evidence.NOW - 340
    dead = diagnosis_evidence.worker(beat=beat)
    op = diagnosis_evidence.open_op(
        "op-9", "forward_backward", 50, diagnosis_evidence.NOW - 400, diagnosis_evidence.TRAINER
    )
    evidence = diagnosis_evidence.with_state(
        evidence,
        open_ops=((op, OpHealth.LOST),),
        workers=(
            (dead, False),
            (diagnosis_evidence.worker(diagnosis_evidence.SAMPLER, "sampler"), True),
        ),
    )
    d = diagnose(evidence)
    assert d.verdict == Verdict.LOST_OPS
    assert kinds(d) == [CauseKind.WORKER_LOST, CauseKind.OPS_LOST]  # silent longest first
    lost_worker, lost_ops = d.causes
    assert (
        facts(lost_ops)["lost_ops"] == 1
        and facts(lost_ops)["workers"] == diagnosis_evidence.TRAINER
    )
    assert lost_ops.since == beat
    assert "stopped heartbeating, silent 5m40s" in lost_ops.statement
    wf = facts(lost_worker)
    assert (wf["worker"], wf["role"], wf["heartbeat_age_s"], wf["lost_ops"]) == (
        diagnosis_evidence.TRAINER,
        "trainer",
        340.0,
        1,
    )
    assert wf["node_ready"] == "Ready"
    assert lost_worker.refs == (
        f"worker {diagnosis_evidence.TRAINER}",
        f"Pod openrl/{diagnosis_evidence.TRAINER_POD}",
        "Node gpu-h100-1",
    )
    assert lost_worker.next.logs is not None
    assert lost_worker.next.logs.start == beat - 300


def test_a_worker_lost_on_a_node_gone_not_ready_says_so() -> None:
    evidence = diagnosis_evidence.with_kube(
        diagnosis_evidence.healthy(), nodes=(diagnosis_evidence.node_record(ready=False),)
    )
    evidence = diagnosis_evidence.with_state(
        evidence,
        workers=(
            (diagnosis_evidence.worker(beat=diagnosis_evidence.NOW - 120), False),
            (diagnosis_evidence.worker(diagnosis_evidence.SAMPLER, "sampler"), True),
        ),
    )
    d = diagnose(evidence)
    (cause,) = [c for c in d.causes if c.kind == CauseKind.WORKER_LOST]
    assert facts(cause)["node_ready"] == "NotReady"
    assert "(node NotReady)" in cause.statement


def test_a_stuck_op_on_a_live_worker() -> None:
    started = diagnosis_evidence.NOW - 1500
    op = diagnosis_evidence.open_op(
        "op-77", "forward_backward", 50, started, diagnosis_evidence.TRAINER
    )
    hist = diagnosis_evidence.history(end=diagnosis_evidence.NOW - 1510)
    d = diagnose(
        diagnosis_evidence.with_state(
            diagnosis_evidence.healthy(hist), open_ops=((op, OpHealth.STUCK),)
        )
    )
    assert d.verdict == Verdict.STUCK
    assert kinds(d) == [CauseKind.OP_STUCK, CauseKind.STALLED]
    stuck = d.causes[0]
    f = facts(stuck)
    assert (f["stuck_ops"], f["oldest_op"], f["running_s"], f["stuck_after_s"]) == (
        1,
        "op-77",
        1500.0,
        600.0,
    )
    assert stuck.statement.startswith("1 op(s) running past 10m on a live worker")
    assert stuck.next.logs is not None and stuck.next.logs.severity == "WARNING"


def test_stalled_when_no_step_for_far_longer_than_usual() -> None:
    hist = diagnosis_evidence.history(end=diagnosis_evidence.NOW - 1800)
    d = diagnose(diagnosis_evidence.healthy(hist))
    assert d.verdict == Verdict.STALLED
    (cause,) = d.causes
    assert cause.kind == CauseKind.STALLED
    f = facts(cause)
    assert f["last_step"] == 49 and f["since_last_step_s"] == 1800.0
    assert isinstance(f["median_step_s"], float) and 4 < f["median_step_s"] < 7
    assert cause.since == diagnosis_evidence.NOW - 1800


def test_not_stalled_just_under_the_limit() -> None:
    d = diagnose(
        diagnosis_evidence.healthy(diagnosis_evidence.history(end=diagnosis_evidence.NOW - 110))
    )
    assert d.verdict == Verdict.PROGRESSING and d.causes == ()


def test_active_without_a_finished_step_is_idle() -> None:
    evidence = diagnosis_evidence.with_state(diagnosis_evidence.healthy(), steps=(), ops=())
    assert diagnose(evidence).verdict == Verdict.IDLE


def test_ended_models_have_no_causes() -> None:
    evidence = diagnosis_evidence.with_state(
        diagnosis_evidence.healthy(),
        model=diagnosis_evidence.model("ended", at=diagnosis_evidence.NOW - 60),
    )
    d = diagnose(evidence)
    assert (d.verdict, d.causes) == (Verdict.ENDED, ())


def test_waiting_without_kubernetes_evidence_is_waiting_and_says_what_is_unknown() -> None:
    unknown = Unknown("kubernetes", "BACKEND_NOT_CONFIGURED", "Kubernetes is not configured")
    state = StateEvidence(
        model=diagnosis_evidence.model("waiting", at=diagnosis_evidence.NOW - 1903)
    )
    d = diagnose(diagnosis_evidence.healthy(state=state, kube=unknown))
    assert d.verdict == Verdict.WAITING
    assert d.causes == () and d.unknown == (unknown,)

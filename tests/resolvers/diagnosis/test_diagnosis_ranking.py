"""Ranking, the size budget, the lookups' queries against the schema, and a rule that
trips on its evidence spoiling only its own causes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import pytest
from graphql import parse, validate
from openrl_inspect.adapters.kubernetes import (
    ContainerState,
    DeviceTaint,
    ObjectKey,
    ObjectRef,
    Termination,
)
from openrl_inspect.core.domain import CauseKind, OpHealth, OpStatus, Verdict
from openrl_inspect.resolvers.diagnosis import (
    TOKEN_BUDGET,
    Diagnosis,
    DutyEvidence,
    ModelEvidence,
    SamplingEvidence,
    diagnose,
    engine,
    lookups,
    render,
    tokens,
)
from openrl_inspect.resolvers.diagnosis.causes import Finding
from support import diagnosis_evidence
from support.types import api_types

LONG = "CUDA error: an illegal memory access was encountered " * 200


def kinds(d: Diagnosis) -> list[CauseKind]:
    return [c.kind for c in d.causes]


def crash(at: float, reason: str = "Error") -> ContainerState:
    return ContainerState(
        name="trainer",
        state="waiting",
        reason="CrashLoopBackOff",
        message=LONG,
        restart_count=9,
        last_termination=Termination(
            reason=reason,
            exit_code=137 if reason == "OOMKilled" else 1,
            message=LONG,
            started_at=at - 30,
            finished_at=at,
        ),
    )


def everything_wrong() -> ModelEvidence:
    """The worst case: every family finds something, with long texts everywhere."""
    hist = diagnosis_evidence.history(slow={"forward_backward": 3.0}, slow_from=44)
    failed = [replace(o, status=OpStatus.FAILED, error=LONG) for o in hist.ops[-30:-20]]
    lost = [
        diagnosis_evidence.open_op(
            f"op-lost-{i}-{'x' * 200}",
            "forward_backward",
            50,
            diagnosis_evidence.NOW - 900,
            diagnosis_evidence.TRAINER,
        )
        for i in range(40)
    ]
    stuck = diagnosis_evidence.open_op(
        "op-stuck", "optim_step", 50, diagnosis_evidence.NOW - 2000, diagnosis_evidence.SAMPLER
    )
    pods = tuple(
        replace(
            diagnosis_evidence.pod(
                containers=[
                    crash(diagnosis_evidence.NOW - 60 * i, "OOMKilled" if i % 2 else "Error")
                ]
            ),
            name=f"lora-a-trainer-{i}-{'y' * 150}",
        )
        for i in range(30)
    )
    taint = DeviceTaint(
        "gpu.nvidia.com/xid" + "z" * 300, "NoExecute", LONG, diagnosis_evidence.NOW - 50
    )
    devices = tuple(replace(d, taints=(taint,)) for d in diagnosis_evidence.gpus())
    events = tuple(
        diagnosis_evidence.event(
            "OOMKilling",
            LONG,
            ObjectRef("Node", "", diagnosis_evidence.NODE),
            at=diagnosis_evidence.NOW - 60 * i,
            count=999,
        )
        for i in range(50)
    )
    sampling = SamplingEvidence(tuple(diagnosis_evidence.batches(40, slow_from=30, factor=4.0)))
    ev = diagnosis_evidence.healthy(hist, duty=DutyEvidence(600.0, {}), sampling=sampling)
    ev = diagnosis_evidence.with_state(
        ev,
        model=replace(ev.model, failure_reason=LONG),
        ops=[*hist.ops[:-30], *failed, *hist.ops[-20:]],
        open_ops=(*((o, OpHealth.LOST) for o in lost), (stuck, OpHealth.STUCK)),
        workers=(
            (diagnosis_evidence.worker(beat=diagnosis_evidence.NOW - 950), False),
            (diagnosis_evidence.worker(diagnosis_evidence.SAMPLER, "sampler"), True),
        ),
    )
    return diagnosis_evidence.with_kube(ev, pods=pods, gpus=devices, events=events)


def test_ranking_follows_the_blocking_order() -> None:
    d = diagnose(everything_wrong())
    assert d.verdict == Verdict.LOST_OPS
    tiers = [
        {CauseKind.OOM_KILLED, CauseKind.CRASH_LOOP, CauseKind.OP_FAILED},
        {CauseKind.WORKER_LOST, CauseKind.OPS_LOST, CauseKind.GPU_UNHEALTHY},
        {CauseKind.OP_STUCK},
    ]
    order = [next(i for i, tier in enumerate(tiers) if k in tier) for k in kinds(d)]
    assert order == sorted(order) and order[0] == 0
    assert [c.rank for c in d.causes] == list(range(1, len(d.causes) + 1))


def test_within_a_tier_the_longer_standing_cause_comes_first() -> None:
    older = replace(
        diagnosis_evidence.pod(containers=[crash(diagnosis_evidence.NOW - 900, "OOMKilled")]),
        name="trainer-old",
    )
    newer = replace(
        diagnosis_evidence.pod(containers=[crash(diagnosis_evidence.NOW - 60, "OOMKilled")]),
        name="trainer-new",
    )
    d = diagnose(diagnosis_evidence.with_kube(diagnosis_evidence.healthy(), pods=(newer, older)))
    assert [c.facts[0].value for c in d.causes] == ["trainer-old", "trainer-new"]


def test_the_worst_case_fits_the_budget() -> None:
    d = diagnose(everything_wrong())
    rendered = json.dumps(render(d), separators=(",", ":"), ensure_ascii=False)
    assert len(rendered) / 4 <= TOKEN_BUDGET and tokens(d) <= TOKEN_BUDGET
    assert 1 <= len(d.causes) <= 6 and d.left_off > 0
    assert len(d.causes) + d.left_off > 6  # more were found than fit, and they are counted
    for c in d.causes:
        assert len(c.statement) <= 160 and "\n" not in c.statement
        assert len(c.facts) <= 8 and len(c.refs) <= 6
        assert all(len(str(f.value)) <= 64 for f in c.facts)
        assert all(len(r) <= 80 for r in c.refs)
        assert len(c.next.pods) <= 4 and len(c.next.nodes) <= 3
    assert any(c.statement.endswith("…") for c in d.causes)


def test_every_emitted_query_is_valid_against_the_schema() -> None:
    schema = api_types()
    tricky = 'lora-"a"\\b\u00e9'
    queries = [
        lookups.summary_query(tricky),
        lookups.open_ops_query(tricky),
        lookups.op_query(tricky),
        lookups.worker_query(tricky),
        lookups.waiting_query(tricky),
        lookups.workloads_query(tricky),
        lookups.pod_query(ObjectKey("openrl", tricky)),
        lookups.node_query(tricky),
        lookups.gpu_query(tricky),
        lookups.steps_query(tricky),
        lookups.step_ops_query(tricky, 41),
        lookups.activity_query(tricky, 0.5),
        lookups.activity_query(tricky, 1e12),
        lookups.sampling_query(tricky),
    ]
    queries += [c.next.graphql for c in diagnose(everything_wrong()).causes if c.next.graphql]
    for query in queries:
        errors = validate(schema, parse(query))
        assert errors == [], (query, errors)
    assert json.dumps(tricky) in lookups.op_query(tricky)


def test_a_rule_that_trips_spoils_only_its_own_causes(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(evidence: ModelEvidence) -> Sequence[Finding]:
        raise TypeError("unexpected shape")

    monkeypatch.setattr(engine, "FAMILIES", (broken, *engine.FAMILIES))
    hist = diagnosis_evidence.history(end=diagnosis_evidence.NOW - 1800)
    d = diagnose(diagnosis_evidence.healthy(hist))
    assert kinds(d) == [CauseKind.STALLED] and d.verdict == Verdict.STALLED


@pytest.mark.parametrize(
    ("message", "fit", "total", "reasons"),
    [
        (
            "0/3 nodes are available: 1 node(s) had untolerated taint "
            "{node-role.kubernetes.io/control-plane: }, 2 Insufficient nvidia.com/gpu. "
            "preemption: 0/3 nodes are available: 1 Preemption is not helpful for "
            "scheduling, 2 No preemption victims found for incoming pod.",
            0,
            3,
            (
                ("Insufficient nvidia.com/gpu", 2),
                ("had untolerated taint {node-role.kubernetes.io/control-plane: }", 1),
            ),
        ),
        (
            "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            0,
            1,
            (("cannot allocate all claims", 1),),
        ),
        (
            "0/5 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
            "3 node(s) were unschedulable.",
            0,
            5,
            (("were unschedulable", 3), ("didn't match Pod's node affinity/selector", 2)),
        ),
    ],
)
def test_scheduler_messages_condense_into_node_counts(
    message: str, fit: int, total: int, reasons: tuple[tuple[str, int], ...]
) -> None:
    from openrl_inspect.resolvers.diagnosis.scheduling import condense

    got = condense(message)
    assert got is not None
    assert (got.fit, got.total, got.reasons) == (fit, total, reasons)


def test_a_plugin_error_is_not_condensed() -> None:
    from openrl_inspect.resolvers.diagnosis.scheduling import condense

    assert condense('running PreBind plugin "DynamicResources": claim not allocated') is None
    assert condense(None) is None

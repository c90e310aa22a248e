"""Realistic evidence for the diagnosis engine, as the backends would hand it over.

A model trains like OpenRL runs it (and as the simulator writes it): each step is a
``sample`` op on the sampler, two ``forward_backward`` and an ``optim_step`` on the
trainer, one after the other, with the client's short think time between ops and a
longer one between steps; every tenth step saves weights. Durations jitter the way
GPUs do (a few percent, the odd straggler). Workers heartbeat every few seconds; the
trainer pod holds eight H100s through a DRA claim; DCGM sees them busy; the sampler's
batches come out at a steady rate. Tests then break one thing at a time.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from openrl_inspect.adapters.kubernetes import (
    ContainerState,
    EventRecord,
    GpuDevice,
    NodeRecord,
    ObjectRef,
    PodRecord,
)
from openrl_inspect.adapters.kubernetes._dra import parse_slice
from openrl_inspect.adapters.kubernetes._json import parse_time
from openrl_inspect.adapters.kubernetes._pods import parse_node, parse_pod
from openrl_inspect.core.domain import OpStatus
from openrl_inspect.resolvers.diagnosis import (
    DutyEvidence,
    KubeEvidence,
    ModelEvidence,
    SamplingEvidence,
    StateEvidence,
    Thresholds,
    Unknown,
)
from openrl_inspect.state.decode import JsonField
from openrl_inspect.state.records import (
    ModelRecord,
    OpRecord,
    PlacementRecord,
    SamplerBatchRecord,
    StepRecord,
    WorkerRecord,
)

from support import kube_objects

NOW = parse_time("2026-01-05T10:00:00Z") or 0.0
MODEL = "lora-a"
NODE = "gpu-h100-1"
TRAINER_POD = "lora-a-trainer-0"
SAMPLER_POD = "lora-a-sampler-0"
TRAINER = "w-trainer-1"
SAMPLER = "w-sampler-1"
IMAGE = "ghcr.io/openrl/worker:1.4.2"
# kind -> (mean seconds, relative jitter)
DURATIONS = {
    "sample": (2.0, 0.08),
    "forward_backward": (1.2, 0.06),
    "optim_step": (0.3, 0.05),
    "save_weights": (4.0, 0.1),
}


def model(
    state: str = "active",
    *,
    at: float | None = None,
    created: float | None = None,
    failure_reason: str | None = None,
    latest_step: int | None = None,
) -> ModelRecord:
    created = NOW - 7200 if created is None else created
    at = created + 60 if at is None else at
    return ModelRecord(
        id=MODEL,
        session_id="sess-1",
        base_model="Qwen/Qwen3-8B",
        lora=JsonField.of({"rank": 32, "alpha": 64}),
        settings=JsonField.of({}),
        state=state,
        state_at=at,
        created_at=created,
        transitions={"waiting": created, state: at},
        failure_reason=failure_reason,
        latest_step=latest_step,
    )


@dataclass
class History:
    """Steps and ops, oldest first, written as the recorder would."""

    steps: list[StepRecord] = field(default_factory=list)
    ops: list[OpRecord] = field(default_factory=list)

    @property
    def last_finished(self) -> float:
        return max(s.finished_at or 0.0 for s in self.steps)


def _op(oid: str, kind: str, step: int, t: float, took: float, worker: str) -> OpRecord:
    return OpRecord(
        id=oid,
        model_id=MODEL,
        kind=kind,
        step=step,
        status=OpStatus.SUCCEEDED,
        accepted_at=t,
        enqueued_at=t + 0.004,
        started_at=t + 0.05,
        finished_at=t + 0.05 + took,
        worker_id=worker,
    )


def history(
    steps: int = 50,
    *,
    end: float = NOW - 2.0,
    seed: int = 11,
    slow: dict[str, float] | None = None,
    slow_from: int | None = None,
    think_s: float = 0.15,
    between_steps_s: float = 0.8,
    straggler_step: int | None = None,
) -> History:
    """``steps`` steps ending at ``end``. From step ``slow_from`` on, each kind in
    ``slow`` takes that factor longer; ``straggler_step`` takes 3x (one bad step)."""
    rng = random.Random(seed)
    plan: list[list[tuple[str, float, float]]] = []
    for n in range(steps):
        kinds = ["sample", "forward_backward", "forward_backward", "optim_step"]
        if n % 10 == 9:
            kinds.append("save_weights")
        ops = []
        for kind in kinds:
            mean, jitter = DURATIONS[kind]
            took = max(0.01, rng.gauss(mean, mean * jitter))
            if slow and slow_from is not None and n >= slow_from:
                took *= slow.get(kind, 1.0)
            if n == straggler_step:
                took *= 3
            ops.append((kind, took, think_s * rng.uniform(0.5, 1.5)))
        plan.append(ops)
    t = 0.0
    out = History()
    for n, ops in enumerate(plan):
        t += between_steps_s * rng.uniform(0.7, 1.3)
        started = t
        for i, (kind, took, gap) in enumerate(ops):
            worker = SAMPLER if kind == "sample" else TRAINER
            op = _op(f"op-{n:04d}-{i}", kind, n, t, took, worker)
            out.ops.append(op)
            t = (op.finished_at or t) + gap
        out.steps.append(
            StepRecord(MODEL, n, started, t - ops[-1][2], JsonField.of({"loss": 0.5}), len(ops))
        )
    return _shifted(out, end - out.last_finished)


def _shifted(h: History, by: float) -> History:
    """``h`` moved in time by ``by`` seconds (so that it ends where asked)."""

    def move(at: float | None) -> float | None:
        return None if at is None else at + by

    return History(
        steps=[
            replace(s, started_at=move(s.started_at), finished_at=move(s.finished_at))
            for s in h.steps
        ],
        ops=[
            replace(
                o,
                accepted_at=move(o.accepted_at),
                enqueued_at=move(o.enqueued_at),
                started_at=move(o.started_at),
                finished_at=move(o.finished_at),
            )
            for o in h.ops
        ],
    )


def worker(wid: str = TRAINER, role: str = "trainer", *, beat: float = NOW - 3.0) -> WorkerRecord:
    pod = TRAINER_POD if role == "trainer" else SAMPLER_POD
    gpus = [kube_objects.gpu_uuid(NODE, i) for i in range(8)] if role == "trainer" else []
    return WorkerRecord(
        id=wid,
        role=role,
        pod=pod,
        node=NODE,
        model_id=MODEL,
        gpu_ids=gpus,
        started_at=NOW - 7000,
        last_heartbeat_at=beat,
        payload=JsonField.of({"gpu_mem_used": 0.71}),
    )


def placement(*, admitted: float = NOW - 7100) -> PlacementRecord:
    return PlacementRecord(
        id="pl-1",
        model_id=MODEL,
        workload="job-lora-a-trainer-8d1e4",
        namespace=kube_objects.NAMESPACE,
        pods=[TRAINER_POD, SAMPLER_POD],
        node=NODE,
        gpu_ids=[kube_objects.gpu_uuid(NODE, i) for i in range(8)],
        admitted_at=admitted,
        released_at=None,
    )


def running_container(name: str = "trainer", **kw: Any) -> ContainerState:
    base = ContainerState(
        name=name,
        state="running",
        ready=True,
        restart_count=0,
        started_at=NOW - 7000,
        image=IMAGE,
    )
    return replace(base, **kw)


def pod(
    name: str = TRAINER_POD, role: str = "trainer", *, containers: Sequence[ContainerState] = ()
) -> PodRecord:
    obj = kube_objects.pod(
        name,
        model_id=MODEL,
        role=role,
        node_name=NODE,
        claim_name=f"{name}-gpus-x7k2p" if role == "trainer" else None,
        claim_template="h100x8" if role == "trainer" else None,
        conditions=[
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": kube_objects.CREATED},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-05T08:05:00Z"},
        ],
    )
    rec = parse_pod(obj)
    assert rec is not None
    return replace(rec, containers=tuple(containers) or (running_container(role),))


def gpus(node: str = NODE) -> list[GpuDevice]:
    rec = parse_slice(kube_objects.h100_slice(node))
    assert rec is not None
    return list(rec.devices)


def node_record(name: str = NODE, *, ready: bool = True) -> NodeRecord:
    rec = parse_node(kube_objects.node(name, ready=ready))
    assert rec is not None
    return rec


def event(
    reason: str,
    note: str,
    regarding: ObjectRef,
    *,
    at: float,
    count: int = 1,
    type_: str = "Warning",
    controller: str = "kubelet",
) -> EventRecord:
    return EventRecord(
        namespace=regarding.namespace or "default",
        name=f"{regarding.name}.{int(at * 1000):x}",
        uid=f"uid-ev-{reason}-{int(at)}",
        type=type_,
        reason=reason,
        note=note,
        action=None,
        regarding=regarding,
        related=None,
        reporting_controller=controller,
        count=count,
        first_at=at - 60 * (count - 1),
        last_at=at,
    )


def batches(
    n: int = 40, *, seed: int = 5, slow_from: int | None = None, factor: float = 1.0
) -> list[SamplerBatchRecord]:
    """Sampler batches every ~5 s: 64 prompts, ~24k tokens generated in ~2 s."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        latency = rng.gauss(2.0, 0.12)
        if slow_from is not None and i >= slow_from:
            latency *= factor
        entry = {
            "t": NOW - 5.0 * (n - i),
            "id": f"b-{i}",
            "worker": SAMPLER,
            "op_id": f"op-s-{i}",
            "batch_size": 64,
            "prompt_tokens": 64 * 512,
            "generated_tokens": int(rng.gauss(24000, 900)),
            "latency_s": latency,
            "queue_depth": rng.randint(0, 2),
        }
        out.append(SamplerBatchRecord.from_json(MODEL, entry))
    return out


def healthy(
    hist: History | None = None,
    *,
    state: StateEvidence | None = None,
    kube: KubeEvidence | Unknown | None = None,
    duty: DutyEvidence | Unknown | None = None,
    sampling: SamplingEvidence | Unknown | None = None,
    thresholds: Thresholds | None = None,
    now: float = NOW,
) -> ModelEvidence:
    """A healthy active model; pass a part to replace it."""
    hist = hist or history()
    devices = gpus()
    state = state or StateEvidence(
        model=model(latest_step=hist.steps[-1].step if hist.steps else None),
        steps=hist.steps[-50:],
        ops=hist.ops,
        open_ops=(),
        workers=((worker(), True), (worker(SAMPLER, "sampler"), True)),
        placements=(placement(),),
    )
    default_kube = KubeEvidence(
        pods=(pod(), pod(SAMPLER_POD, "sampler")),
        nodes=(node_record(),),
        gpus=tuple(devices),
    )
    default_duty = DutyEvidence(
        600.0, {d.uuid or "": 0.82 + 0.01 * i for i, d in enumerate(devices)}
    )
    return ModelEvidence(
        now=now,
        state=state,
        kube=default_kube if kube is None else kube,
        duty=default_duty if duty is None else duty,
        sampling=SamplingEvidence(tuple(batches())) if sampling is None else sampling,
        thresholds=thresholds or Thresholds(),
    )


def with_state(evidence: ModelEvidence, **changes: Any) -> ModelEvidence:
    return replace(evidence, state=replace(evidence.state, **changes))


def with_kube(evidence: ModelEvidence, **changes: Any) -> ModelEvidence:
    assert isinstance(evidence.kube, KubeEvidence)
    return replace(evidence, kube=replace(evidence.kube, **changes))


def open_op(
    oid: str, kind: str, step: int, started: float | None, worker_id: str | None
) -> OpRecord:
    return OpRecord(
        id=oid,
        model_id=MODEL,
        kind=kind,
        step=step,
        status=OpStatus.RUNNING if started is not None else OpStatus.QUEUED,
        accepted_at=(started or NOW) - 0.2,
        enqueued_at=(started or NOW) - 0.1,
        started_at=started,
        finished_at=None,
        worker_id=worker_id,
    )

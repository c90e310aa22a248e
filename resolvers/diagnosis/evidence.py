"""What the engine judges from: one frozen record per backend, gathered by the caller.

Every backend but Redis may be missing: its slot then holds an ``Unknown`` (not
configured, unavailable, timed out), and the causes that need it are left out and
said to be unknown rather than guessed. Sequences are the caller's bounded windows;
the engine never fetches more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from openrl_inspect.adapters.kubernetes import (
    ClaimRecord,
    EventRecord,
    GpuDevice,
    NodeRecord,
    PodRecord,
    WorkloadRecord,
)
from openrl_inspect.core.domain import TERMINAL_STATES, OpHealth
from openrl_inspect.resolvers.cluster.wait_reasons import WaitReason
from openrl_inspect.state.records import (
    ModelRecord,
    OpRecord,
    PlacementRecord,
    SamplerBatchRecord,
    StepRecord,
    WorkerRecord,
)


@dataclass(frozen=True, slots=True)
class Unknown:
    """A backend whose evidence is missing: ``code`` is the error code the API uses
    (BACKEND_NOT_CONFIGURED, BACKEND_UNAVAILABLE, BACKEND_TIMEOUT, ...)."""

    backend: str
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class StateEvidence:
    """OpenRL's own record of the model (Redis).

    ``steps`` is the recent window, oldest first (the open step may be last); ``ops``
    the ops of those steps; ``open_ops`` the open ops with their health;
    ``workers`` every worker that served the model with whether it still heartbeats;
    ``placements`` newest first.
    """

    model: ModelRecord
    steps: Sequence[StepRecord] = ()
    ops: Sequence[OpRecord] = ()
    open_ops: Sequence[tuple[OpRecord, OpHealth]] = ()
    workers: Sequence[tuple[WorkerRecord, bool]] = ()
    placements: Sequence[PlacementRecord] = ()


@dataclass(frozen=True, slots=True)
class KubeEvidence:
    """Live Kubernetes objects of the model (by its ``openrl.ai/model-id`` label).

    ``events`` regard those objects or their nodes; ``nodes`` are the nodes its pods
    run on; ``gpus`` the DRA devices allocated to its claims; ``wait_reasons`` is
    ``why_waiting``'s ranked answer (empty unless the model waits or is placed).

    What outlives the pods, from the placements Redis recorded: ``events`` also hold
    the Events about its recorded pods and Workloads that are gone and the nodes they
    ran on (the watch cache for the API server's TTL, then Cloud Logging's events log);
    ``placement_nodes`` are those nodes as they are now, ``nodes_gone`` the recorded
    nodes the cluster no longer has, ``placement_gpus`` the recorded GPUs (by UUID)
    with their taints; ``gone_pods`` the recorded pods Kubernetes no longer has.
    """

    workloads: Sequence[WorkloadRecord] = ()
    pods: Sequence[PodRecord] = ()
    claims: Sequence[ClaimRecord] = ()
    events: Sequence[EventRecord] = ()
    nodes: Sequence[NodeRecord] = ()
    gpus: Sequence[GpuDevice] = ()
    wait_reasons: Sequence[WaitReason] = ()
    placement_nodes: Sequence[NodeRecord] = ()
    nodes_gone: Sequence[str] = ()
    placement_gpus: Sequence[GpuDevice] = ()
    gone_pods: Sequence[tuple[str, str]] = ()


@dataclass(frozen=True, slots=True)
class DutyEvidence:
    """DCGM duty (0..1) per GPU UUID, the mean over the last ``window_s`` seconds;
    ``None`` for a GPU without samples in the window."""

    window_s: float
    by_uuid: Mapping[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SamplingEvidence:
    """The model's recent sampler batches, oldest first (bounded by the caller)."""

    batches: Sequence[SamplerBatchRecord] = ()


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When evidence becomes a cause. The defaults are meant for real clusters.

    Ops and workers:
      ``stuck_after_s`` (600) and ``heartbeat_timeout_s`` (30) are the limits the op
      health was judged with (``Limits.stuck_after_s`` / ``heartbeat_stale_s``),
      quoted in statements.
    Stalls: no finished step for longer than ``stall_factor`` (10) median steps and
      at least ``stall_min_s`` (120 s), as the summary's verdict judges it.
    Containers and events: a termination or event counts when it happened within
      ``recent_s`` (1800 s) of now (of the failure, for a failed model);
      ``crash_restarts`` (3) restarts in that window are a crash loop.
    Idle reservation: GPUs held for at least ``idle_min_s`` (600 s) whose mean duty
      over the duty window is below ``idle_duty`` (0.05) while no op ran in it.
    Slow: the median of the last ``recent_samples`` (5) measurements against the
      median of the earlier ones (at least ``baseline_min_samples``, 8): slower by
      ``slow_factor`` (1.5x) and by at least ``min_slowdown_s`` (0.25 s) for times.
      One slow step among many moves neither median; a model without that much
      history has no baseline, hence no slow cause.
    Client-bound: over the last ``client_min_steps`` (3) or more finished steps, the
      time no op of the model was accepted, queued or running is at least
      ``client_share`` (0.5) of the wall time.
    """

    stuck_after_s: float = 600.0
    heartbeat_timeout_s: float = 30.0
    stall_factor: float = 10.0
    stall_min_s: float = 120.0
    recent_s: float = 1800.0
    crash_restarts: int = 3
    idle_duty: float = 0.05
    idle_min_s: float = 600.0
    slow_factor: float = 1.5
    min_slowdown_s: float = 0.25
    recent_samples: int = 5
    baseline_min_samples: int = 8
    client_share: float = 0.5
    client_min_steps: int = 3


@dataclass(frozen=True, slots=True)
class ModelEvidence:
    now: float
    state: StateEvidence
    kube: KubeEvidence | Unknown = field(default_factory=KubeEvidence)
    duty: DutyEvidence | Unknown = field(default_factory=lambda: DutyEvidence(600.0))
    sampling: SamplingEvidence | Unknown = field(default_factory=SamplingEvidence)
    thresholds: Thresholds = field(default_factory=Thresholds)
    # Cloud Logging's events log, when the model's past needed it and it could not be
    # read (its other evidence stands; only what is older than the watch cache is missing).
    events_log: Unknown | None = None

    @property
    def model(self) -> ModelRecord:
        return self.state.model

    @property
    def anchor(self) -> float:
        """The time causes are judged recent against: now, or the moment a failed or
        ended model stopped (its causes happened then, however long ago that was)."""
        model = self.state.model
        if model.state in TERMINAL_STATES and model.state_at is not None:
            return min(model.state_at, self.now)
        return self.now

    def recent(self, at: float | None) -> bool:
        """Whether ``at`` lies within ``recent_s`` before the anchor (or after it)."""
        return at is not None and at >= self.anchor - self.thresholds.recent_s

    @property
    def unknown(self) -> tuple[Unknown, ...]:
        parts = (self.kube, self.duty, self.sampling, self.events_log)
        return tuple(e for e in parts if isinstance(e, Unknown))

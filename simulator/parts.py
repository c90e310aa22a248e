"""What the simulation is made of: its configuration, the shapes a staged model's steps
take, its models and their ops, the live hooks, and the usual op timings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from openrl_inspect.core.domain import ModelState

# kind -> (mean, spread) of its execution time in seconds
DURATIONS = {
    "sample": (2.0, 0.5),
    "forward": (0.6, 0.1),
    "forward_backward": (1.2, 0.25),
    "optim_step": (0.3, 0.05),
    "save_weights": (4.0, 1.0),
}
HEARTBEAT_EVERY_S = 5.0
# Live arrivals wait while fewer whole GPUs than this are free (besides the new model's
# own): the demo's capacity stays mixed, held and free, however long it runs.
FREE_RESERVE_GPUS = 8


@dataclass(frozen=True)
class SimConfig:
    seed: int = 7
    sessions: int = 3
    models_per_session: int = 3
    steps_per_model: int = 12
    ops_per_step: int = 4
    gpus_per_model: int = 2
    nodes_per_pool: tuple[tuple[str, int], ...] = (("h100", 4), ("h200", 2))
    # Stage a model per cause the diagnosis knows, and healthy ones (simulator.scenarios).
    scenarios: bool = True
    # Live mode: a new model every this many seconds on average, while there is room.
    new_model_every_s: float = 20.0


@dataclass
class Periodic:
    """A live hook a scenario registers (``Simulation.every``): ``run(now)`` every
    ``period_s`` of simulated time, first at ``due``."""

    period_s: float
    run: Callable[[float], None]
    due: float = 0.0


@dataclass(frozen=True)
class StepShape:
    """How a staged model's steps differ from the usual: ``scale`` multiplies an op
    kind's time; ``queue_s`` is added to every op's wait in the queue; ``pause_after``
    is the client's think time after an op of that kind, ``pause_between_s`` after each
    step; the sampler generates ``sampler_rate`` times its usual tokens per second;
    ``save_every`` adds a ``save_weights`` op to every that many steps."""

    scale: Mapping[str, float] = field(default_factory=dict)
    queue_s: float = 0.0
    pause_after: Mapping[str, float] = field(default_factory=dict)
    pause_between_s: float = 0.0
    sampler_rate: float = 1.0
    save_every: int = 0


@dataclass
class SimOp:
    id: str
    kind: str
    step: int


@dataclass
class SimModel:
    id: str
    session_id: str
    state: str = ModelState.WAITING
    step: int = 0
    cycle: int = 0
    workers: list[tuple[str, str, str, list[str]]] = field(default_factory=list)
    placement_id: str | None = None
    current: SimOp | None = None
    phase: str = "idle"  # idle -> queued -> running -> idle
    running_since: float = 0.0
    next_at: float = 0.0
    end_after_steps: int = 0
    saved: bool = False  # this step's checkpoint is written
    live: bool = True  # advanced by ``advance``; staged scenarios are not
    heartbeats: bool = True  # its workers keep heartbeating in live mode
    silent: set[str] = field(default_factory=set)  # its workers that never heartbeat again
    # Live: the first forward_backward of every ``fail_every``-th step fails with
    # ``fail_error`` (a staged model whose failures keep recurring).
    fail_every: int = 0
    fail_error: str = ""
    # When it was created, placed and activated (read by the Kubernetes twin).
    created_at: float = 0.0
    placed_at: float | None = None
    active_at: float | None = None

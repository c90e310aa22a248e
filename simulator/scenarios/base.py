"""What every scenario family uses: a model of its own, steps run up to a moment, the
scenario pool of nodes, and how a model loses its GPUs to Kueue."""

from __future__ import annotations

import random

from openrl_inspect.core.domain import ModelState
from openrl_inspect.simulator.cluster import Node
from openrl_inspect.simulator.kube_staging import KubeStage
from openrl_inspect.simulator.sim import DURATIONS, SimModel, Simulation, StepShape

# Nodes the scenarios add, so that every staged model holding GPUs finds them whatever
# the ordinary models took: (pool, count).
SCENARIO_NODES = ("h100", 4)
QUEUE_S = 0.13  # the mean wait in the queue and the client's turn-around per op
BEFORE_NOW_S = 30.0  # how long before now a "running" model's last step finished


def staged(sim: Simulation, sid: str, name: str, created: float) -> SimModel:
    """A model of its own for scenario ``name``, advanced only by its scenario."""
    model = sim.create_model(sid, created, live=False)
    sim.scenario_ids[name] = model.id
    return model


def go_on(model: SimModel, last_step_end: float, fail_every: int = 0, error: str = "") -> None:
    """From where its history ends, the model goes on like an ordinary one in the
    demo's live part, for ever (a pause there would read as waiting on the client);
    ``fail_every``/``error``: a failure that keeps recurring (``SimModel.fail_every``)."""
    model.live = True
    model.next_at = last_step_end + 0.05
    model.end_after_steps = 1 << 30
    model.fail_every, model.fail_error = fail_every, error


def stage_kube(sim: Simulation, model: SimModel, stage: KubeStage) -> None:
    """What the Kubernetes twin shows of the model beyond the usual (``kube_staging``)."""
    sim.kube_stages[model.id] = stage


def worker_ids(model: SimModel) -> tuple[str, str]:
    """The trainer's and the sampler's worker ids, as ``Simulation.place`` names them."""
    return f"trainer-{model.id}", f"sampler-{model.id}"


def run(
    sim: Simulation, model: SimModel, start: float, steps: int, shape: StepShape | None = None
) -> float:
    """Place and activate the model at ``start``, then run ``steps`` steps; returns when
    the last one finished."""
    if not sim.place(model, start):
        raise RuntimeError(f"no room for scenario model {model.id}")
    sim.activate(model, start + 5)
    t = start + 5
    for _ in range(steps):
        t = sim.run_step(model, t, shape)
    return t


def step_s(sim: Simulation, shape: StepShape | None = None) -> float:
    """About how long a step of that shape takes, for planning when to start."""
    shape = shape or StepShape()
    total = shape.pause_between_s
    for kind in sim.kinds(0):
        mean = DURATIONS[kind][0] * shape.scale.get(kind, 1.0)
        total += mean + QUEUE_S + shape.queue_s + shape.pause_after.get(kind, 0.0)
    if shape.save_every:
        total += DURATIONS["save_weights"][0] / shape.save_every
    return total


def run_until(
    sim: Simulation,
    model: SimModel,
    end: float,
    steps: int,
    shape: StepShape | None = None,
    slow_last: tuple[int, StepShape] | None = None,
) -> float:
    """Run ``steps`` steps finishing about ``end``: the last ``slow_last[0]`` of them
    shaped by ``slow_last[1]``, the rest by ``shape``."""
    slow_n, slow = slow_last or (0, StepShape())
    start = end - (steps - slow_n) * step_s(sim, shape) - slow_n * step_s(sim, slow) - 5
    t = run(sim, model, start, steps - slow_n, shape)
    for _ in range(slow_n):
        t = sim.run_step(model, t, slow)
    return t


def add_nodes(sim: Simulation) -> None:
    """The scenario pool: more 8-GPU nodes, their GPU UUIDs drawn from a stream of their
    own so that the simulation's other draws stay as they were."""
    pool, count = SCENARIO_NODES
    sim.cluster.add_nodes(pool, count, random.Random(f"scenario-nodes-{sim.config.seed}"))


def requeue(sim: Simulation, model: SimModel, at: float) -> None:
    """Kueue took the model's GPUs away (evicted or preempted): OpenRL records it
    waiting again and its placement released; its workers are gone."""
    sim.rec.model_state(model.id, ModelState.WAITING, at=at)
    if model.placement_id:
        sim.rec.placement_released(model.id, model.placement_id, at=at)
    sim.cluster.release(model.id)
    model.state = ModelState.WAITING
    model.silent |= {w[0] for w in model.workers}


def hold(sim: Simulation, model: SimModel, at: float, silent: tuple[str, ...] = ()) -> None:
    """Admitted and placed, its workers not all up: ``silent`` roles never heartbeat."""
    trainer, sampler = worker_ids(model)
    model.silent |= {trainer if r == "trainer" else sampler for r in silent}
    if not sim.place(model, at):
        raise RuntimeError(f"no room for scenario model {model.id}")


def node_of(sim: Simulation, model: SimModel) -> Node:
    name = sim.node_of(model)
    return next(n for n in sim.cluster.nodes if n.name == name)

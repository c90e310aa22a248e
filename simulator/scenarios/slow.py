"""Scenarios of models that run, but slower than they should, and models that are fine.

Each slow model runs twenty steps (the summary's window) ending just before now, the
last few of them shaped (``StepShape``) so that the recent medians clear the
diagnosis thresholds (``Thresholds``: 1.5x and 0.25 s over at least eight earlier
samples, the last five judged) with a wide margin:

- ``trainer_slow``: ``forward_backward`` 2.5x slower over the last five steps (its
  steps slow with it: a pace regression too, ranked after the cause);
- ``sampler_slow``: the sampler generates at 40 % of its rate over the last four
  steps, its ``sample`` ops 2.5x longer;
- ``client_bound``: every step the client thinks 8 s after ``sample`` and 6 s between
  steps: the workers idle about 70 % of the time;
- ``pace_regression``: every op of the last six steps waits 3 s more in the queue (a
  shared worker); no kind runs slower, the steps do.

A slow model is judged against its own last twenty steps, so a slowdown that goes on
becomes its new normal within a few steps, and a model left where its history ends
reads as stalled within minutes. The live demo therefore stages the slow four again
every ``RESTAGE_S`` (``restage``): the last ones end, and four new ones, in a session
of their own, show each slowdown as it is first seen.

The healthy ones hold GPUs and run as the ordinary models do, and go on running live
in the demo: ``healthy_trainer`` (plain steps), ``healthy_sampler_heavy`` (``sample``
three times as long at the usual tokens per second, from the start) and
``healthy_checkpointing`` (a ``save_weights`` op every fifth step).
"""

from __future__ import annotations

from openrl_inspect.core.domain import ModelState
from openrl_inspect.simulator.scenarios.base import BEFORE_NOW_S, go_on, run_until, staged
from openrl_inspect.simulator.sim import Simulation, StepShape

STEPS = 20
TRAINER_SLOW = StepShape(scale={"forward_backward": 2.5})
SAMPLER_SLOW = StepShape(scale={"sample": 2.5}, sampler_rate=0.4)
CLIENT_BOUND = StepShape(pause_after={"sample": 8.0}, pause_between_s=6.0)
QUEUED = StepShape(queue_s=3.0)
SAMPLER_HEAVY = StepShape(scale={"sample": 3.0})
CHECKPOINTING = StepShape(save_every=5)
SLOW: tuple[tuple[str, StepShape | None, tuple[int, StepShape] | None], ...] = (
    ("trainer_slow", None, (5, TRAINER_SLOW)),
    ("sampler_slow", None, (4, SAMPLER_SLOW)),
    ("client_bound", CLIENT_BOUND, None),
    ("pace_regression", None, (6, QUEUED)),
)
# Shorter than the quickest of them takes to read as stalled (about 150 s).
RESTAGE_S = 60.0


def _slow(sim: Simulation, sid: str, now: float) -> None:
    end = now - BEFORE_NOW_S
    for name, shape, slow in SLOW:
        model = staged(sim, sid, name, now - 1500)
        run_until(sim, model, end, STEPS, shape, slow)
        sim.heartbeat(model, now)


def _healthy(sim: Simulation, sid: str, now: float) -> None:
    for name, shape in (
        ("healthy_trainer", None),
        ("healthy_sampler_heavy", SAMPLER_HEAVY),
        ("healthy_checkpointing", CHECKPOINTING),
    ):
        model = staged(sim, sid, name, now - 1500)
        t = run_until(sim, model, now - BEFORE_NOW_S, STEPS, shape)
        sim.heartbeat(model, now)
        go_on(model, t)


def restage(sim: Simulation, now: float) -> None:
    """End the slow four and stage four new ones whose history ends at ``now``. Their
    GPUs come back first, so the new ones always find room."""
    for name, _, _ in SLOW:
        sim.finish(sim.models[sim.scenario_ids[name]], ModelState.ENDED, now)
    _slow(sim, sim.open_session(now - 1500, owner="scenarios-slow"), now)


def stage(sim: Simulation, sid: str, now: float) -> None:
    _slow(sim, sid, now)
    _healthy(sim, sid, now)
    sim.every(RESTAGE_S, lambda at: restage(sim, at))

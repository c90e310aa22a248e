"""A simulated world at a moment: its history written, its scenarios staged, then live."""

from __future__ import annotations

from openrl_inspect.simulator import scenarios
from openrl_inspect.simulator.sim import Simulation


def populate(sim: Simulation, now: float) -> None:
    """Write a finished-looking history ending at ``now``, stage the scenarios the
    configuration asks for, and leave the simulation live from ``now``."""
    sim.write_history(now)
    if sim.config.scenarios:
        scenarios.stage_all(sim, now)
    sim.go_live(now)

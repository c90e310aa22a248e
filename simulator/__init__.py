"""A deterministic, seeded simulation of an OpenRL cluster that drives the recorder."""

from openrl_inspect.simulator.sim import SimConfig, Simulation
from openrl_inspect.simulator.world import populate

__all__ = ["SimConfig", "Simulation", "populate"]

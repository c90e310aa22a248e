"""A deterministic, seeded simulation of an OpenRL cluster that drives the recorder."""

from openrl_inspect.simulator.sim import SimConfig, Simulation

__all__ = ["SimConfig", "Simulation"]

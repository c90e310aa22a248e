"""The plan executor (``Switches.execution = "plan"``, the default): see ``executor``."""

from openrl_inspect.execution.plan.executor import PlanExecutor, PlanStats, executor_class

__all__ = ["PlanExecutor", "PlanStats", "executor_class"]

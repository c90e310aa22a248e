"""The fast execution path (``Limits.execution = "fast"``): see ``executor``."""

from openrl_inspect.execution.fast.executor import ExecutionStats, FastExecutor, executor_class

__all__ = ["ExecutionStats", "FastExecutor", "executor_class"]

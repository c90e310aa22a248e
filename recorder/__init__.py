"""The writing side: telemetry that OpenRL's API server, trainers and samplers record."""

from openrl_inspect.recorder.recorder import (
    AsyncRecorder,
    Recorder,
    RecorderBase,
    RecorderSettings,
    RecorderStats,
    WorkerInfo,
)
from openrl_inspect.recorder.writes import Retention

__all__ = [
    "AsyncRecorder",
    "Recorder",
    "RecorderBase",
    "RecorderSettings",
    "RecorderStats",
    "Retention",
    "WorkerInfo",
]

"""The recorder's core: everything the sync and asyncio recorders share.

``RecorderBase`` combines the parts, one concept each: the buffer, drop policy and exact
counters (``recorder.buffer``), the record methods (``recorder.record_calls``), the
status writes (``recorder.status``) and the I/O-free steps of a flush: taking a batch,
compiling it, settling its outcome (``recorder.batches``). The flushers that do the I/O
are in ``recorder.recorder``, whose docstring describes the design and the drop policy.
"""

from __future__ import annotations

from openrl_inspect.recorder.batches import BatchFlow
from openrl_inspect.recorder.buffer import (
    DROP_REASONS,
    LOW_VALUE,
    Outcome,
    Record,
    Sent,
    Write,
    _Pending,
    log,
)
from openrl_inspect.recorder.config import RecorderSettings, RecorderStats, WorkerInfo
from openrl_inspect.recorder.record_calls import RecordCalls

__all__ = [
    "DROP_REASONS",
    "LOW_VALUE",
    "Outcome",
    "Record",
    "RecorderBase",
    "RecorderSettings",
    "RecorderStats",
    "Sent",
    "WorkerInfo",
    "Write",
    "_Pending",
    "log",
]


class RecorderBase(RecordCalls, BatchFlow):
    """Record methods (each an append that never blocks or raises) and the accounting."""

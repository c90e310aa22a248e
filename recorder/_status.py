"""Status writes sent with the pipelines: schema version, the counters, the heartbeat.

``Status`` knows when each is due, builds their commands with a pipeline, and is told
which of them a successful pipeline carried.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from openrl_inspect.recorder import _writes as writes
from openrl_inspect.recorder._batch import Batch, Command
from openrl_inspect.recorder._buffer import Buffer
from openrl_inspect.recorder._config import RecorderSettings, Retention, WorkerInfo
from openrl_inspect.recorder._scripts import DECLARE_SCHEMA
from openrl_inspect.state import keys
from openrl_inspect.state.records import encode

Sent = tuple[bool, bool]  # a pipeline carried (the heartbeat, the counters)


def schema_version() -> Command:
    # NX: a writer must never downgrade what a newer writer declared. The first writer of
    # a fresh store declares the model indexes complete too (no data can predate them).
    # EVAL, not EVALSHA: sent once per recorder and short, it never meets NOSCRIPT.
    return (
        "EVAL",
        DECLARE_SCHEMA,
        2,
        keys.SCHEMA_VERSION_KEY,
        keys.INDEXES_KEY,
        str(keys.SCHEMA_VERSION),
        str(keys.INDEXES_VERSION),
    )


def recorder_counters(b: Batch, rid: str, fields: Mapping[str, Any], at: float) -> None:
    ttl = int(b.r.recorder_ttl_s)
    b.hset(keys.recorder(rid), encode({**fields, "id": rid, "updated_at": at}))
    b.expire(keys.recorder(rid), ttl)
    b.zadd(keys.RECORDERS, rid, at)
    b.trim_score(keys.RECORDERS, at - b.r.recorder_ttl_s)


@dataclass
class WorkerState:
    """What the worker's heartbeat reports besides the counters: the op it runs (kept by
    the flow as it takes records) and the ``set_status`` fields."""

    current: tuple[str, str] | None = None  # (model, op) this worker runs
    fields: dict[str, Any] = field(default_factory=dict)  # ``set_status``


class Status:
    """When the counters and the heartbeat are due, and the commands that send them."""

    def __init__(
        self,
        settings: RecorderSettings,
        retention: Retention,
        buffer: Buffer,
        recorder_id: str,
        worker: WorkerInfo | None,
        clock: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.retention = retention
        self.buffer = buffer
        self.recorder_id = recorder_id
        self.worker = worker
        self.state = WorkerState()
        self._clock = clock
        self.schema_done = False
        self.last_heartbeat = -float("inf")
        self.counters_at = -float("inf")
        self.published: tuple[int, ...] | None = None

    def counters_due(self) -> bool:
        return self.settings.publish_counters and (
            self.buffer.closed
            or time.monotonic() - self.counters_at >= self.settings.counters_every_s
        )

    def heartbeat_due(self) -> bool:
        return (
            self.worker is not None
            and time.monotonic() - self.last_heartbeat >= self.settings.heartbeat_every_s
        )

    def due(self) -> bool:
        """A status-only pipeline is worth sending: a heartbeat is due or counters moved."""
        if not self.schema_done:
            return self.buffer.taken > 0 or self.worker is not None
        if self.heartbeat_due():
            return True
        return self.counters_due() and self.buffer.snapshot() != self.published

    def commands(self, riding: int) -> tuple[list[Command], Sent]:
        """Schema version, counters and heartbeat to send with a pipeline, each when due.

        ``riding``: the records the pipeline carries; the counters sent are those its
        success makes true.
        """
        b = Batch(self.retention)
        heartbeat = self.heartbeat_due()
        publish = self.counters_due()
        if publish or heartbeat:
            buf = self.buffer
            with buf.lock:
                st = buf.stats_locked(self.recorder_id)
                fields = dict(self.state.fields)
            counters = {
                "recorded": st.recorded,
                "written": st.written + riding,
                "dropped": st.dropped,
                "pending": st.pending - riding,
                "retried": st.retried,
            }
            at = self._clock()
            if publish:
                published: dict[str, Any] = {
                    **counters,
                    "batches": st.batches + (1 if riding else 0),
                    "failed_attempts": st.failed_attempts,
                    "pid": os.getpid(),
                    "worker_id": self.worker.id if self.worker is not None else None,
                }
                for reason, n in st.dropped_by_reason.items():
                    published[f"dropped_{reason}"] = n
                if st.dropped_by_kind:
                    published["dropped_by_kind"] = dict(st.dropped_by_kind)
                recorder_counters(b, self.recorder_id, published, at)
            w = self.worker
            if heartbeat and w is not None:
                cur = self.state.current
                payload = {
                    "current_op": cur[1] if cur is not None else None,
                    "current_model": cur[0] if cur is not None else None,
                    **fields,
                    "recorder": counters,
                }
                writes.heartbeat(
                    b, w.id, w.role, w.pod, w.node, w.model_id, list(w.gpu_ids), payload, at
                )
        first = [] if self.schema_done else [schema_version()]
        return first + b.commands(), (heartbeat, publish)

    def sent(self, sent: Sent) -> None:
        """A pipeline carrying these status writes succeeded."""
        self.schema_done = True
        heartbeat, counters = sent
        if heartbeat:
            self.last_heartbeat = time.monotonic()
        if counters:
            self.counters_at = time.monotonic()

"""Status writes sent with the pipelines: schema version, counters, the heartbeat."""

from __future__ import annotations

import os
import time
from typing import Any

from openrl_inspect.recorder import writes
from openrl_inspect.recorder.buffer import BufferCore, Sent, _Pending
from openrl_inspect.recorder.writes import Batch, Command


class StatusWrites(BufferCore):
    """When the counters and the worker heartbeat are due, and the commands that send them."""

    def _counters_due(self) -> bool:
        return self.settings.publish_counters and (
            self._closed or time.monotonic() - self._counters_at >= self.settings.counters_every_s
        )

    def _heartbeat_due(self) -> bool:
        return (
            self.worker is not None
            and time.monotonic() - self._last_heartbeat >= self.settings.heartbeat_every_s
        )

    def _status_commands(self, p: _Pending | None) -> tuple[list[Command], Sent]:
        """Schema version, counters and the worker heartbeat to send with a pipeline,
        each when it is due. The counters are those this pipeline's success makes true.
        """
        b = Batch(self.retention, self._id_prefix, self._wid)
        if not self._schema_done:
            writes.schema_version(b)
        heartbeat = self._heartbeat_due()
        publish = self._counters_due()
        counters: dict[str, Any] | None = None
        if publish or heartbeat:
            with self._lock:
                st = self._stats_locked()
                status = dict(self._status)
            extra = p.valid if p is not None and not p.abandoned else 0
            counters = {
                "recorded": st.recorded,
                "written": st.written + extra,
                "dropped": st.dropped,
                "pending": st.pending - extra,
                "retried": st.retried,
            }
            at = self._clock()
            if publish:
                fields: dict[str, Any] = {
                    **counters,
                    "batches": st.batches + (1 if p is not None else 0),
                    "failed_attempts": st.failed_attempts,
                    "pid": os.getpid(),
                    "worker_id": self._wid,
                }
                for reason, n in st.dropped_by_reason.items():
                    fields[f"dropped_{reason}"] = n
                if st.dropped_by_kind:
                    fields["dropped_by_kind"] = dict(st.dropped_by_kind)
                writes.recorder_counters(b, self.recorder_id, fields, at)
            w = self.worker
            if heartbeat and w is not None:
                cur = self._current
                payload = {
                    "current_op": cur[1] if cur is not None else None,
                    "current_model": cur[0] if cur is not None else None,
                    **status,
                    "recorder": counters,
                }
                writes.heartbeat(
                    b, w.id, w.role, w.pod, w.node, w.model_id, list(w.gpu_ids), payload, at
                )
        return b.commands(), (heartbeat, publish)

    def _status_due(self) -> bool:
        """A status-only pipeline is worth sending: a heartbeat is due or counters moved."""
        if not self._schema_done:
            return self._taken > 0 or self.worker is not None
        if self._heartbeat_due():
            return True
        return self._counters_due() and self._snapshot() != self._published

    def _snapshot(self) -> tuple[int, ...]:
        """The counters that matter once the buffer is empty (``written`` first)."""
        with self._lock:
            return (
                self._written,
                self._taken,
                self._retried,
                self._failures,
                sum(self._dropped.values()),
            )

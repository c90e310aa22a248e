"""The record calls: what OpenRL's processes call, one method per kind of record.

Each builds one ``(kind, arguments)`` tuple and appends it to the buffer: it never
blocks, never raises (a call whose arguments cannot be captured is counted as
``malformed``), and takes the time as ``time.time()`` unless given ``at``. What each
kind writes is ``_writes.WRITES[kind]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from openrl_inspect.core.domain import OpStatus
from openrl_inspect.recorder._buffer import Buffer
from openrl_inspect.recorder._config import (
    RecorderSettings,
    RecorderStats,
    Retention,
    WorkerInfo,
    default_recorder_id,
)
from openrl_inspect.recorder._flow import Flow
from openrl_inspect.recorder._status import Status


class RecorderBase:
    """The record methods and the counters, over a buffer, the status writes and the
    flow of batches; ``Recorder`` and ``AsyncRecorder`` add the flusher."""

    def __init__(
        self,
        retention: Retention | None = None,
        *,
        settings: RecorderSettings | None = None,
        batch_size: int | None = None,
        capacity: int | None = None,
        worker: WorkerInfo | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        s = settings or RecorderSettings()
        if batch_size is not None:
            s = replace(s, batch_size=batch_size)
        if capacity is not None:
            s = replace(s, capacity=capacity)
        self.settings = s
        self.retention = retention or Retention()
        self.worker = worker
        self.recorder_id = s.recorder_id or default_recorder_id()
        self._buffer = Buffer(s, s.batch_size, s.capacity)
        self.batch_size = self._buffer.batch_size
        self.capacity = self._buffer.capacity
        self._status = Status(s, self.retention, self._buffer, self.recorder_id, worker, clock)
        self._worker_state = self._status.state
        wid = worker.id if worker is not None else None
        self._flow = Flow(s, self.retention, self._buffer, self._status, wid)
        self._clock = clock
        self._put = self._buffer.put  # the hot path: one bound method call

    @property
    def pending(self) -> int:
        """Records buffered or in flight (not yet written nor dropped)."""
        return self._buffer.pending

    def stats(self) -> RecorderStats:
        """The exact counters: ``recorded == written + dropped + pending``."""
        return self._buffer.stats(self.recorder_id)

    # -- sessions and models ---------------------------------------------------------------

    def session_opened(
        self, sid: str, owner: str, client: Mapping[str, Any] | None = None, at: float | None = None
    ) -> None:
        try:
            now = self._clock() if at is None else at
            self._put(("session_opened", (sid, owner, dict(client) if client else {}, now)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("session_opened")

    def session_closed(self, sid: str, at: float | None = None) -> None:
        try:
            self._put(("session_closed", (sid, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("session_closed")

    def model_created(
        self,
        mid: str,
        sid: str,
        base_model: str,
        lora: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        at: float | None = None,
        owner: str | None = None,
    ) -> None:
        # ``owner``: the session's owner, for the models-by-owner index; not needed when
        # this recorder recorded the session's opening.
        try:
            now = self._clock() if at is None else at
            lora_, settings_ = dict(lora) if lora else {}, dict(settings) if settings else {}
            self._put(("model_created", (mid, sid, base_model, lora_, settings_, now, owner)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("model_created")

    def model_state(
        self, mid: str, state: str, reason: str | None = None, at: float | None = None
    ) -> None:
        try:
            self._put(("model_state", (mid, state, self._clock() if at is None else at, reason)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("model_state")

    # -- ops and steps -----------------------------------------------------------------------

    def op_accepted(
        self,
        mid: str,
        oid: str,
        kind: str,
        step: int,
        session_id: str | None = None,
        at: float | None = None,
    ) -> None:
        try:
            now = self._clock() if at is None else at
            self._put(("op_accepted", (mid, oid, kind, step, now, session_id)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("op_accepted")

    def op_enqueued(self, mid: str, oid: str, at: float | None = None) -> None:
        try:
            self._put(("op_enqueued", (mid, oid, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("op_enqueued")

    def op_started(self, mid: str, oid: str, worker_id: str, at: float | None = None) -> None:
        try:
            self._put(("op_started", (mid, oid, worker_id, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("op_started")

    def op_finished(
        self,
        mid: str,
        oid: str,
        status: str = OpStatus.SUCCEEDED,
        metrics: Mapping[str, Any] | None = None,
        error: str | None = None,
        at: float | None = None,
    ) -> None:
        try:
            now = self._clock() if at is None else at
            copy = {**metrics} if metrics else None  # not dict(): no type call, cheaper cold
            self._put(("op_finished", (mid, oid, status, now, copy, error)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("op_finished")

    def step_metrics(
        self,
        mid: str,
        step: int,
        metrics: Mapping[str, Any],
        finished: bool = False,
        at: float | None = None,
    ) -> None:
        try:
            now = self._clock() if at is None else at
            self._put(("step_metrics", (mid, step, {**metrics}, now, finished)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("step_metrics")

    # -- workers, samplers, placements, client logs ----------------------------------------

    def heartbeat(
        self,
        wid: str,
        role: str,
        pod: str,
        node: str,
        model_id: str | None = None,
        gpu_ids: Sequence[str] = (),
        payload: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> None:
        try:
            now = self._clock() if at is None else at
            fields = dict(payload) if payload else {}
            self._put(("heartbeat", (wid, role, pod, node, model_id, list(gpu_ids), fields, now)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("heartbeat")

    def sampler_batch(
        self,
        mid: str,
        batch_size: int,
        prompt_tokens: int,
        generated_tokens: int,
        latency_s: float,
        queue_depth: int,
        *,
        worker_id: str | None = None,
        op_id: str | None = None,
        at: float | None = None,
    ) -> None:
        """One sampler batch: its size, tokens in and out, latency and the queue behind it.

        ``worker_id`` defaults to this recorder's ``WorkerInfo``.
        """
        try:
            rec = (
                "sampler_batch",
                (
                    mid,
                    batch_size,
                    prompt_tokens,
                    generated_tokens,
                    latency_s,
                    queue_depth,
                    worker_id,
                    op_id,
                    self._clock() if at is None else at,
                ),
            )
            self._put(rec)
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("sampler_batch")

    def client_log(
        self,
        mid: str,
        level: str | int,
        message: str,
        fields: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> None:
        """A log line the client reported for model ``mid`` (``level``: name or number)."""
        try:
            now = self._clock() if at is None else at
            self._put(("client_log", (mid, level, message, {**fields} if fields else None, now)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("client_log")

    def placement_admitted(
        self,
        mid: str,
        pid: str,
        workload: str,
        namespace: str,
        pods: Sequence[str],
        node: str,
        gpu_ids: Sequence[str],
        at: float | None = None,
    ) -> None:
        try:
            now = self._clock() if at is None else at
            where = (workload, namespace, list(pods), node, list(gpu_ids))
            self._put(("placement_admitted", (mid, pid, *where, now)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("placement_admitted")

    def placement_released(self, mid: str, pid: str, at: float | None = None) -> None:
        try:
            self._put(("placement_released", (mid, pid, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._buffer.malformed("placement_released")

    def set_status(self, **fields: Any) -> None:
        """Fields added to the payload of the heartbeats this recorder sends (e.g. ``step``)."""
        # A dict update, atomic under the GIL (the heartbeat copies the dict): a lock and an
        # encoding here cost a trainer 30-65 us a step.
        self._worker_state.fields.update(fields)

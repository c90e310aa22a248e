"""The record methods: each builds one tuple and appends it, never blocking or raising."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openrl_inspect.recorder import writes
from openrl_inspect.recorder.buffer import BufferCore


class RecordCalls(BufferCore):
    """What OpenRL's processes call: one method per kind of record."""

    # -- sessions and models ---------------------------------------------------------------

    def session_opened(
        self, sid: str, owner: str, client: Mapping[str, Any] | None = None, at: float | None = None
    ) -> None:
        try:
            self._put(
                (
                    writes.session_opened,
                    (
                        sid,
                        owner,
                        dict(client) if client else {},
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.session_opened)

    def session_closed(self, sid: str, at: float | None = None) -> None:
        try:
            self._put((writes.session_closed, (sid, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.session_closed)

    def model_created(
        self,
        mid: str,
        sid: str,
        base_model: str,
        lora: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> None:
        try:
            self._put(
                (
                    writes.model_created,
                    (
                        mid,
                        sid,
                        base_model,
                        dict(lora) if lora else {},
                        dict(settings) if settings else {},
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.model_created)

    def model_state(
        self, mid: str, state: str, reason: str | None = None, at: float | None = None
    ) -> None:
        try:
            self._put(
                (writes.model_state, (mid, state, self._clock() if at is None else at, reason))
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.model_state)

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
            self._put(
                (
                    writes.op_accepted,
                    (mid, oid, kind, step, self._clock() if at is None else at, session_id),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.op_accepted)

    def op_enqueued(self, mid: str, oid: str, at: float | None = None) -> None:
        try:
            self._put((writes.op_enqueued, (mid, oid, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.op_enqueued)

    def op_started(self, mid: str, oid: str, worker_id: str, at: float | None = None) -> None:
        try:
            if worker_id == self._wid:
                self._current = (mid, oid)
            self._put(
                (writes.op_started, (mid, oid, worker_id, self._clock() if at is None else at))
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.op_started)

    def op_finished(
        self,
        mid: str,
        oid: str,
        status: str = "succeeded",
        metrics: Mapping[str, Any] | None = None,
        error: str | None = None,
        at: float | None = None,
    ) -> None:
        try:
            cur = self._current
            if cur is not None and cur[1] == oid:
                self._current = None
            self._put(
                (
                    writes.op_finished,
                    (
                        mid,
                        oid,
                        status,
                        self._clock() if at is None else at,
                        dict(metrics) if metrics else None,
                        error,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.op_finished)

    def step_metrics(
        self,
        mid: str,
        step: int,
        metrics: Mapping[str, Any],
        finished: bool = False,
        at: float | None = None,
    ) -> None:
        try:
            self._put(
                (
                    writes.step_metrics,
                    (mid, step, dict(metrics), self._clock() if at is None else at, finished),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.step_metrics)

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
            self._put(
                (
                    writes.heartbeat,
                    (
                        wid,
                        role,
                        pod,
                        node,
                        model_id,
                        list(gpu_ids),
                        dict(payload) if payload else {},
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.heartbeat)

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
            self._put(
                (
                    writes.sampler_batch,
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
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.sampler_batch)

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
            self._put(
                (
                    writes.client_log,
                    (
                        mid,
                        level,
                        message,
                        dict(fields) if fields else None,
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.client_log)

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
            self._put(
                (
                    writes.placement_admitted,
                    (
                        mid,
                        pid,
                        workload,
                        namespace,
                        list(pods),
                        node,
                        list(gpu_ids),
                        self._clock() if at is None else at,
                    ),
                )
            )
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.placement_admitted)

    def placement_released(self, mid: str, pid: str, at: float | None = None) -> None:
        try:
            self._put((writes.placement_released, (mid, pid, self._clock() if at is None else at)))
        except Exception:  # never into the caller: counted as malformed
            self._malformed(writes.placement_released)

    def set_status(self, **fields: Any) -> None:
        """Fields added to the payload of the heartbeats this recorder sends (e.g. ``step``)."""
        with self._lock:
            self._status = {**self._status, **fields}

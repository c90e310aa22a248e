"""The simulated workers' logs, kept in the in-memory twin of the Cloud Logging adapter.

A ``LogMirror`` holds an ``InMemoryLogSource`` (``twin``; the demo's wiring,
``openrl_inspect.cli.demo``, puts it in the backends) and ``update`` appends the lines the
workers would have written, derived from what the simulation recorded (ops, their times, metrics and
errors, the model's transitions, the workers' heartbeats), so the logs line up with the
state the API shows:

- per op: ``op <kind> started`` and ``op <kind> finished in Ns`` at INFO on the worker
  that ran it, with structured fields (op id, kind, step, duration, metrics); a WARNING
  when a forward/backward's loss spikes; progress lines while an op runs;
- a failed op: the error and a Python traceback at ERROR (the ``failed`` scenario's
  CUDA out-of-memory), a CRITICAL exit line at the model's failure time;
- an op on a worker whose heartbeats stopped (``lost``): progress lines up to its last
  heartbeat, then nothing;
- an op running far too long on a live worker (``stuck``): a WARNING "still waiting on
  NCCL allreduce" every minute.

Incremental: each call reads only the models that may have new lines (their recent
steps), and each line is written once. The twin keeps the newest ``CAPACITY`` lines.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from openrl_inspect.adapters.logs import CloudLoggingSettings
from openrl_inspect.adapters.logs.memory import InMemoryLogSource, wire_entry
from openrl_inspect.adapters.redis import StateStore
from openrl_inspect.core.domain import TERMINAL_STATES, ModelState, OpStatus
from openrl_inspect.simulator.sim import SimModel, Simulation
from openrl_inspect.state.paging import ListRef, PageRequest
from openrl_inspect.state.records import ModelRecord, OpRecord, WorkerRecord

PROJECT = "openrl-demo"
NAMESPACE = "openrl"
CONTAINER = "worker"
CAPACITY = 20_000
# Steps read per model: the first time, then on each later call.
HISTORY_STEPS = 20
RECENT_STEPS = 3
PROGRESS_EVERY_S = 5.0
STUCK_WARN_EVERY_S = 60.0
MAX_STUCK_WARNINGS = 60
LOSS_SPIKE = 1.9
SETTINGS = CloudLoggingSettings(project=PROJECT)


@dataclass
class _Seen:
    """What was already written for one model."""

    events: set[str] = field(default_factory=set)
    op_lines: dict[str, set[str]] = field(default_factory=dict)  # op id -> lines
    running: bool = False  # it had a running op at the last read
    done: bool = False  # ended or failed, every line written


class LogMirror:
    """Turns the simulation's records into log lines, each exactly once."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.twin = InMemoryLogSource(SETTINGS, project=PROJECT, capacity=capacity)
        self._seen: dict[str, _Seen] = {}
        self._events_logged = 0

    async def update(self, sim: Simulation, store: StateStore, now: float) -> None:
        """Append the lines that appeared since the last call, and the events-log entries
        the scenarios staged (``Simulation.events_log``)."""
        self.twin.append(*await self.step(sim, store, now))
        fresh = sim.events_log[self._events_logged :]
        self._events_logged = len(sim.events_log)
        self.twin.append(*fresh)

    async def step(self, sim: Simulation, store: StateStore, now: float) -> list[dict[str, Any]]:
        """The lines that appeared since the last call (all of them on the first)."""
        models = [m for m in sim.models.values() if m.workers and self._due(m)]
        if not models:
            return []
        first = {m.id: m.id not in self._seen for m in models}
        pages = await store.pages(
            [
                PageRequest(
                    ListRef("steps", (m.id,)), HISTORY_STEPS if first[m.id] else RECENT_STEPS
                )
                for m in models
            ]
        )
        step_keys = [
            (m, int(p.member)) for m, page in zip(models, pages, strict=True) for p in page.items
        ]
        op_pages = await store.pages(
            [
                PageRequest(ListRef("step_ops", (m.id, str(n))), 100, newest_first=False)
                for m, n in step_keys
            ]
        )
        op_keys = [
            (m.id, p.member)
            for (m, _), page in zip(step_keys, op_pages, strict=True)
            for p in page.items
        ]
        # The simulator's own records: never bad, but typed as any store answer.
        ops = [o for o in await store.ops(op_keys) if isinstance(o, OpRecord)]
        ids = [m.id for m in models]
        records = {
            m: r
            for m, r in zip(ids, await store.models(ids), strict=True)
            if isinstance(r, ModelRecord)
        }
        wids = sorted({w[0] for m in models for w in m.workers})
        workers = {w.id: w for w in await store.workers(wids) if isinstance(w, WorkerRecord)}
        by_model: dict[str, list[OpRecord]] = {}
        for op in ops:
            by_model.setdefault(op.model_id, []).append(op)
        out: list[dict[str, Any]] = []
        for m in models:
            seen = self._seen.setdefault(m.id, _Seen())
            lines = _Lines(m, seen, now, workers)
            lines.model(records.get(m.id))
            for op in by_model.get(m.id, []):
                lines.op(op)
            # Older steps are never read again: forget their ops.
            kept = {op.id for op in by_model.get(m.id, [])}
            seen.op_lines = {k: v for k, v in seen.op_lines.items() if k in kept}
            seen.running = any(
                op.finished_at is None and op.started_at is not None
                for op in by_model.get(m.id, [])
            )
            rec = records.get(m.id)
            seen.done = rec is not None and rec.state in TERMINAL_STATES and not seen.running
            out.extend(lines.entries)
        return out

    def _due(self, model: SimModel) -> bool:
        seen = self._seen.get(model.id)
        if seen is None:
            return True
        if seen.done:
            return False
        return seen.running or model.live


class _Lines:
    """The new lines of one model, read from its records."""

    def __init__(
        self, model: SimModel, seen: _Seen, now: float, workers: dict[str, WorkerRecord]
    ) -> None:
        self.model_ = model
        self.seen = seen
        self.now = now
        self.workers = workers
        self.roles = {wid: (role, pod) for wid, role, pod, _ in model.workers}
        self.entries: list[dict[str, Any]] = []

    def emit(
        self,
        key: tuple[str | None, str],
        at: float,
        wid: str | None,
        severity: str,
        message: str,
        fields: dict[str, Any] | None = None,
    ) -> None:
        """One line, unless written before; ``key`` is (op id or None, line name)."""
        op_id, name = key
        written = self.seen.events if op_id is None else self.seen.op_lines.setdefault(op_id, set())
        if name in written or at > self.now:
            return
        written.add(name)
        role, pod = self.roles.get(wid or "", (None, None))
        digest = hashlib.sha256(f"{self.model_.id}\n{op_id}\n{name}".encode()).hexdigest()[:20]
        self.entries.append(
            wire_entry(
                timestamp=datetime.fromtimestamp(at, tz=UTC),
                message=message,
                payload=fields,
                severity=severity,
                model_id=self.model_.id,
                role=role,
                pod=pod,
                container=CONTAINER,
                namespace=NAMESPACE,
                insert_id=f"sim-{digest}",
                project=PROJECT,
                settings=SETTINGS,
            )
        )

    # ------------------------------------------------------------------ model events

    def model(self, rec: ModelRecord | None) -> None:
        if rec is None:
            return
        placed = rec.transitions.get(ModelState.PLACED)
        if placed is not None:
            for wid, role, _, gpus in self.model_.workers:
                self.emit(
                    (None, f"start:{wid}"),
                    placed + 1.0,
                    wid,
                    "INFO",
                    f"{role} worker started for model {rec.id} with {len(gpus)} GPU(s)",
                    {"worker_id": wid, "gpus": len(gpus), "base_model": rec.base_model},
                )
        failed = rec.transitions.get(ModelState.FAILED)
        if rec.state == ModelState.FAILED and failed is not None:
            trainer = self.model_.workers[0][0]
            reason = rec.failure_reason or "unknown error"
            self.emit(
                (None, "exit"),
                failed,
                trainer,
                "CRITICAL",
                f"trainer process exited with code 1: {reason}",
                {"exit_code": 1},
            )
            if len(self.model_.workers) > 1:
                sampler = self.model_.workers[1][0]
                self.emit(
                    (None, "peer-lost"),
                    failed + 0.5,
                    sampler,
                    "WARNING",
                    "lost the trainer's NCCL peer; sampler shutting down",
                )
        ended = rec.transitions.get(ModelState.ENDED)
        if rec.state == ModelState.ENDED and ended is not None:
            for wid, role, _, _ in self.model_.workers:
                self.emit(
                    (None, f"end:{wid}"),
                    ended,
                    wid,
                    "INFO",
                    f"{role} worker exiting: training finished",
                )

    # ----------------------------------------------------------------------------- ops

    def op(self, op: OpRecord) -> None:
        if op.started_at is None:
            return
        wid = op.worker_id
        base = {"op_id": op.id, "op_kind": op.kind, "step": op.step, "worker_id": wid}
        self.emit((op.id, "start"), op.started_at, wid, "INFO", f"op {op.kind} started", base)
        if op.finished_at is None:
            self._running(op, base)
            return
        took = op.finished_at - op.started_at
        if op.status == OpStatus.FAILED:
            self._failure(op, base)
            return
        fields = {**base, "duration_s": round(took, 3), **_scalars(op.metrics.value())}
        self.emit(
            (op.id, "finish"),
            op.finished_at,
            wid,
            "INFO",
            f"op {op.kind} finished in {took:.2f}s",
            fields,
        )
        loss = op.metrics.value().get("loss")
        if op.kind == "forward_backward" and isinstance(loss, int | float) and loss > LOSS_SPIKE:
            self.emit(
                (op.id, "spike"),
                op.finished_at + 0.001,
                wid,
                "WARNING",
                f"loss {loss:.3f} above {LOSS_SPIKE} at step {op.step}; "
                "gradients clipped to max_norm=1.0",
                {**base, "loss": loss},
            )
        if op.kind == "save_weights":
            self.emit(
                (op.id, "ckpt"),
                op.finished_at + 0.001,
                wid,
                "NOTICE",
                f"checkpoint for step {op.step} written",
                base,
            )

    def _failure(self, op: OpRecord, base: dict[str, Any]) -> None:
        assert op.started_at is not None and op.finished_at is not None
        wid = op.worker_id
        error = op.error or "RuntimeError: op failed"
        if "out of memory" in error:
            self.emit(
                (op.id, "mem"),
                op.started_at + (op.finished_at - op.started_at) / 2,
                wid,
                "WARNING",
                "GPU memory at 97% (76.9 of 79.1 GiB) during forward_backward",
                {**base, "memory_used_gib": 76.9, "memory_total_gib": 79.1},
            )
        trace = [
            f"op {op.kind} failed at step {op.step}: {error}",
            "Traceback (most recent call last):",
            '  File "/opt/openrl/openrl/worker/trainer.py", line 412, in forward_backward',
            "    loss.backward()",
            '  File "/usr/local/lib/python3.11/site-packages/torch/_tensor.py", line 626, '
            "in backward",
            "    torch.autograd.backward(",
            error.replace(
                "RuntimeError: CUDA out of memory", "torch.OutOfMemoryError: CUDA out of memory"
            ),
        ]
        for i, text in enumerate(trace):
            self.emit(
                (op.id, f"trace:{i}"),
                op.finished_at + i * 1e-3,
                wid,
                "ERROR",
                text,
                {**base, "error": error} if i == 0 else None,
            )

    def _running(self, op: OpRecord, base: dict[str, Any]) -> None:
        assert op.started_at is not None
        wid = op.worker_id
        worker = self.workers.get(wid or "")
        # A worker that stopped heartbeating, or whose record is gone, writes no more.
        alive = self.model_.heartbeats and worker is not None and wid not in self.model_.silent
        last = worker.last_heartbeat_at if worker and worker.last_heartbeat_at else self.now
        until = self.now if alive else min(self.now, last)
        steps = int((until - op.started_at) // PROGRESS_EVERY_S)
        for k in range(1, min(steps, 7) + 1):
            self.emit(
                (op.id, f"progress:{k}"),
                op.started_at + k * PROGRESS_EVERY_S,
                wid,
                "DEBUG",
                f"op {op.kind} step {op.step}: micro-batch {k}/8 done",
                base,
            )
        if not alive:
            return  # the worker went silent: nothing after its last heartbeat
        waits = int((self.now - op.started_at) // STUCK_WARN_EVERY_S)
        for k in range(max(1, waits - MAX_STUCK_WARNINGS + 1), waits + 1):
            self.emit(
                (op.id, f"wait:{k}"),
                op.started_at + k * STUCK_WARN_EVERY_S,
                wid,
                "WARNING",
                f"still waiting on NCCL allreduce (bucket 8/8, {int(k * STUCK_WARN_EVERY_S)} s)",
                {**base, "waited_s": int(k * STUCK_WARN_EVERY_S)},
            )


def _scalars(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if isinstance(v, int | float | str | bool)}

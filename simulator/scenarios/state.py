"""Scenarios in OpenRL's own record: ops stuck, lost or failed, workers gone silent, a
failed model, a stalled model and GPUs reserved for nothing.

``stage_original`` stages the first five, in the order and with the draws they always
had (other tests and the demo's first screen know them); ``stage`` the rest.
"""

from __future__ import annotations

from openrl_inspect.core.domain import ModelState, OpStatus
from openrl_inspect.simulator.scenarios.base import (
    BEFORE_NOW_S,
    go_on,
    run,
    run_until,
    staged,
    worker_ids,
)
from openrl_inspect.simulator.sim import SimModel, Simulation

OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total)"
NCCL = (
    "trainer exited with code 1: torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error "
    "(run with NCCL_DEBUG=INFO for details)"
)
BAD_BATCH = "ValueError: sequence length 40960 exceeds max_seq_len 32768 (example 17 of batch)"


def _open_op(sim: Simulation, model: SimModel, kind: str, worker: str | None, at: float) -> str:
    """An op accepted at ``at``, queued, and started on ``worker`` (None: not started)."""
    oid = sim._id("op")
    sim.rec.op_accepted(model.id, oid, kind, model.step, model.session_id, at=at)
    sim.rec.op_enqueued(model.id, oid, at=at + 0.01)
    if worker is not None:
        sim.rec.op_started(model.id, oid, worker, at=at + 0.1)
    return oid


def stage_original(sim: Simulation, sid: str, now: float) -> None:
    """stuck, lost, waiting, failed, idle_placement."""
    rec = sim.rec
    stuck = staged(sim, sid, "stuck", now - 3600)
    run(sim, stuck, now - 3500, 5)
    _open_op(sim, stuck, "forward_backward", stuck.workers[0][0], now - 1800)
    sim.heartbeat(stuck, now)

    lost = staged(sim, sid, "lost", now - 3000)
    run(sim, lost, now - 2900, 5)
    lost.heartbeats = False
    sim.heartbeat(lost, now - 600)
    for kind, worker in (("sample", lost.workers[1][0]), ("forward_backward", lost.workers[0][0])):
        _open_op(sim, lost, kind, worker, now - 620)

    waiting = staged(sim, sid, "waiting", now - 2400)
    waiting.heartbeats = False

    failed = staged(sim, sid, "failed", now - 2000)
    t = run(sim, failed, now - 1950, 8)
    oid = sim._id("op")
    rec.op_accepted(failed.id, oid, "forward_backward", failed.step, sid, at=t)
    rec.op_started(failed.id, oid, failed.workers[0][0], at=t + 0.1)
    rec.op_finished(failed.id, oid, status=OpStatus.FAILED, error=OOM, at=t + 0.9)
    # What the client saw: the failed call, then giving up.
    rec.client_log(
        failed.id,
        "ERROR",
        "forward_backward failed: CUDA out of memory",
        {"op_id": oid},
        at=t + 1.2,
    )
    rec.client_log(
        failed.id,
        "WARNING",
        "giving up after 1 attempt; model marked failed",
        {"retries": 0},
        at=t + 2.5,
    )
    sim.heartbeat(failed, t + 1)
    sim.finish(failed, ModelState.FAILED, t + 2, reason=f"trainer exited: {OOM}")
    failed.heartbeats = False

    idle = staged(sim, sid, "idle_placement", now - 3700)
    run(sim, idle, now - 3600, 3)
    sim.heartbeat(idle, now)


def _worker_lost(sim: Simulation, sid: str, now: float) -> None:
    """The sampler stopped heartbeating five minutes ago between ops; the trainer lives
    on, and the client's next ``sample`` waits in the queue for a sampler."""
    model = staged(sim, sid, "worker_lost", now - 1500)
    died = now - 300
    run_until(sim, model, died - 5, 20)
    sim.heartbeat(model, died)
    model.silent.add(worker_ids(model)[1])
    _open_op(sim, model, "sample", None, died + 8)
    sim.heartbeat(model, now)


def _ops_lost(sim: Simulation, sid: str, now: float) -> None:
    """A ``sample`` op started on a sampler whose worker record is gone (Redis evicted
    the expiring key), so nobody will finish it; the workers that heartbeat now never
    took it."""
    model = staged(sim, sid, "ops_lost", now - 1500)
    run_until(sim, model, now - 420, 20)
    _open_op(sim, model, "sample", f"{worker_ids(model)[1]}-prev", now - 400)
    sim.heartbeat(model, now)


def _op_failed(sim: Simulation, sid: str, now: float) -> None:
    """One ``forward_backward`` refused a bad batch a minute ago; the client skipped the
    batch and the model trains on."""
    model = staged(sim, sid, "op_failed", now - 1500)
    t = run_until(sim, model, now - BEFORE_NOW_S - 60, 15)
    oid = _open_op(sim, model, "forward_backward", worker_ids(model)[0], t + 0.2)
    sim.rec.op_finished(model.id, oid, status=OpStatus.FAILED, error=BAD_BATCH, at=t + 0.35)
    sim.rec.client_log(
        model.id,
        "WARNING",
        "forward_backward failed; skipping the batch",
        {"op_id": oid},
        at=t + 0.4,
    )
    t += 0.6
    while t < now - BEFORE_NOW_S - 8:
        t = sim.run_step(model, t)
    sim.heartbeat(model, now)
    # Live, a bad batch every ten steps: one always in the summary's window of twenty.
    go_on(model, t, fail_every=10, error=BAD_BATCH)


def _model_failed(sim: Simulation, sid: str, now: float) -> None:
    """The trainer process died between ops (an NCCL error): OpenRL marked the model
    failed with the exit; no op failed."""
    model = staged(sim, sid, "model_failed", now - 2600)
    t = run(sim, model, now - 2500, 10)
    sim.heartbeat(model, t)
    sim.finish(model, ModelState.FAILED, t + 40, reason=NCCL)
    model.heartbeats = False


def _stalled(sim: Simulation, sid: str, now: float) -> None:
    """Twenty steps, then nothing for fifteen minutes: no op open, workers alive."""
    model = staged(sim, sid, "stalled", now - 2700)
    run_until(sim, model, now - 900, 20)
    sim.heartbeat(model, now)


def _idle_reservation(sim: Simulation, sid: str, now: float) -> None:
    """Active for forty minutes, its GPUs held, and not one op: the client never came."""
    model = staged(sim, sid, "idle_reservation", now - 2500)
    if not sim.place(model, now - 2400):
        raise RuntimeError("no room for the idle_reservation scenario")
    sim.activate(model, now - 2390)
    sim.heartbeat(model, now)


def stage(sim: Simulation, sid: str, now: float) -> None:
    for scenario in (_worker_lost, _ops_lost, _op_failed, _model_failed, _stalled):
        scenario(sim, sid, now)
    _idle_reservation(sim, sid, now)

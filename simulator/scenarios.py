"""Staged situations the inspector must diagnose, each on a model of its own.

- ``stuck``: an op running for half an hour on a worker that still heartbeats;
- ``lost``: ops started on a worker that stopped heartbeating ten minutes ago;
- ``waiting``: a model waiting forty minutes for GPUs;
- ``failed``: a model whose last op failed with an out-of-memory error;
- ``idle_placement``: a placement holding GPUs with no ops for an hour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openrl_inspect.domain import ModelState, OpStatus

if TYPE_CHECKING:
    from openrl_inspect.simulator.sim import SimModel, Simulation

OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total)"


def _staged(sim: Simulation, sid: str, name: str, created: float) -> SimModel:
    model = sim.create_model(sid, created, live=False)
    sim.scenario_ids[name] = model.id
    return model


def _run(sim: Simulation, model: SimModel, start: float, steps: int) -> float:
    sim.place(model, start)
    sim.activate(model, start + 5)
    t = start + 5
    for _ in range(steps):
        t = sim.run_step(model, t)
    return t


def stage_all(sim: Simulation, now: float) -> None:
    sid = sim.open_session(now - 7200, owner="scenarios")
    rec = sim.rec

    stuck = _staged(sim, sid, "stuck", now - 3600)
    t = _run(sim, stuck, now - 3500, 5)
    oid = sim._id("op")
    rec.op_accepted(stuck.id, oid, "forward_backward", stuck.step, sid, at=now - 1800)
    rec.op_enqueued(stuck.id, oid, at=now - 1799.99)
    rec.op_started(stuck.id, oid, stuck.workers[0][0], at=now - 1799.9)
    sim.heartbeat(stuck, now)

    lost = _staged(sim, sid, "lost", now - 3000)
    t = _run(sim, lost, now - 2900, 5)
    lost.heartbeats = False
    sim.heartbeat(lost, now - 600)
    for kind, worker in (("sample", lost.workers[1][0]), ("forward_backward", lost.workers[0][0])):
        oid = sim._id("op")
        rec.op_accepted(lost.id, oid, kind, lost.step, sid, at=now - 620)
        rec.op_enqueued(lost.id, oid, at=now - 619.99)
        rec.op_started(lost.id, oid, worker, at=now - 619.9)

    waiting = _staged(sim, sid, "waiting", now - 2400)
    waiting.heartbeats = False

    failed = _staged(sim, sid, "failed", now - 2000)
    t = _run(sim, failed, now - 1950, 8)
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

    idle = _staged(sim, sid, "idle_placement", now - 3700)
    _run(sim, idle, now - 3600, 3)
    sim.heartbeat(idle, now)
    del t

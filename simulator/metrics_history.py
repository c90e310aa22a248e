"""The metrics history before the twin's first call, from what the simulation wrote.

``history_buckets`` charges every scrape interval of the last ``HISTORY_S`` with who
held each GPU, which ops ran on it, and when workers died, as recorded in Redis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from openrl_inspect.adapters.redis import StateStore
from openrl_inspect.simulator.gpu_duty import FB_MIB, HISTORY_S, SCRAPE_S, Bucket, State, duty_of
from openrl_inspect.simulator.sim import HEARTBEAT_EVERY_S, Simulation
from openrl_inspect.state.paging import ListRef, PageRequest
from openrl_inspect.state.records import OpRecord, PlacementRecord, WorkerRecord

STALE_S = 30.0  # a worker silent this long is dead (as ``Limits.heartbeat_stale_s``)


async def read_history(
    store: StateStore, sim: Simulation
) -> tuple[list[PlacementRecord], list[OpRecord], dict[str, WorkerRecord]]:
    """The simulation's placements, ops and workers as written to Redis."""
    mids = list(sim.models)
    pages = await store.pages([PageRequest(ListRef("placements", (m,)), 100) for m in mids])
    pkeys = [(m, p.member) for m, page in zip(mids, pages, strict=True) for p in page.items]
    placements = [p for p in await store.placements(pkeys) if isinstance(p, PlacementRecord)]
    steps = await store.pages([PageRequest(ListRef("steps", (m,)), 200) for m in mids])
    skeys = [(m, int(p.score)) for m, page in zip(mids, steps, strict=True) for p in page.items]
    op_pages = await store.pages(
        [PageRequest(ListRef("step_ops", (m, str(n))), 100, None, False) for m, n in skeys]
    )
    okeys = [
        (m, p.member) for (m, _), page in zip(skeys, op_pages, strict=True) for p in page.items
    ]
    ops = [o for o in await store.ops(okeys) if isinstance(o, OpRecord)]
    wids = sorted({w[0] for model in sim.models.values() for w in model.workers})
    workers = {w.id: w for w in await store.workers(wids) if isinstance(w, WorkerRecord)}
    return placements, ops, workers


Buckets = dict[int, dict[str, Bucket]]


def _spread(
    buckets: Buckets,
    key: str,
    lo: float,
    start: float,
    end: float,
    charge: Callable[[Bucket, float], None],
) -> None:
    """Charge each interval ``(lo + k S, lo + (k + 1) S]`` its overlap with
    ``[start, end]`` (clipped at ``lo``)."""
    start = max(start, lo)
    if end <= start:
        return
    k = int((start - lo) // SCRAPE_S)
    while lo + k * SCRAPE_S < end:
        b0 = lo + k * SCRAPE_S
        part = min(end, b0 + SCRAPE_S) - max(start, b0)
        if part > 0:
            charge(buckets.setdefault(k, {}).setdefault(key, Bucket()), part)
        k += 1


def _observe(b: Bucket, part: float) -> None:
    b.observed_s += part


def _alive(fb: float, observed: bool) -> Callable[[Bucket, float], None]:
    def charge(b: Bucket, part: float) -> None:
        if observed:
            b.observed_s += part
        b.alive_s += part
        b.fb_mib = max(b.fb_mib, fb)

    return charge


def _busy(state: State) -> Callable[[Bucket, float], None]:
    def charge(b: Bucket, part: float) -> None:
        if state.pinned:
            b.pinned_s += part
        elif state.duty is not None:
            b.busy_s += part
            b.busy_w += part * state.duty

    return charge


# A worker's role, sampler pod, GPUs and model, by worker id.
Roster = dict[str, tuple[str, str, list[str], str]]


def history_buckets(
    sim: Simulation,
    placements: Iterable[PlacementRecord],
    ops: Iterable[OpRecord],
    workers: dict[str, WorkerRecord],
    now: float,
) -> tuple[float, Buckets]:
    """Per scrape interval (index k: ``(lo + k S, lo + (k + 1) S]``), per GPU
    (``gpu:UUID``) and sampler pod (``pod:NAME``): what the recorded history says
    happened, up to ``now``. Returns ``lo`` and the buckets."""
    lo = math.floor(now / SCRAPE_S) * SCRAPE_S - HISTORY_S
    buckets: Buckets = {}

    def died(wid: str) -> float:
        rec = workers.get(wid)
        if rec is None or rec.last_heartbeat_at is None:
            return math.inf
        if now - rec.last_heartbeat_at <= STALE_S:
            return math.inf
        return rec.last_heartbeat_at + HEARTBEAT_EVERY_S

    # Every GPU is observed all the time (and reports 0 while nobody holds it).
    for node in sim.cluster.nodes:
        for gpu in node.gpus:
            _spread(buckets, "gpu:" + gpu.uuid, lo, lo, now, _observe)
    by_worker: Roster = {}
    for model in sim.models.values():
        for wid, role, pod, gpu_ids in model.workers:
            by_worker[wid] = (role, pod, gpu_ids, model.id)
    _charge_held(buckets, lo, now, placements, by_worker, died)
    _charge_ops(buckets, lo, now, ops, by_worker, died)
    return lo, buckets


def _charge_held(
    buckets: Buckets,
    lo: float,
    now: float,
    placements: Iterable[PlacementRecord],
    by_worker: Roster,
    died: Callable[[str], float],
) -> None:
    """Who held which GPU (role, pod), from the placements, until its worker died."""
    for p in placements:
        if p.admitted_at is None:
            continue
        released = now if p.released_at is None else p.released_at
        for wid, (role, pod, gpu_ids, mid) in by_worker.items():
            if mid != p.model_id:
                continue
            until = min(released, died(wid), now)
            fb = FB_MIB.get(role, 0.0)
            for uuid in gpu_ids:
                if uuid in p.gpu_ids:
                    _spread(buckets, "gpu:" + uuid, lo, p.admitted_at, until, _alive(fb, False))
            if role == "sampler" and pod:
                _spread(buckets, "pod:" + pod, lo, p.admitted_at, until, _alive(fb, True))


def _charge_ops(
    buckets: Buckets,
    lo: float,
    now: float,
    ops: Iterable[OpRecord],
    by_worker: Roster,
    died: Callable[[str], float],
) -> None:
    """Ops: busy on their worker's GPUs while they ran; an op that never finished on a
    live worker is hung (pinned); on a dead one it ran until the worker died."""
    for op in ops:
        if op.started_at is None or op.worker_id not in by_worker or op.worker_id is None:
            continue
        role, pod, gpu_ids, _mid = by_worker[op.worker_id]
        dies = died(op.worker_id)
        if op.finished_at is not None:
            end, state = op.finished_at, State(duty=duty_of(op.kind))
        elif math.isinf(dies):
            end, state = now, State(pinned=True)
        else:
            end, state = dies, State(duty=duty_of(op.kind))
        end = min(end, dies, now)
        keys = ["gpu:" + u for u in gpu_ids]
        if role == "sampler" and pod:
            keys.append("pod:" + pod)
        for key in keys:
            _spread(buckets, key, lo, op.started_at, end, _busy(state))

"""The placement tracker loop: Kubernetes twin in, placement history in Redis out."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import fakeredis
import pytest
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.recorder import AsyncRecorder
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.simulator import SimConfig
from openrl_inspect.simulator.kube_twin import mirror_kubernetes
from openrl_inspect.state.paging import ListRef, PageRequest
from openrl_inspect.state.records import PlacementRecord
from openrl_inspect.tracker.run import TrackerSettings, heartbeat, run_tracker
from support.harness import populate

pytestmark = pytest.mark.anyio


async def test_tracker_records_what_kueue_admitted() -> None:
    now = time.time()
    sim = await populate(
        fakeredis.FakeAsyncRedis(decode_responses=True), SimConfig(seed=21, scenarios=False), now
    )
    cluster = Backends(state=RedisStateStore.in_memory(), kubernetes=MemoryKubernetesSource())
    assert cluster.kubernetes is not None
    mirror_kubernetes(sim, cluster.kubernetes)  # type: ignore[arg-type]

    server = fakeredis.FakeServer()  # a fresh Redis: only the tracker writes here
    recorder = AsyncRecorder(fakeredis.FakeAsyncRedis(server=server, decode_responses=True))
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_tracker(cluster.kubernetes, recorder, TrackerSettings(interval_s=0.05), stop)
    )
    await asyncio.sleep(0.3)
    stop.set()
    await task
    await recorder.close(1.0)

    placed = [m for m in sim.models.values() if m.state in ("placed", "active")]
    assert placed
    store = RedisStateStore.in_memory(server)
    got = await store.pages([PageRequest(ListRef("placements", (m.id,)), 10) for m in placed])
    assert all(page.total == 1 for page in got)
    records = await store.placements([(m.id, got[i].items[0].member) for i, m in enumerate(placed)])
    for model, rec in zip(placed, records, strict=True):
        assert isinstance(rec, PlacementRecord) and rec.released_at is None
        assert sorted(rec.gpu_ids) == sorted(g.uuid for g in sim.gpus_of(model))
        assert sorted(rec.pods) == sorted(w[2] for w in model.workers)


async def test_heartbeat_touches_its_file_until_stopped(tmp_path: Path) -> None:
    beat = tmp_path / "heartbeat"
    stop = asyncio.Event()
    settings = TrackerSettings(interval_s=0.01, heartbeat_file=str(beat))
    task = asyncio.create_task(heartbeat(settings, stop))
    for _ in range(500):
        if beat.exists():
            break
        await asyncio.sleep(0.01)
    assert beat.exists()
    stop.set()
    await task
    beat.unlink()
    await heartbeat(settings, stop)  # stopped: returns without touching
    assert not beat.exists()

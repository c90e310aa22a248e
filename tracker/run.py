"""``openrl-inspect track-placements``: the writing side of placement history.

Runs beside OpenRL (not in the read-only API): watches Kueue Workloads, pods, claims and
GPUs through the Kubernetes watch cache and records each model's placements in Redis as
they are admitted and released (``tracker.placements``), so the history outlives the
pods. Ids are derived from the Workload, so a restarted tracker re-records the same
placements idempotently; a release that happened while it was down is recorded when it
next sees the Workload gone.

With ``leader_elect`` several replicas run and one writes: each keeps its watch cache
warm, and only the holder of the Lease (``leader``) records; a term's recorder is closed
when the term ends, within the margin before another replica may take over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openrl_inspect.adapters.kubernetes import (
    KubernetesSettings,
    KubernetesSource,
    open_kubernetes,
    open_leases,
)
from openrl_inspect.adapters.redis import RedisSettings, connect
from openrl_inspect.core.errors import BackendError
from openrl_inspect.recorder import AsyncRecorder
from openrl_inspect.tracker.leader import ElectionSettings, LeaderElector
from openrl_inspect.tracker.placements import PlacementTracker

log = logging.getLogger("openrl_inspect.tracker.run")


@dataclass(frozen=True)
class TrackerSettings:
    """Env prefix ``OPENRL_INSPECT_TRACKER_``."""

    interval_s: float = 5.0
    namespace: str | None = None
    sync_timeout_s: float = 60.0
    # Campaign for a Lease and write only while holding it (ElectionSettings).
    leader_elect: bool = False
    # Seconds a term's recorder may spend flushing once the term ends (less than the
    # election's lease_duration_s - renew_deadline_s).
    close_timeout_s: float = 2.0
    # Touched every interval_s once the watch cache has synced, leader or not: the
    # kubelet's exec probes read its age (deploy/base/tracker/deployment.yaml).
    heartbeat_file: str | None = None


async def track_once(
    tracker: PlacementTracker,
    source: KubernetesSource,
    recorder: AsyncRecorder,
    namespace: str | None,
) -> int:
    """One pass: observe the cluster, record what changed, flush. Returns the changes."""
    changes = await tracker.sync(source, time.time(), namespace)
    for change in changes:
        log.info("placement %s", change)
    await recorder.flush()
    return len(changes)


async def run_tracker(
    source: KubernetesSource,
    recorder: AsyncRecorder,
    settings: TrackerSettings,
    stop: asyncio.Event,
) -> None:
    tracker = PlacementTracker(recorder)
    while not stop.is_set():
        try:
            await track_once(tracker, source, recorder, settings.namespace)
        except BackendError as exc:  # Kubernetes away: keep the cache, try again
            log.warning("placement tracking pass failed: %s (%s)", exc.message, exc.code)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), settings.interval_s)


async def run_term(
    source: KubernetesSource, client: Any, settings: TrackerSettings, stop: asyncio.Event
) -> None:
    """Track until ``stop`` with a recorder of this term's own, closed when it ends."""
    recorder = AsyncRecorder(client)
    try:
        await run_tracker(source, recorder, settings, stop)
    finally:
        await recorder.close(settings.close_timeout_s)


async def main(
    redis: RedisSettings,
    kubernetes: KubernetesSettings,
    settings: TrackerSettings,
    election: ElectionSettings | None = None,
) -> None:
    client = connect(redis)
    stop = asyncio.Event()
    # The kubelet stops a pod with SIGTERM: end the term and release the Lease.
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    try:
        async with open_kubernetes(kubernetes) as source:
            if not await source.wait_synced(settings.sync_timeout_s):
                log.warning("Kubernetes cache not synced yet; tracking with partial views")
            beating = asyncio.create_task(heartbeat(settings, stop))
            try:
                if election is None:
                    await run_term(source, client, settings, stop)
                    return
                async with open_leases(kubernetes) as leases:
                    elector = LeaderElector(leases, election)
                    await elector.run(lambda lost: run_term(source, client, settings, lost), stop)
            finally:
                stop.set()
                await beating
    finally:
        await client.aclose()


async def heartbeat(settings: TrackerSettings, stop: asyncio.Event) -> None:
    """Touch ``heartbeat_file`` every ``interval_s`` until ``stop``: the loop is alive."""
    if not settings.heartbeat_file:
        return
    path = Path(settings.heartbeat_file)
    while not stop.is_set():
        try:
            await asyncio.to_thread(path.touch)
        except OSError as exc:  # a probe failing says so; the tracker itself goes on
            log.warning("heartbeat file not written: %s", exc.strerror)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), settings.interval_s)

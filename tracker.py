"""``openrl-inspect track-placements``: the writing side of placement history.

Runs beside OpenRL (not in the read-only API): watches Kueue Workloads, pods, claims and
GPUs through the Kubernetes watch cache and records each model's placements in Redis as
they are admitted and released (``recorder.placements``), so the history outlives the
pods. Ids are derived from the Workload, so a restarted tracker re-records the same
placements idempotently; a release that happened while it was down is recorded when it
next sees the Workload gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes import KubernetesSettings, KubernetesSource, open_kubernetes
from openrl_inspect.adapters.redis import RedisSettings, connect
from openrl_inspect.errors import BackendError
from openrl_inspect.recorder import AsyncRecorder
from openrl_inspect.recorder.placements import PlacementTracker

log = logging.getLogger("openrl_inspect.tracker")


@dataclass(frozen=True)
class TrackerSettings:
    """Env prefix ``OPENRL_INSPECT_TRACKER_``."""

    interval_s: float = 5.0
    namespace: str | None = None
    sync_timeout_s: float = 60.0


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


async def main(
    redis: RedisSettings, kubernetes: KubernetesSettings, settings: TrackerSettings
) -> None:
    client = connect(redis)
    recorder = AsyncRecorder(client)
    stop = asyncio.Event()
    try:
        async with open_kubernetes(kubernetes) as source:
            if not await source.wait_synced(settings.sync_timeout_s):
                log.warning("Kubernetes cache not synced yet; tracking with partial views")
            await run_tracker(source, recorder, settings, stop)
    finally:
        await recorder.close(5.0)
        await client.aclose()

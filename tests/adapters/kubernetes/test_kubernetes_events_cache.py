"""The events watch, driven through the official client at ``FakeKube``.

events.k8s.io/v1 is listed and watched like the other kinds, into its bounded store;
lookups by regarded object make no API request once synced, and a direct read before
the sync is narrowed to the objects' namespace.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from openrl_inspect.adapters.kubernetes import KubernetesCacheSource
from support import kube_events, kube_objects
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import eventually, synced_source, unstarted_source

__all__ = ["fake_kube"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

# The fixtures are from January 2026: let them all count as recent.
YEARS = 10 * 365 * 86400.0
WAITING_POD = ("Pod", "openrl", "lora-b-trainer-0")
TRAINER_POD = ("Pod", "openrl", "lora-a-trainer-0")


async def reasons(source: KubernetesCacheSource, obj: tuple[str, str, str]) -> list[str]:
    (listing,) = await source.events_for([obj], limit=50)
    return [e.reason or "" for e in listing.items]


async def test_events_sync_and_answer_from_the_cache(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster(), *kube_events.all_events())
    async with synced_source(fake_kube, tmp_path, event_max_age_s=YEARS) as source:
        status = await source.status()
        events = status.kind("events")
        assert events is not None and events.synced and events.objects == 5
        before = fake_kube.total_requests()
        waiting, trainer, workload, node = await source.events_for(
            [WAITING_POD, TRAINER_POD, ("Workload", "openrl", "job-lora-b-trainer-3f9c2"),
             ("Node", "", "gpu-h200-1")],
            limit=10,
        )  # fmt: skip
        assert [e.reason for e in waiting.items] == ["FailedScheduling"]
        assert waiting.items[0].count == 12
        assert [e.reason for e in trainer.items] == ["BackOff", "Scheduled"]  # newest first
        assert [e.note for e in workload.items] == [kube_objects.PENDING_QUOTA_MESSAGE]
        assert [e.reason for e in node.items] == ["NodeNotReady"]
        assert fake_kube.total_requests() == before


async def test_watched_events_come_and_go(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path, event_max_age_s=YEARS) as source:
        fake_kube.put(kube_events.failed_scheduling(count=3))

        async def added() -> bool:
            return await reasons(source, WAITING_POD) == ["FailedScheduling"]

        await eventually(added, what="ADDED event")
        fake_kube.put(kube_events.failed_scheduling(count=9, last="2026-01-05T09:59:00.000000Z"))

        async def grew() -> bool:
            (listing,) = await source.events_for([WAITING_POD], limit=5)
            return [e.count for e in listing.items] == [9]

        await eventually(grew, what="MODIFIED series")
        fake_kube.delete(kube_events.failed_scheduling())

        async def deleted() -> bool:
            return await reasons(source, WAITING_POD) == []

        await eventually(deleted, what="DELETED event (the API server's TTL)")
        assert fake_kube.count("list", "events") == 1  # applied from the watch


async def test_the_bound_applies_to_the_watch_cache(fake_kube: FakeKube, tmp_path: Path) -> None:
    old = kube_events.back_off(first="2026-01-05T08:00:00Z", last="2026-01-05T08:10:00Z")
    fake_kube.put(*kube_events.all_events()[:3])
    fake_kube.put({**old, "metadata": {**old["metadata"], "name": "lora-a-trainer-0.old"}})
    async with synced_source(fake_kube, tmp_path, event_max_age_s=YEARS, max_events=2) as source:
        events = (await source.status()).kind("events")
        assert events is not None and events.objects == 2 and events.evicted == 2
        assert await reasons(source, TRAINER_POD) == ["BackOff"]


async def test_a_read_before_the_sync_is_narrowed_to_the_namespace(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.put(*kube_events.all_events())
    async with unstarted_source(fake_kube, tmp_path, event_max_age_s=YEARS) as source:
        (listing,) = await source.events_for([WAITING_POD], limit=5)
        assert [e.reason for e in listing.items] == ["FailedScheduling"]
        assert listing.degraded
        (node,) = await source.events_for([("Node", "", "gpu-h200-1")], limit=5)
        assert [e.reason for e in node.items] == ["NodeNotReady"]
    paths = [path for verb, path, _ in fake_kube.requests if verb == "list"]
    assert paths == [
        "/apis/events.k8s.io/v1/namespaces/openrl/events",
        "/apis/events.k8s.io/v1/events",
    ]

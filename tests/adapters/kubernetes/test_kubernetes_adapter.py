"""The watch cache, driven through the official client and a kubeconfig at ``FakeKube``.

Sync, reads from the cache with no API requests, watch events, bookmarks, 410 Gone (as a
watch ERROR event and as a stale continue token), server restarts with and without the
history, periodic resync, paging and the namespace selection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from openrl_inspect.adapters.kubernetes import DeviceKey, KubernetesCacheSource, ObjectKey
from support import kube_objects
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import eventually, synced_source

__all__ = ["fake_kube"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

TRAINER = ObjectKey("openrl", "lora-a-trainer-0")
WAITING = ObjectKey("openrl", "lora-b-trainer-0")


def relists(source: KubernetesCacheSource, kind: str) -> int:
    return source.kind_status(kind).relists


async def pod_names(source: KubernetesCacheSource) -> list[str]:
    return [p.name for p in (await source.list_pods(limit=1000)).items]


def _has_pod(source: KubernetesCacheSource, name: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return name in await pod_names(source)

    return check


async def test_reads_after_sync_make_no_api_requests(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path) as source:
        status = await source.status()
        assert status.ready and not status.degraded
        assert {k.kind: k.objects for k in status.kinds} == {
            "pods": 2, "nodes": 3, "workloads": 2, "resourceslices": 2, "resourceclaims": 1,
            "jobs": 0, "jobsets": 0,
            "devicetaintrules": 0,
            "events": 0,
        }  # fmt: skip
        server_before, client_before = fake_kube.total_requests(), source.request_counts()

        pods = await source.list_pods(model_id="lora-b")
        assert [p.key for p in pods.items] == [WAITING] and not pods.degraded
        waiting = pods.items[0].scheduling_failure
        assert waiting is not None and waiting.message == kube_objects.UNSCHEDULABLE_MESSAGE
        assert (await source.get_pods([WAITING, ObjectKey("openrl", "gone"), TRAINER]))[1] is None
        (on_node,) = await source.pods_by_node(["gpu-h100-1"])
        assert [p.key for p in on_node.items] == [TRAINER]
        (pending, admitted) = await source.workloads_by_model(["lora-b", "lora-a"])
        quota = pending.items[0].condition("QuotaReserved")
        assert quota is not None and quota.message == kube_objects.PENDING_QUOTA_MESSAGE
        assert admitted.items[0].admission is not None
        nodes = await source.get_nodes(["gpu-h200-1", "cpu-1"])
        assert [n.gpu_allocatable if n else None for n in nodes] == [8, 0]
        assert [n.name for n in (await source.list_nodes(limit=2)).items] == ["cpu-1", "gpu-h100-1"]
        gpus = await source.list_gpus(node_name="gpu-h200-1")
        assert len(gpus.items) == 8 and {g.product_name for g in gpus.items} == {kube_objects.H200}
        (by_uuid,) = await source.gpus_by_uuid([kube_objects.gpu_uuid("gpu-h100-1", 6)])
        assert by_uuid is not None and by_uuid.key == DeviceKey(
            "gpu.nvidia.com", "gpu-h100-1", "gpu-6"
        )
        (claims,) = await source.claims_for_pods([TRAINER])
        (held_by,) = await source.claims_by_device([by_uuid.key])
        assert claims.items == held_by.items and claims.items[0].allocated
        assert len(await source.gpus_by_device([d.key for d in claims.items[0].devices])) == 8

        assert fake_kube.total_requests() == server_before
        assert source.request_counts() == client_before


async def test_watch_events_update_the_cache(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path) as source:
        lists_before = fake_kube.count("list", "pods")
        fake_kube.put(
            kube_objects.pod("lora-c-rollout-0", model_id="lora-c", role="rollout", phase="Pending")
        )
        await eventually(_has_pod(source, "lora-c-rollout-0"), what="ADDED pod")

        placed = kube_objects.pod(
            "lora-c-rollout-0", model_id="lora-c", role="rollout", node_name="gpu-h200-1"
        )
        fake_kube.put(placed)

        async def moved() -> bool:
            (listing,) = await source.pods_by_node(["gpu-h200-1"])
            return [p.name for p in listing.items] == ["lora-c-rollout-0"]

        await eventually(moved, what="MODIFIED pod")
        fake_kube.delete(kube_objects.unschedulable_pod())

        async def deleted() -> bool:
            return "lora-b-trainer-0" not in await pod_names(source)

        await eventually(deleted, what="DELETED pod")
        assert fake_kube.count("list", "pods") == lists_before  # applied from the watch


async def test_newest_pool_generation_wins_through_the_watch(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path) as source:
        gen2 = kube_objects.resource_slice(
            "gpu-h100-1", generation=2, count=4, name="gpu-h100-1-gen2"
        )
        fake_kube.put(gen2)

        async def generations() -> set[int]:
            listing = await source.list_gpus(node_name="gpu-h100-1")
            return {g.pool_generation for g in listing.items}

        await eventually(lambda: _equals(generations(), {2}), what="generation 2 only")
        assert len((await source.list_gpus(node_name="gpu-h100-1")).items) == 4
        gone, kept = await source.gpus_by_uuid(
            [kube_objects.gpu_uuid("gpu-h100-1", 7), kube_objects.gpu_uuid("gpu-h100-1", 3)]
        )
        assert gone is None and kept is not None and kept.slice_name == "gpu-h100-1-gen2"
        fake_kube.delete(gen2)
        await eventually(lambda: _equals(generations(), {1}), what="back to generation 1")


async def _equals(value: Awaitable[object], expected: object) -> bool:
    return await value == expected


async def test_bookmarks_move_the_resource_version(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path) as source:
        (informer,) = source.informers["pods"]
        fake_kube.put(
            kube_objects.node("gpu-h100-2")
        )  # moves the server's resourceVersion, not pods'
        await eventually(_has_node(source, "gpu-h100-2"))
        assert informer.resource_version != str(fake_kube.rv)
        fake_kube.bookmark()
        await eventually(lambda: informer.resource_version == str(fake_kube.rv), what="bookmark")


def _has_node(source: KubernetesCacheSource, name: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return (await source.get_nodes([name]))[0] is not None

    return check


async def test_expired_watch_relists(fake_kube: FakeKube, tmp_path: Path) -> None:
    """A watch ERROR event with a 410 Status: the informer lists again, then watches."""
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path) as source:
        before = {kind: relists(source, kind) for kind in source.informers}
        fake_kube.expire_history()
        for kind in source.informers:
            await eventually(_relisted(source, kind, before[kind]), what=f"{kind} relist")
        assert fake_kube.expired_watches >= len(source.informers)
        await eventually(lambda: _not_degraded(source), what="healthy again")
        fake_kube.put(kube_objects.pod("after-410", model_id="lora-d"))
        await eventually(_has_pod(source, "after-410"), what="watching again")


def _relisted(source: KubernetesCacheSource, kind: str, before: int) -> Callable[[], bool]:
    return lambda: relists(source, kind) > before


async def _not_degraded(source: KubernetesCacheSource) -> bool:
    return not (await source.status()).degraded


async def test_stale_continue_token_restarts_the_list(fake_kube: FakeKube, tmp_path: Path) -> None:
    """HTTP 410 on a continuation: the paged list starts over and still syncs."""
    fake_kube.put(*kube_objects.cluster())
    fake_kube.put(*(kube_objects.pod(f"worker-{i}", model_id="lora-e") for i in range(4)))
    fake_kube.expire_next_continue()
    async with synced_source(fake_kube, tmp_path, list_page_size=1) as source:
        assert fake_kube.expired_continues == 1
        assert len(await pod_names(source)) == 6
        assert len((await source.list_gpus(limit=100)).items) == 16
        status = await source.status()
        assert {k.kind: k.objects for k in status.kinds}["nodes"] == 3
        await eventually(lambda: _not_degraded(source), what="healthy")


async def test_paged_list(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*(kube_objects.pod(f"worker-{i}", model_id="lora-e") for i in range(5)))
    async with synced_source(fake_kube, tmp_path, list_page_size=2) as source:
        assert fake_kube.count("list", "pods") == 3
        (listing,) = await source.pods_by_model(["lora-e"], limit=10)
        assert [p.name for p in listing.items] == [f"worker-{i}" for i in range(5)]


async def test_restart_resumes_the_watch(fake_kube: FakeKube, tmp_path: Path) -> None:
    """The server goes away: reads keep coming from the cache, marked degraded; when it is
    back (same port, history kept) the watch resumes without a relist."""
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path) as source:
        lists = relists(source, "pods")
        fake_kube.stop()
        await eventually(lambda: source.kind_status("pods").last_error is not None, what="error")
        listing = await source.list_pods()
        assert listing.degraded and len(listing.items) == 2
        error = source.kind_status("pods").last_error or ""
        assert "cannot be reached" in error and "127.0.0.1" not in error
        fake_kube.put(kube_objects.pod("while-down", model_id="lora-f"))
        fake_kube.start()
        await eventually(_has_pod(source, "while-down"), what="resumed watch")
        await eventually(lambda: _not_degraded(source), what="healthy")
        assert relists(source, "pods") == lists


async def test_restart_with_lost_history_relists(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path) as source:
        lists = relists(source, "pods")
        fake_kube.stop()
        fake_kube.put(kube_objects.pod("while-down", model_id="lora-f"))
        fake_kube.delete(kube_objects.running_trainer())
        fake_kube.expire_history()
        fake_kube.start()

        async def caught_up() -> bool:
            return await pod_names(source) == ["lora-b-trainer-0", "while-down"]

        await eventually(caught_up, what="relisted after the restart")
        assert relists(source, "pods") > lists and fake_kube.expired_watches >= 1


async def test_resync_period_relists(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path, resync_period_s=1.0) as source:
        await eventually(lambda: relists(source, "nodes") >= 2, what="resync")
        assert fake_kube.count("list", "nodes") >= 2
        assert len((await source.list_nodes()).items) == 3


async def test_namespace_selection(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    fake_kube.put(kube_objects.pod("elsewhere", model_id="lora-a", namespace="other"))
    async with synced_source(fake_kube, tmp_path, namespaces=("openrl",)) as source:
        (listing,) = await source.pods_by_model(["lora-a"])
        assert [p.key for p in listing.items] == [TRAINER]
        pod_paths = {path for verb, path, _ in fake_kube.requests if "pods" in path}
        assert pod_paths == {"/api/v1/namespaces/openrl/pods"}

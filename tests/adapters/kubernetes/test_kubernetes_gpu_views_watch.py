"""The GPU views through the real watch cache: watch events and a 410 relist keep them
equal to views built from scratch over the same stores, and a snapshot already taken
does not move."""

from __future__ import annotations

from pathlib import Path

import pytest
from openrl_inspect.adapters.kubernetes import GpuSnapshot, KubernetesCacheSource
from openrl_inspect.adapters.kubernetes._view import ClusterView
from support import kube_objects
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import eventually, synced_source, unstarted_source

__all__ = ["fake_kube"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio


def rebuilt(source: KubernetesCacheSource) -> GpuSnapshot:
    v = source.view
    fresh = ClusterView(
        pods=v.pods, nodes=v.nodes, slices=v.slices, claims=v.claims, taint_rules=v.taint_rules
    )
    return fresh.gpu_snapshot()


def same(a: GpuSnapshot, b: GpuSnapshot) -> bool:
    return (dict(a.nodes), a.total, a.by_product, a.node_count) == (
        dict(b.nodes), b.total, b.by_product, b.node_count,
    )  # fmt: skip


async def test_watch_events_and_a_relist_keep_the_views(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path) as source:
        first = source.view.gpu_snapshot()
        assert same(first, rebuilt(source)) and first.total.held == 8
        held = first.total.held

        # Watch events: the claim goes (8 GPUs free again), a new node appears.
        fake_kube.delete(kube_objects.allocated_claim())
        fake_kube.put(kube_objects.node("gpu-h100-2"))
        await eventually(lambda: source.view.gpu_snapshot().total.held == 0, what="claim gone")
        await eventually(lambda: "gpu-h100-2" in source.view.gpu_snapshot().nodes, what="node")
        assert first.total.held == held  # the snapshot taken before did not move
        assert same(source.view.gpu_snapshot(), rebuilt(source))

        # Changes the watch never delivers: the history is compacted, the informers
        # relist (410) and the views follow the relist's upserts and deletes.
        fake_kube.expire_history()
        fake_kube.put(kube_objects.allocated_claim(), kube_objects.h100_slice("gpu-h100-2"))
        await eventually(
            lambda: (
                source.view.gpu_snapshot().total.held == 8
                and len(source.view.gpu_snapshot().gpus_on("gpu-h100-2")) == 8
            ),
            what="relisted",
        )
        assert same(source.view.gpu_snapshot(), rebuilt(source))


async def test_before_the_sync_the_views_come_from_direct_reads(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with unstarted_source(fake_kube, tmp_path) as source:
        early = await source.gpu_views()
        # Every kind was read directly, and the answer says so.
        assert early.degraded == {"nodes", "pods", "resourceslices", "resourceclaims",
                                  "devicetaintrules"}  # fmt: skip
        assert early.snapshot.total.held == 8 and early.snapshot.node_count == 3
        await source.start()
        assert await source.wait_synced(10)
        synced = await source.gpu_views()
        assert synced.degraded == frozenset() and same(synced.snapshot, early.snapshot)

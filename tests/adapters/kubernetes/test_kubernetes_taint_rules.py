"""DeviceTaintRules through the real adapter and ``FakeKube``: the version discovered apart
from the slices', the watch keeping GPUs' taints current, and clusters not serving them."""

from __future__ import annotations

from pathlib import Path

import pytest
from openrl_inspect.adapters.kubernetes import DeviceKey, KubernetesCacheSource
from support import kube_health_objects, kube_objects
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import eventually, synced_source, unstarted_source

__all__ = ["fake_kube"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

GPU6 = DeviceKey("gpu.nvidia.com", "gpu-h100-1", "gpu-6")


def rule_paths(fake: FakeKube) -> set[str]:
    return {path for verb, path, _ in fake.requests if path.endswith("/devicetaintrules")}


async def unhealthy(source: KubernetesCacheSource) -> list[str]:
    listing = await source.list_gpus(node_name="gpu-h100-1")
    return [g.device for g in listing.items if not g.healthy]


async def test_rules_taint_gpus_and_follow_the_watch(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(
        *kube_objects.cluster(),
        kube_health_objects.tainted_slice(),
        kube_health_objects.taint_rule(version="v1"),
    )
    async with synced_source(fake_kube, tmp_path) as source:
        assert rule_paths(fake_kube) == {"/apis/resource.k8s.io/v1/devicetaintrules"}
        assert await unhealthy(source) == ["gpu-3", "gpu-6"]
        (gpu,) = await source.gpus_by_device([GPU6])
        assert gpu is not None and [t.rule for t in gpu.taints] == ["drain-gpu-h100-1-gpu-6"]

        wider = kube_health_objects.taint_rule(
            "drain-gpu-0", selector={"pool": "gpu-h100-1", "device": "gpu-0"}
        )
        fake_kube.put(wider)

        async def added() -> bool:
            return await unhealthy(source) == ["gpu-0", "gpu-3", "gpu-6"]

        await eventually(added, what="a rule ADDED through the watch")
        fake_kube.delete(kube_health_objects.taint_rule(version="v1"))

        async def deleted() -> bool:
            return await unhealthy(source) == ["gpu-0", "gpu-3"]

        await eventually(deleted, what="a rule DELETED through the watch")


async def test_rules_served_only_in_alpha_are_found(fake_kube: FakeKube, tmp_path: Path) -> None:
    """As on 1.33-1.35 with the gate on: slices in v1, rules only in v1alpha3."""
    fake_kube.served["resource.k8s.io"] = ("v1", "v1beta2", "v1alpha3")
    fake_kube.only_versions["devicetaintrules"] = ("v1alpha3",)
    fake_kube.put(*kube_objects.cluster(), kube_health_objects.taint_rule())
    async with synced_source(fake_kube, tmp_path) as source:
        assert rule_paths(fake_kube) == {"/apis/resource.k8s.io/v1alpha3/devicetaintrules"}
        slices = {p for _, p, _ in fake_kube.requests if p.endswith("/resourceslices")}
        assert slices == {"/apis/resource.k8s.io/v1/resourceslices"}
        assert await unhealthy(source) == ["gpu-6"]


async def test_a_cluster_without_rules_still_answers(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.only_versions["devicetaintrules"] = ("v1alpha3",)  # not served: gate off
    fake_kube.put(*kube_objects.cluster(), kube_health_objects.tainted_slice())
    async with synced_source(fake_kube, tmp_path) as source:
        status = (await source.status()).kind("devicetaintrules")
        assert status is not None and not status.served and not status.degraded
        listing = await source.list_gpus(node_name="gpu-h100-1")
        assert not listing.degraded and [g.device for g in listing.items if not g.healthy] == [
            "gpu-3"
        ]
        assert rule_paths(fake_kube) == set()


async def test_a_direct_read_applies_rules_too(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster(), kube_health_objects.taint_rule(version="v1"))
    async with unstarted_source(fake_kube, tmp_path) as source:
        listing = await source.list_gpus(node_name="gpu-h100-1")
        assert listing.degraded
        assert [g.device for g in listing.items if not g.healthy] == ["gpu-6"]
        assert source.direct_reads["devicetaintrules"] == 1

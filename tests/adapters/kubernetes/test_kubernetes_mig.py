"""MIG slices as NVIDIA's DRA driver publishes them: parsed by release, counted apart from
whole GPUs (a partitioned GPU once), inheriting their GPU's taints; through the twin's
GPU views and, at the end, the official client at ``FakeKube``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openrl_inspect.adapters.kubernetes import (
    CapacityCounts,
    DeviceKey,
    GpuDevice,
    NodeRecord,
    TaintRuleRecord,
    node_capacity,
)
from openrl_inspect.adapters.kubernetes._dra import parse_claim, parse_slice, parse_taint_rule
from openrl_inspect.adapters.kubernetes._pods import parse_node
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource, parse_object
from support import kube_health_objects, kube_mig_objects, kube_objects
from support.client_models import roundtrip
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import synced_source

__all__ = ["fake_kube"]  # the fixture, used by name below

NODE = "gke-rl-a3-mig-pool-1-k2v7"
DRIVER = kube_mig_objects.DRIVER


def devices(obj: dict[str, Any]) -> list[GpuDevice]:
    rec = parse_slice(obj)
    assert rec is not None
    return list(rec.devices)


def node() -> NodeRecord:
    rec = parse_node(kube_objects.node(NODE, gpus=4))
    assert rec is not None
    return rec


def names(gpus: list[GpuDevice], minors: dict[int, int]) -> set[DeviceKey]:
    """The keys of the first ``n`` slices of each GPU ``minor``: ``{minor: n}``."""
    return {
        DeviceKey(DRIVER, NODE, kube_mig_objects.slice_name(m, layout))
        for m, n in minors.items()
        for layout in kube_mig_objects.LAYOUT[:n]
    }


@pytest.mark.parametrize(
    ("release", "version", "first"),
    [
        ("25.12", "v1", "gpu-0-mig-2g20gb-14-0"),
        ("25.8", "v1", "gpu-0-mig-14-0-2"),
        ("25.3", "v1beta1", "gpu-0-mig-14-0-2"),
    ],
)
def test_slices_are_parsed_by_release(release: str, version: str, first: str) -> None:
    obj = kube_mig_objects.static_mig_slice(NODE, release=release, version=version)
    roundtrip(obj, f"{version.capitalize()}ResourceSlice")
    gpus = devices(obj)
    assert len(gpus) == 16 and all(g.is_slice for g in gpus)
    slice0 = gpus[0]
    assert slice0.device == first and slice0.parent_device == "gpu-0"
    assert slice0.profile == "2g.20gb" and slice0.device_type == "mig"
    assert slice0.parent_uuid == kube_mig_objects.gpu_uuid(NODE, 0)
    assert slice0.gpu_id == (NODE, kube_mig_objects.gpu_uuid(NODE, 0))
    assert slice0.product_name == kube_mig_objects.H100
    assert slice0.memory_bytes == 20096 * 2**20
    assert slice0.minor is None  # a slice has no minor of its own
    # The PCI address: resource.kubernetes.io/pciBusID from 25.12, pcieBusID before,
    # none in 25.3.
    assert slice0.pci_bus_id == (None if release == "25.3" else "0000:18:00.0")
    assert {g.profile for g in gpus} == {"2g.20gb", "1g.10gb"}


def test_a_whole_gpu_without_minor_gets_it_from_its_name() -> None:
    (gpu,) = [d for d in devices(kube_mig_objects.dynamic_slice(NODE, 1)) if not d.is_slice]
    assert gpu.minor == 0 and gpu.index is None and gpu.pci_bus_id == "0000:18:00.0"
    assert not gpu.is_slice and gpu.parent_device is None
    (old,) = [d for d in devices(kube_objects.h100_slice()) if d.device == "gpu-3"]
    assert old.minor == 3 and old.index == 3  # the attributes, when published


def test_a_partitioned_node_counts_its_gpus_once_and_its_slices_apart() -> None:
    """4 GPUs cut into 16 slices: 8 slices held on 3 GPUs (4, 3 and 1), the 4th GPU
    all free. A GPU with any slice held is held: it cannot be given whole."""
    gpus = devices(kube_mig_objects.static_mig_slice(NODE))
    held = names(gpus, {0: 4, 1: 3, 2: 1})
    cap = node_capacity(NODE, node(), gpus, held)
    assert cap.counts == CapacityCounts(total=4, held=3, free=1)
    assert cap.slices == CapacityCounts(total=16, held=8, free=8)
    assert cap.partitioned == 4 and cap.product == kube_mig_objects.H100


def test_a_tainted_slice_makes_its_gpu_unhealthy_held_or_not() -> None:
    xid = {"key": "gpu.nvidia.com/xid", "value": "94", "effect": "NoSchedule"}
    obj = kube_mig_objects.static_mig_slice(NODE, 2)
    obj["spec"]["devices"][5]["taints"] = [xid]  # GPU 1's second slice
    gpus = devices(obj)
    cap = node_capacity(NODE, node(), gpus, set())
    assert cap.counts == CapacityCounts(total=2, free=1, unhealthy=1)
    assert cap.slices == CapacityCounts(total=8, free=7, unhealthy=1)
    held = names(gpus, {1: 1})
    cap = node_capacity(NODE, node(), gpus, held)
    assert cap.counts == CapacityCounts(total=2, held=1, free=1, unhealthy=1, unhealthy_held=1)
    assert cap.slices == CapacityCounts(total=8, held=1, free=6, unhealthy=1)


def test_dynamic_mig_counts_the_published_gpu_once_with_its_slices() -> None:
    """The driver publishes GPU 0 and its slices: one slice held, the GPU is not free."""
    gpus = devices(kube_mig_objects.dynamic_slice(NODE, 2))
    assert len(gpus) == 10
    held = names(gpus, {0: 1})
    cap = node_capacity(NODE, node(), gpus, held)
    assert cap.counts == CapacityCounts(total=2, held=1, free=1)
    assert cap.slices == CapacityCounts(total=8, held=1, free=7)
    assert cap.partitioned == 2


def rule(name: str, device: str) -> TaintRuleRecord:
    obj = kube_health_objects.taint_rule(
        name, selector={"driver": DRIVER, "pool": NODE, "device": device}
    )
    rec = parse_taint_rule(obj)
    assert rec is not None
    return rec


def test_slices_inherit_their_gpus_taints() -> None:
    """Dynamic MIG: a rule on gpu-1 reaches its slices. Static MIG: a rule naming the
    GPU (not published) reaches its slices too. Marked inherited, from the GPU."""
    twin = MemoryKubernetesSource()
    for obj in (kube_mig_objects.dynamic_slice(NODE, 2), kube_objects.node(NODE, gpus=2)):
        record = parse_object(obj)
        assert record is not None
        twin.put(record)
    twin.put(rule("drain-gpu-1", "gpu-1"))
    snap = twin.view.gpu_snapshot()
    sick = [g for g in snap.gpus_on(NODE) if not g.healthy]
    assert [g.device for g in sick] == ["gpu-1", *sorted(g.device for g in sick[1:])]
    assert len(sick) == 5 and all(g.device.startswith("gpu-1") for g in sick)
    inherited = [t for g in sick if g.is_slice for t in g.taints]
    assert {(t.rule, t.inherited_from) for t in inherited} == {("drain-gpu-1", "gpu-1")}
    capacity = snap.node_capacity(NODE)
    assert capacity is not None
    assert capacity.counts == CapacityCounts(total=2, free=1, unhealthy=1)
    assert capacity.slices == CapacityCounts(total=8, free=4, unhealthy=4)

    static = MemoryKubernetesSource()
    record = parse_object(kube_mig_objects.static_mig_slice(NODE, 2))
    assert record is not None
    static.put(record, rule("xid79-gpu-0", "gpu-0"))
    gpus = static.view.gpu_index().by_node[NODE]
    assert [g.healthy for g in gpus] == [False] * 4 + [True] * 4
    assert {t.inherited_from for g in gpus[:4] for t in g.taints} == {"gpu-0"}


def test_a_vfio_device_counts_with_the_gpu_at_its_address() -> None:
    obj = kube_mig_objects.dynamic_slice(NODE, 1)
    whole = obj["spec"]["devices"][0]
    vfio = {
        "name": "gpu-vfio-0",
        "attributes": {
            "type": {"string": "vfio"},
            "uuid": {"string": "6b0f2c44-6a1d-5c8e-9e1a-3f7d2b8c9a01"},
            "productName": {"string": kube_mig_objects.H100},
            "pcieBusID": {
                "string": whole["attributes"]["resource.kubernetes.io/pciBusID"]["string"]
            },
        },
        "capacity": {"addressableMemory": {"value": "80Gi"}},
    }
    obj["spec"]["devices"] = [whole, vfio]
    vfio_device = next(g for g in devices(obj) if g.device_type == "vfio")
    cap = node_capacity(NODE, node(), devices(obj), {vfio_device.key})
    assert cap.counts == CapacityCounts(total=1, held=1)


def test_mig_claims_parse() -> None:
    gpus = devices(kube_mig_objects.static_mig_slice(NODE, 1))
    obj = kube_mig_objects.mig_claim("eval-0-mig", "eval", "eval-0", NODE, [gpus[0].device])
    roundtrip(obj, "ResourceV1ResourceClaim")
    claim = parse_claim(obj)
    assert claim is not None and claim.devices[0].key == gpus[0].key
    assert claim.requests[0].device_class == "mig.nvidia.com"


@pytest.mark.anyio
async def test_slices_through_the_api_server(fake_kube: FakeKube, tmp_path: Path) -> None:
    published = kube_mig_objects.static_mig_slice(NODE, release="25.3", version="v1beta1")
    gpus = devices(published)
    fake_kube.put(
        kube_objects.node(NODE, gpus=4),
        published,
        kube_mig_objects.mig_claim(
            "eval-0-mig", "eval", "eval-0", NODE, [g.device for g in gpus[:5]]
        ),
    )
    async with synced_source(fake_kube, tmp_path) as source:
        views = await source.gpu_views()
        assert views.snapshot.total == CapacityCounts(total=4, held=2, free=2)
        assert views.snapshot.slices == CapacityCounts(total=16, held=5, free=11)
        assert views.snapshot.partitioned == 4
        (product,) = views.snapshot.by_product
        assert (product.counts.total, product.slices.total, product.partitioned) == (4, 16, 4)

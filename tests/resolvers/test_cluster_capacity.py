"""GPU capacity buckets: every GPU in exactly one of held, free, tainted and
unhealthy-not-held; an unhealthy GPU is counted unhealthy whether held or not."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, strategies
from openrl_inspect.adapters.kubernetes import GpuDevice, NodeRecord, PodRecord, Taint
from openrl_inspect.adapters.kubernetes._dra import parse_slice
from openrl_inspect.adapters.kubernetes._pods import parse_node, parse_pod
from openrl_inspect.resolvers.cluster.counting import (
    CapacityCounts,
    by_product,
    node_capacity,
    node_condition,
)
from support import kube_objects


def node(**changes: Any) -> NodeRecord:
    rec = parse_node(kube_objects.node("gpu-h100-1"))
    assert rec is not None
    return replace(rec, **changes)


def devices(name: str = "gpu-h100-1", **kw: Any) -> list[GpuDevice]:
    rec = parse_slice(kube_objects.resource_slice(name, **kw))
    assert rec is not None
    return list(rec.devices)


def test_dra_node_counts_held_and_free() -> None:
    gpus = devices()
    cap = node_capacity("gpu-h100-1", node(), gpus, {g.key for g in gpus[:3]})
    assert (cap.basis, cap.condition, cap.product) == ("dra", "ok", kube_objects.H100)
    assert cap.counts == CapacityCounts(total=8, held=3, free=5)


def test_the_usual_gpu_taint_does_not_block_but_others_do() -> None:
    assert node_condition(node()) == "ok"  # nvidia.com/gpu:NoSchedule, tolerated by GPU pods
    maintenance = Taint("maintenance", "NoSchedule")
    assert node_condition(node(taints=(maintenance,))) == "tainted"
    assert node_condition(node(taints=(Taint("soft", "PreferNoSchedule"),))) == "ok"
    assert node_condition(node(unschedulable=True)) == "tainted"
    assert node_condition(node(ready=False)) == "unhealthy"
    unreachable = Taint("node.kubernetes.io/unreachable", "NoExecute")
    assert node_condition(node(taints=(unreachable,))) == "unhealthy"
    assert node_condition(None) == "unhealthy"


def test_held_gpus_stay_held_on_a_broken_node_and_count_unhealthy() -> None:
    gpus = devices()
    held = {g.key for g in gpus[:2]}
    sick = node_capacity("gpu-h100-1", node(ready=False), gpus, held)
    assert sick.counts == CapacityCounts(total=8, held=2, unhealthy=8, unhealthy_held=2)
    cordoned = node_capacity("gpu-h100-1", node(unschedulable=True), gpus, held)
    assert cordoned.counts == CapacityCounts(total=8, held=2, tainted=6)


def _plugin_pod(name: str, gpus: int, phase: str = "Running") -> PodRecord:
    obj = kube_objects.pod(
        name, model_id="m", node_name="gpu-h100-1", claim_template=None, gpus=gpus, phase=phase
    )
    rec = parse_pod(obj)
    assert rec is not None
    return rec


def test_device_plugin_node_counts_from_requests_and_allocatable() -> None:
    pods = [_plugin_pod("a", 4), _plugin_pod("b", 1), _plugin_pod("done", 2, phase="Succeeded")]
    cap = node_capacity("gpu-h100-1", node(gpu_allocatable=7), [], set(), pods)
    assert cap.basis == "device-plugin" and cap.product == "NVIDIA-H100-80GB-HBM3"
    # one GPU reported unhealthy by the device plugin (capacity 8, allocatable 7)
    assert cap.counts == CapacityCounts(total=8, held=5, free=2, unhealthy=1)
    cpu = node_capacity("cpu-1", node(gpu_capacity=0, gpu_allocatable=0), [], set())
    assert cpu.basis == "none" and cpu.counts == CapacityCounts()


def test_by_product_splits_a_mixed_cluster() -> None:
    h100, h200 = devices(), devices("gpu-h200-1", product=kube_objects.H200)
    held = {h100[0].key, h200[0].key, h200[1].key}
    caps = [
        node_capacity("gpu-h100-1", node(), h100, held),
        node_capacity("gpu-h200-1", node(name="gpu-h200-1", ready=False), h200, held),
    ]
    conditions = {c.node: c.condition for c in caps}
    products = {p.product: p for p in by_product(caps, h100 + h200, held, conditions)}
    assert products[kube_objects.H100].counts == CapacityCounts(total=8, held=1, free=7)
    assert products[kube_objects.H200].counts == CapacityCounts(
        total=8, held=2, unhealthy=8, unhealthy_held=2
    )
    assert products[kube_objects.H200].nodes == 1


@given(
    strategies.integers(0, 16),
    strategies.integers(0, 20),
    strategies.sampled_from(["ok", "ready-false", "cordoned"]),
)
def test_buckets_always_partition_the_total(count: int, held_n: int, state: str) -> None:
    gpus = devices(count=count) if count else []
    rec = {"ok": node(), "ready-false": node(ready=False), "cordoned": node(unschedulable=True)}[
        state
    ]
    c = node_capacity("gpu-h100-1", rec, gpus, {g.key for g in gpus[:held_n]}).counts
    assert c.total == c.held + c.free + c.tainted + c.unhealthy - c.unhealthy_held
    assert c.held == min(held_n, count)
    assert c.unhealthy_held == (c.held if state == "ready-false" else 0)

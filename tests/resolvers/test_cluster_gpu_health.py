"""Tainted DRA devices in the capacity counts: unhealthy, never free, in node and product
capacity; a held one stays held and counts unhealthy too. (Cluster capacity: tests/api/test_gpu_health_api.py.)"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, strategies
from openrl_inspect.adapters.kubernetes import GpuDevice, NodeRecord
from openrl_inspect.adapters.kubernetes._dra import parse_slice
from openrl_inspect.adapters.kubernetes._pods import parse_node
from openrl_inspect.resolvers.cluster.counting import CapacityCounts, by_product, node_capacity
from support import kube_health_objects, kube_objects


def _node(name: str = "gpu-h100-1", **kw: Any) -> NodeRecord:
    rec = parse_node(kube_objects.node(name, **kw))
    assert rec is not None
    return rec


def _gpus(obj: dict[str, Any]) -> list[GpuDevice]:
    rec = parse_slice(obj)
    assert rec is not None
    return list(rec.devices)


def test_tainted_gpus_are_unhealthy_not_free() -> None:
    gpus = _gpus(kube_health_objects.tainted_slice())  # gpu-3 NoSchedule, gpu-5 effect None
    cap = node_capacity("gpu-h100-1", _node(), gpus, set())
    assert cap.counts == CapacityCounts(total=8, free=7, unhealthy=1)


def test_a_held_tainted_gpu_stays_held_and_counts_unhealthy() -> None:
    gpus = _gpus(kube_health_objects.tainted_slice())
    held = {g.key for g in gpus if g.device in ("gpu-3", "gpu-0")}
    cap = node_capacity("gpu-h100-1", _node(), gpus, held)
    assert cap.counts == CapacityCounts(total=8, held=2, free=6, unhealthy=1, unhealthy_held=1)


def test_on_a_cordoned_node_tainted_gpus_are_still_unhealthy() -> None:
    gpus = _gpus(kube_health_objects.tainted_slice())
    cap = node_capacity("gpu-h100-1", replace(_node(), unschedulable=True), gpus, set())
    assert cap.counts == CapacityCounts(total=8, unhealthy=1, tainted=7)


def test_by_product_counts_each_tainted_gpu() -> None:
    h100, h200 = _gpus(kube_health_objects.tainted_slice()), _gpus(kube_objects.h200_slice())
    caps = [
        node_capacity("gpu-h100-1", _node(), h100, set()),
        node_capacity("gpu-h200-1", _node("gpu-h200-1", product=kube_objects.H200), h200, set()),
    ]
    conditions = {c.node: c.condition for c in caps}
    products = {p.product: p.counts for p in by_product(caps, h100 + h200, set(), conditions)}
    assert products[kube_objects.H100] == CapacityCounts(total=8, free=7, unhealthy=1)
    assert products[kube_objects.H200] == CapacityCounts(total=8, free=8)


@given(
    strategies.sets(strategies.integers(0, 7)),
    strategies.sets(strategies.integers(0, 7)),
    strategies.booleans(),
)
def test_buckets_partition_with_taints(tainted: set[int], held_i: set[int], ready: bool) -> None:
    taints = {i: [kube_health_objects.xid_taint(79)] for i in tainted}
    gpus = _gpus(kube_health_objects.tainted_slice(taints=taints))
    held = {g.key for g in gpus if g.index in held_i}
    c = node_capacity("gpu-h100-1", _node(ready=ready), gpus, held).counts
    assert c.total == c.held + c.free + c.tainted + c.unhealthy - c.unhealthy_held == 8
    assert c.held == len(held_i)
    assert c.unhealthy == (len(tainted) if ready else 8)
    assert c.unhealthy_held == (len(held_i & tainted) if ready else len(held_i))
    assert c.free == (8 - len(held_i | tainted) if ready else 0)

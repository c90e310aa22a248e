"""GPU capacity per node and per GPU product: total, held, free, unhealthy, tainted.

Every GPU counts in exactly one bucket, so ``total = held + free + unhealthy + tainted``:

- ``held``: allocated to a ResourceClaim (DRA), or requested by a pod on the node
  (device plugin), whatever the node's state;
- ``unhealthy``: not held, and its node is not Ready (or gone), or the device plugin
  reports it unhealthy (capacity above allocatable), or its DRA device carries a
  NoSchedule / NoExecute taint (from its driver or a DeviceTaintRule), which keeps new
  claims off it;
- ``tainted``: not held, on a Ready node that is cordoned or carries a NoSchedule /
  NoExecute taint other than the usual ``nvidia.com/gpu`` one that GPU pods tolerate;
- ``free``: the rest: schedulable now.

A held GPU stays ``held`` even when tainted: its claim keeps it until a NoExecute taint
evicts the pods (``Gpu.health`` says it is unhealthy all the same).

GPUs are the devices NVIDIA's DRA driver publishes in ResourceSlices (``basis`` ``dra``);
a node with none but an ``nvidia.com/gpu`` capacity is counted from the device plugin's
numbers and its pods' requests (``basis`` ``device-plugin``).

The counting lives in the adapter because the watch cache keeps these counts up to date
per event (``_gpu_views``); ``resolvers.cluster.counting`` re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes._devices import GpuDevice
from openrl_inspect.adapters.kubernetes._records import DeviceKey, NodeRecord, PodRecord

GPU_TAINT = "nvidia.com/gpu"
UNHEALTHY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
PRODUCT_LABEL = "nvidia.com/gpu.product"


@dataclass(frozen=True, slots=True)
class CapacityCounts:
    total: int = 0
    held: int = 0
    free: int = 0
    unhealthy: int = 0
    tainted: int = 0

    def __add__(self, other: CapacityCounts) -> CapacityCounts:
        return CapacityCounts(
            self.total + other.total,
            self.held + other.held,
            self.free + other.free,
            self.unhealthy + other.unhealthy,
            self.tainted + other.tainted,
        )

    def __sub__(self, other: CapacityCounts) -> CapacityCounts:
        return CapacityCounts(
            self.total - other.total,
            self.held - other.held,
            self.free - other.free,
            self.unhealthy - other.unhealthy,
            self.tainted - other.tainted,
        )


@dataclass(frozen=True, slots=True)
class NodeCapacity:
    node: str
    product: str | None
    basis: str  # dra | device-plugin | none
    counts: CapacityCounts
    condition: str  # ok | unhealthy | tainted


@dataclass(frozen=True, slots=True)
class ProductCapacity:
    product: str
    nodes: int
    counts: CapacityCounts


@dataclass(frozen=True, slots=True)
class ClusterCapacity:
    total: CapacityCounts
    by_product: tuple[ProductCapacity, ...]
    nodes: int
    degraded: bool
    truncated: bool


def node_condition(node: NodeRecord | None) -> str:
    """``unhealthy`` (not Ready, unreachable, or unknown to the API server), ``tainted``
    (cordoned or tainted against new pods) or ``ok``."""
    if node is None or node.ready is False:
        return "unhealthy"
    if any(t.key in UNHEALTHY_TAINTS for t in node.taints):
        return "unhealthy"
    if node.unschedulable:
        return "tainted"
    if any(t.effect in BLOCKING_EFFECTS and t.key != GPU_TAINT for t in node.taints):
        return "tainted"
    return "ok"


def split(total: int, held: int, broken: int, condition: str) -> CapacityCounts:
    held = min(held, total)
    rest = total - held
    broken = min(broken, rest)
    rest -= broken
    if condition == "unhealthy":
        return CapacityCounts(total, held, 0, broken + rest, 0)
    if condition == "tainted":
        return CapacityCounts(total, held, 0, broken, rest)
    return CapacityCounts(total, held, rest, broken, 0)


def _holding(pods: Iterable[PodRecord]) -> int:
    return sum(p.gpu_request for p in pods if p.phase not in ("Succeeded", "Failed"))


def node_capacity(
    name: str,
    node: NodeRecord | None,
    gpus: Sequence[GpuDevice],
    held: set[DeviceKey],
    pods: Sequence[PodRecord] = (),
) -> NodeCapacity:
    """One node's counts from its DRA devices (``held``: the allocated device keys), or
    from the device plugin's capacity and ``pods``' requests when it publishes none."""
    condition = node_condition(node)
    label = node.labels.get(PRODUCT_LABEL) if node is not None else None
    if gpus:
        products = sorted({g.product_name for g in gpus if g.product_name})
        held_here = sum(1 for g in gpus if g.key in held)
        broken = sum(1 for g in gpus if g.key not in held and not g.healthy)
        counts = split(len(gpus), held_here, broken, condition)
        return NodeCapacity(name, products[0] if products else label, "dra", counts, condition)
    capacity = (node.gpu_capacity or node.gpu_allocatable or 0) if node is not None else 0
    if capacity <= 0:
        return NodeCapacity(name, label, "none", CapacityCounts(), condition)
    allocatable = node.gpu_allocatable if node is not None else None
    broken = capacity - allocatable if allocatable is not None else 0
    counts = split(capacity, _holding(pods), max(0, broken), condition)
    return NodeCapacity(name, label, "device-plugin", counts, condition)


def by_product(
    nodes: Iterable[NodeCapacity],
    gpus: Sequence[GpuDevice],
    held: set[DeviceKey],
    conditions: dict[str, str],
) -> tuple[ProductCapacity, ...]:
    """Counts per GPU product: DRA devices one by one (a node may mix products),
    device-plugin nodes by their product label."""
    totals: dict[str, CapacityCounts] = {}
    node_sets: dict[str, set[str]] = {}
    for gpu in gpus:
        product = gpu.product_name or "unknown"
        condition = conditions.get(gpu.node_name or "", "unhealthy")
        one = split(1, 1 if gpu.key in held else 0, 0 if gpu.healthy else 1, condition)
        totals[product] = totals.get(product, CapacityCounts()) + one
        node_sets.setdefault(product, set()).add(gpu.node_name or "")
    for cap in nodes:
        if cap.basis != "device-plugin":
            continue
        product = cap.product or "unknown"
        totals[product] = totals.get(product, CapacityCounts()) + cap.counts
        node_sets.setdefault(product, set()).add(cap.node)
    return tuple(
        ProductCapacity(product, len(node_sets[product]), totals[product])
        for product in sorted(totals)
    )

"""GPU capacity per node and per GPU product: total, held, free, unhealthy, tainted.

Whole GPUs and MIG slices are counted apart. A GPU partitioned into MIG slices is one
GPU (``partitioned`` counts them) and its slices are counted again, as slices: a node of
4 GPUs cut into 16 slices has 4 GPUs and 16 slices, never 16 GPUs. A partitioned GPU is
held when any of its slices is (it cannot be given whole), unhealthy when its GPU or any
slice is tainted, free only when every slice is.

Every GPU (and every slice) counts in exactly one of ``held``, ``free``, ``tainted`` and
unhealthy-and-not-held, so ``total = held + free + tainted + unhealthy - unhealthy_held``:

- ``held``: allocated to a ResourceClaim (DRA), or requested by a pod on the node
  (device plugin), whatever the node's state;
- ``unhealthy``: held or not, its node is not Ready (or gone), or the device plugin
  reports it unhealthy (capacity above allocatable), or its DRA device carries a
  NoSchedule / NoExecute taint (from its driver or a DeviceTaintRule), which keeps new
  claims off it; ``unhealthy_held`` says how many of them are held (and in ``held`` too);
- ``tainted``: not held, on a Ready node that is cordoned or carries a NoSchedule /
  NoExecute taint other than the usual ``nvidia.com/gpu`` one that GPU pods tolerate;
- ``free``: the rest: schedulable now.

A held GPU that turns unhealthy stays ``held`` (its claim keeps it until a NoExecute taint
evicts the pods) and is counted ``unhealthy`` as well: a tainted GPU under a model is what
the diagnosis names GPU_UNHEALTHY, and a count of unhealthy GPUs that left it out read 0
while the cluster grid showed it red.

GPUs are the devices NVIDIA's DRA driver publishes in ResourceSlices (``basis`` ``dra``);
a node with none but an ``nvidia.com/gpu`` capacity is counted from the device plugin's
numbers and its pods' requests (``basis`` ``device-plugin``).

The counting lives in the adapter because the watch cache keeps these counts up to date
per event (``_gpu_views``); ``resolvers.cluster.counting`` re-exports it.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field

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
    unhealthy_held: int = 0  # of ``unhealthy``, held (so in ``held`` too)

    def __add__(self, other: CapacityCounts) -> CapacityCounts:
        return CapacityCounts(
            self.total + other.total,
            self.held + other.held,
            self.free + other.free,
            self.unhealthy + other.unhealthy,
            self.tainted + other.tainted,
            self.unhealthy_held + other.unhealthy_held,
        )

    def __sub__(self, other: CapacityCounts) -> CapacityCounts:
        return CapacityCounts(
            self.total - other.total,
            self.held - other.held,
            self.free - other.free,
            self.unhealthy - other.unhealthy,
            self.tainted - other.tainted,
            self.unhealthy_held - other.unhealthy_held,
        )


NO_COUNTS = CapacityCounts()


@dataclass(frozen=True, slots=True)
class GpuCounts:
    """Whole GPUs (a partitioned one once), MIG slices, and how many GPUs are partitioned."""

    gpus: CapacityCounts = NO_COUNTS
    slices: CapacityCounts = NO_COUNTS
    partitioned: int = 0

    def __add__(self, other: GpuCounts) -> GpuCounts:
        return GpuCounts(
            self.gpus + other.gpus, self.slices + other.slices, self.partitioned + other.partitioned
        )

    def __sub__(self, other: GpuCounts) -> GpuCounts:
        return GpuCounts(
            self.gpus - other.gpus, self.slices - other.slices, self.partitioned - other.partitioned
        )


@dataclass(frozen=True, slots=True)
class NodeCapacity:
    node: str
    product: str | None
    basis: str  # dra | device-plugin | none
    counts: CapacityCounts  # whole GPUs
    condition: str  # ok | unhealthy | tainted
    slices: CapacityCounts = NO_COUNTS  # MIG slices
    partitioned: int = 0  # GPUs partitioned into MIG slices (counted in ``counts`` once)

    @property
    def tally(self) -> GpuCounts:
        return GpuCounts(self.counts, self.slices, self.partitioned)


@dataclass(frozen=True, slots=True)
class ProductCapacity:
    product: str
    nodes: int
    counts: CapacityCounts
    slices: CapacityCounts = NO_COUNTS
    partitioned: int = 0


@dataclass(frozen=True, slots=True)
class ClusterCapacity:
    total: CapacityCounts
    by_product: tuple[ProductCapacity, ...]
    nodes: int
    degraded: bool
    truncated: bool
    slices: CapacityCounts = field(default=NO_COUNTS)
    partitioned: int = 0


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
    """``total`` GPUs of one node, ``held`` of them held and ``broken`` reported
    unhealthy (held or not), into the buckets.

    Which of the broken ones are held is known for a DRA device (called one GPU at a
    time); for the device plugin's counts it is not, and the broken are taken to be the
    unheld ones first (the device plugin takes an unhealthy GPU out of allocatable, so
    no new pod gets it): ``unhealthy_held`` is then a lower bound.
    """
    held = min(held, total)
    broken = min(broken, total)
    broken_free = min(broken, total - held)
    broken_held = broken - broken_free
    rest = total - held - broken_free
    if condition == "unhealthy":
        return CapacityCounts(total, held, 0, total, 0, held)
    if condition == "tainted":
        return CapacityCounts(total, held, 0, broken, rest, broken_held)
    return CapacityCounts(total, held, rest, broken, 0, broken_held)


def _holding(pods: Iterable[PodRecord]) -> int:
    return sum(p.gpu_request for p in pods if p.phase not in ("Succeeded", "Failed"))


def physical_gpus(gpus: Iterable[GpuDevice]) -> list[list[GpuDevice]]:
    """The devices grouped by the GPU they are on, in first-seen order: a whole GPU, a
    partitioned GPU's MIG slices (with the GPU itself when its driver publishes it too:
    dynamic MIG), and a passthrough (``vfio``) device with the GPU at its PCI address."""
    gpus = list(gpus)
    by_bus = {
        (g.pool, g.pci_bus_id): g.gpu_id
        for g in gpus
        if g.device_type == "gpu" and g.pci_bus_id
    }  # fmt: skip
    groups: dict[tuple[str, str], list[GpuDevice]] = {}
    for g in gpus:
        key = g.gpu_id
        if g.device_type == "vfio" and g.pci_bus_id:
            key = by_bus.get((g.pool, g.pci_bus_id), key)
        groups.setdefault(key, []).append(g)
    return list(groups.values())


def count_gpus(
    gpus: Iterable[GpuDevice], held: Container[DeviceKey], condition: str
) -> dict[str, GpuCounts]:
    """One node's DRA devices (or a product's on one node) counted by product: each
    physical GPU once, each MIG slice as a slice (see the module doc)."""
    out: dict[str, GpuCounts] = {}
    for devices in physical_gpus(gpus):
        product = next((d.product_name for d in devices if d.product_name), None) or "unknown"
        taken = any(d.key in held for d in devices)
        broken = any(not d.healthy for d in devices)
        whole = split(1, int(taken), int(broken), condition)
        slices, parts = NO_COUNTS, [d for d in devices if d.is_slice]
        for part in parts:
            slices = slices + split(1, int(part.key in held), int(not part.healthy), condition)
        out[product] = out.get(product, GpuCounts()) + GpuCounts(whole, slices, int(bool(parts)))
    return out


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
        tally = sum(count_gpus(gpus, held, condition).values(), GpuCounts())
        product = products[0] if products else label
        return NodeCapacity(
            name, product, "dra", tally.gpus, condition, tally.slices, tally.partitioned
        )
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
    """Counts per GPU product: DRA devices node by node (a node may mix products; a
    partitioned GPU once, its slices as slices), device-plugin nodes by their product
    label."""
    totals: dict[str, GpuCounts] = {}
    node_sets: dict[str, set[str]] = {}
    on_node: dict[str, list[GpuDevice]] = {}
    for gpu in gpus:
        on_node.setdefault(gpu.node_name or "", []).append(gpu)
    for node_name, devices in on_node.items():
        condition = conditions.get(node_name, "unhealthy")
        for product, tally in count_gpus(devices, held, condition).items():
            totals[product] = totals.get(product, GpuCounts()) + tally
            node_sets.setdefault(product, set()).add(node_name)
    for cap in nodes:
        if cap.basis != "device-plugin":
            continue
        product = cap.product or "unknown"
        totals[product] = totals.get(product, GpuCounts()) + cap.tally
        node_sets.setdefault(product, set()).add(cap.node)
    return tuple(
        ProductCapacity(
            p, len(node_sets[p]), totals[p].gpus, totals[p].slices, totals[p].partitioned
        )
        for p in sorted(totals)
    )

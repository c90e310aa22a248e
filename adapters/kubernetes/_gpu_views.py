"""Views the watch cache keeps over its stores, so the cluster view reads and never
recomputes: each node's GPUs (its pools' newest generation, DeviceTaintRules applied)
with the claims holding each, its capacity, and the cluster's capacity by product.

Every change to a store the views depend on (a watch event, or one of the upserts and
deletes a relist's ``replace`` is made of) marks only what it touches: a ResourceSlice
its pool, a claim its devices, a node itself, a pod that requests GPUs its node, a
DeviceTaintRule every pool (rules are few, and one may select devices of any pool). The
first read after that recomputes just the marked nodes (a handful of devices each),
moves the counters by the difference, and publishes a new ``GpuSnapshot``.

A published snapshot never changes: a request takes one and reads all of it (the node
table is copied on publish and only changed nodes get new records), so its GPUs, holders
and counts agree with each other even while events arrive. Views over stores nobody
watches (a direct read's short-lived stores) are rebuilt from scratch whenever a store's
version moved: the same code with everything marked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from openrl_inspect.adapters.kubernetes._capacity import (
    NO_COUNTS,
    CapacityCounts,
    GpuCounts,
    NodeCapacity,
    ProductCapacity,
    count_gpus,
    node_capacity,
)
from openrl_inspect.adapters.kubernetes._devices import (
    ClaimRecord,
    GpuDevice,
    SliceRecord,
    TaintRuleRecord,
)
from openrl_inspect.adapters.kubernetes._records import (
    DeviceKey,
    NodeRecord,
    ObjectKey,
    PodRecord,
)
from openrl_inspect.adapters.kubernetes._store import SliceStore, Store, with_parents, with_rules

Pool = tuple[str, str]  # (driver, pool)
T = TypeVar("T", ClaimRecord, PodRecord, SliceRecord)
ZERO = GpuCounts()


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """One node's GPUs in device-key order, the claims holding each (by claim key; a
    free GPU has no entry), its capacity, and what it adds to each product's counts.

    ``name`` ``""`` gathers devices published without a node: they count toward their
    product (as unhealthy: nowhere to run) but toward no node, as the capacity always has.
    """

    name: str
    gpus: tuple[GpuDevice, ...]
    holders: Mapping[DeviceKey, tuple[ClaimRecord, ...]]
    capacity: NodeCapacity | None
    products: tuple[tuple[str, GpuCounts], ...]


@dataclass(frozen=True, slots=True)
class GpuSnapshot:
    """The GPU views at one moment; immutable, shared by every request that reads it."""

    version: int
    nodes: Mapping[str, NodeGpus]
    total: CapacityCounts  # whole GPUs (a partitioned one once)
    by_product: tuple[ProductCapacity, ...]
    #: Nodes counted: every Node object, and every node name a device is published on.
    node_count: int
    slices: CapacityCounts = NO_COUNTS  # MIG slices
    partitioned: int = 0  # GPUs partitioned into MIG slices

    def gpus_on(self, node: str) -> tuple[GpuDevice, ...]:
        found = self.nodes.get(node)
        return () if found is None else found.gpus

    def holders(self, gpu: GpuDevice) -> tuple[ClaimRecord, ...]:
        """The claims the device is allocated to, by key (more than one only if shared)."""
        found = self.nodes.get(gpu.node_name or "")
        return () if found is None else found.holders.get(gpu.key, ())

    def node_capacity(self, name: str) -> NodeCapacity | None:
        found = self.nodes.get(name) if name else None
        return None if found is None else found.capacity


def _records(store: Store[T], keys: Iterable[ObjectKey]) -> list[T]:
    return [r for r in map(store.get, keys) if r is not None]


def _product_counts(
    gpus: Iterable[GpuDevice], held: Mapping[DeviceKey, object], capacity: NodeCapacity | None
) -> tuple[tuple[str, GpuCounts], ...]:
    """A node's counts by product: DRA devices GPU by GPU (a node may mix products; a
    partitioned GPU once, its MIG slices apart), a device-plugin node whole under its
    product label."""
    condition = capacity.condition if capacity is not None else "unhealthy"
    totals = count_gpus(gpus, held, condition)
    if capacity is not None and capacity.basis == "device-plugin":
        product = capacity.product or "unknown"
        totals[product] = totals.get(product, ZERO) + capacity.tally
    return tuple(sorted(totals.items()))


class GpuViews:
    """The views over the nodes, pods, slices, claims and DeviceTaintRules stores."""

    def __init__(
        self,
        nodes: Store[NodeRecord],
        pods: Store[PodRecord],
        slices: SliceStore,
        claims: Store[ClaimRecord],
        rules: Store[TaintRuleRecord],
    ) -> None:
        self._nodes_store, self._pods, self._slices = nodes, pods, slices
        self._claims, self._rules = claims, rules
        self._watching = False
        self._seen: tuple[int, ...] | None = None
        self._version = 0
        self._reset()

    def _reset(self) -> None:
        """Forget everything and mark everything: the next flush builds from scratch."""
        self._pools: dict[Pool, tuple[GpuDevice, ...]] = {}
        self._devices: dict[DeviceKey, GpuDevice] = {}
        self._node_keys: dict[str, set[DeviceKey]] = {}
        self._nodes: dict[str, NodeGpus] = {}
        self._total, self._node_count = ZERO, 0
        self._product_counts: dict[str, GpuCounts] = {}
        self._product_nodes: dict[str, int] = {}
        self._dirty_pools: set[Pool] = set()
        self._dirty_devices: set[DeviceKey] = set()
        self._dirty_nodes: set[str] = set()
        self._everything = True
        self._snapshot: GpuSnapshot | None = None

    def watch(self) -> None:
        """Follow every change of the stores from now on (the owner of long-lived stores
        calls this once; unwatched views rebuild when a store's version moves)."""
        self._nodes_store.listen(self._on_node)
        self._pods.listen(self._on_pod)
        self._slices.listen(self._on_slice)
        self._claims.listen(self._on_claim)
        self._rules.listen(self._on_rule)
        self._watching = True
        self._reset()

    def snapshot(self) -> GpuSnapshot:
        if not self._watching:
            stores = (self._nodes_store, self._pods, self._slices, self._claims, self._rules)
            seen = tuple(s.version for s in stores)
            if seen != self._seen:
                self._reset()
                self._seen = seen
        if self._snapshot is None:
            self._snapshot = self._flush()
        return self._snapshot

    # --- what a change marks ------------------------------------------------------------

    def _on_node(self, old: NodeRecord | None, new: NodeRecord | None) -> None:
        for n in (old, new):
            if n is not None:
                self._dirty_nodes.add(n.name)
        self._snapshot = None

    def _on_pod(self, old: PodRecord | None, new: PodRecord | None) -> None:
        # Only GPU requests count, and only on a device-plugin node; most pods ask none.
        for p in (old, new):
            if p is not None and p.node_name and p.gpu_request:
                self._dirty_nodes.add(p.node_name)
                self._snapshot = None

    def _on_slice(self, old: SliceRecord | None, new: SliceRecord | None) -> None:
        for s in (old, new):
            if s is not None:
                self._dirty_pools.add((s.driver, s.pool))
        self._snapshot = None

    def _on_claim(self, old: ClaimRecord | None, new: ClaimRecord | None) -> None:
        for c in (old, new):
            if c is not None:
                self._dirty_devices.update(d.key for d in c.devices)
        self._snapshot = None

    def _on_rule(self, old: TaintRuleRecord | None, new: TaintRuleRecord | None) -> None:
        self._dirty_pools.update(self._pools)
        self._dirty_pools.update((s.driver, s.pool) for s in self._slices.values())
        self._snapshot = None

    # --- recomputing what was marked ----------------------------------------------------

    def _flush(self) -> GpuSnapshot:
        if self._everything:
            self._dirty_pools.update((s.driver, s.pool) for s in self._slices.values())
            self._dirty_nodes.update(n.name for n in self._nodes_store.values())
            self._everything = False
        if self._dirty_pools:
            rules = sorted(self._rules.values(), key=lambda r: r.name)
            for pool in self._dirty_pools:
                self._pool(pool, rules)
        for key in self._dirty_devices:
            device = self._devices.get(key)
            if device is not None:
                self._dirty_nodes.add(device.node_name or "")
        for name in self._dirty_nodes:
            self._node(name)
        self._dirty_pools, self._dirty_devices, self._dirty_nodes = set(), set(), set()
        self._version += 1
        by_product = tuple(
            ProductCapacity(p, self._product_nodes[p], c.gpus, c.slices, c.partitioned)
            for p in sorted(self._product_counts)
            for c in (self._product_counts[p],)
        )
        total = self._total
        return GpuSnapshot(
            self._version,
            dict(self._nodes),
            total.gpus,
            by_product,
            self._node_count,
            total.slices,
            total.partitioned,
        )

    def _pool(self, pool: Pool, rules: list[TaintRuleRecord]) -> None:
        """The pool's devices again: its newest generation's slices, with the rules."""
        members = _records(self._slices, self._slices.keys_for("pool", pool))
        devices: list[GpuDevice] = []
        if members:
            newest = max(s.pool_generation for s in members)
            members.sort(key=lambda s: s.key)
            devices = with_parents(
                [with_rules(d, rules) for s in members if s.pool_generation == newest
                 for d in s.devices],
                rules,
            )  # fmt: skip
            devices.sort(key=lambda d: d.key)
        for old in self._pools.pop(pool, ()):
            node = old.node_name or ""
            self._dirty_nodes.add(node)
            if self._devices.get(old.key) is old:
                del self._devices[old.key]
                keys = self._node_keys[node]
                keys.discard(old.key)
                if not keys:
                    del self._node_keys[node]
        for d in devices:
            node = d.node_name or ""
            self._dirty_nodes.add(node)
            self._devices[d.key] = d
            self._node_keys.setdefault(node, set()).add(d.key)
        if devices:
            self._pools[pool] = tuple(devices)

    def _node(self, name: str) -> None:
        """The node's record again, and the counters moved by the difference."""
        devices = self._devices
        gpus = tuple(sorted((devices[k] for k in self._node_keys.get(name, ())), key=_key))
        holders: dict[DeviceKey, tuple[ClaimRecord, ...]] = {}
        for g in gpus:
            claim_keys = self._claims.keys_for("device", g.key)
            if claim_keys:
                holders[g.key] = tuple(_records(self._claims, sorted(claim_keys)))
        node = self._nodes_store.get(ObjectKey("", name)) if name else None
        capacity = None
        if name and (node is not None or gpus):
            pods: list[PodRecord] = []
            if not gpus and node is not None and (node.gpu_capacity or node.gpu_allocatable):
                pods = _records(self._pods, self._pods.keys_for("node", name))
            capacity = node_capacity(name, node, gpus, set(holders), pods)
        record = None
        if capacity is not None or gpus:
            products = _product_counts(gpus, holders, capacity)
            record = NodeGpus(name, gpus, holders, capacity, products)
        self._count(self._nodes.pop(name, None), -1)
        if record is not None:
            self._nodes[name] = record
            self._count(record, 1)

    def _count(self, record: NodeGpus | None, sign: int) -> None:
        if record is None:
            return
        if record.capacity is not None:
            counts = record.capacity.tally
            self._total = self._total + counts if sign > 0 else self._total - counts
            self._node_count += sign
        for product, counts in record.products:
            before = self._product_counts.get(product, ZERO)
            after = before + counts if sign > 0 else before - counts
            nodes = self._product_nodes.get(product, 0) + sign
            if nodes:
                self._product_counts[product] = after
                self._product_nodes[product] = nodes
            else:
                self._product_counts.pop(product, None)
                self._product_nodes.pop(product, None)


def _key(device: GpuDevice) -> DeviceKey:
    return device.key

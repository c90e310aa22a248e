"""Nodes, their GPUs (DRA devices), who holds each GPU, and GPU capacity."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.adapters.kubernetes import NodeRecord
from openrl_inspect.resolvers.cluster import capacity as cluster_capacity
from openrl_inspect.resolvers.cluster import counting
from openrl_inspect.resolvers.cluster import reads as cluster_reads
from openrl_inspect.schema.cluster.common import (
    DEGRADED_DESCRIPTION,
    LIVE,
    SOURCE_DESCRIPTION,
    KubeCondition,
    LiveConnection,
    TaintType,
    conditions,
)
from openrl_inspect.schema.cluster.events import NodeEventFields
from openrl_inspect.schema.cluster.gpu import Gpu, gpu_connection
from openrl_inspect.schema.cluster.pod import Pod
from openrl_inspect.schema.common import Info, as_json, ts
from openrl_inspect.schema.connection import After, First
from openrl_inspect.schema.metrics.fields import NodeMetricsFields
from openrl_inspect.schema.shown import shows
from strawberry.scalars import JSON

if TYPE_CHECKING:
    from openrl_inspect.schema.state.model import Model

ModelT = Annotated["Model", strawberry.lazy("openrl_inspect.schema.state.model")]

COUNTS = (
    "Every GPU is in exactly one of held, free, tainted and unhealthy-not-held: "
    "total = held + free + tainted + unhealthy - unhealthyHeld (an unhealthy GPU that is "
    "held counts in both `held` and `unhealthy`). A GPU partitioned into MIG slices counts "
    "once (held when any slice is held; free only when all are), its slices apart, in "
    "`slices`."
)
UNHEALTHY = (
    "On an unhealthy node (not Ready, unreachable) or broken (a NoSchedule/NoExecute "
    "device taint, or unhealthy to the device plugin), held or not."
)
UNHEALTHY_HELD = "Of `unhealthy`, those held by a claim or pod (counted in `held` too)."
PARTITIONED = "GPUs partitioned into MIG slices (counted once each in `total`)."
TOTAL = "GPUs published (DRA ResourceSlices, or `nvidia.com/gpu` capacity), whole."
HELD = "Allocated to a claim (or requested by a pod)."
FREE = "Not held, on a schedulable healthy node."
TAINTED = "Not held, on a cordoned or tainted node."


@strawberry.type(
    description="MIG slices counted apart from whole GPUs: each slice in exactly one of "
    "held, free, tainted (a cordoned or tainted node) and unhealthy-not-held (its own "
    "taint, or its GPU's): total = held + free + tainted + unhealthy - unhealthyHeld."
)
class SliceCapacity:
    total: int = strawberry.field(description="MIG slices published.")
    held: int = strawberry.field(description="Allocated to a claim.")
    free: int = strawberry.field(description="Not held, on a schedulable healthy node.")
    unhealthy: int = strawberry.field(description=UNHEALTHY)
    unhealthy_held: int = strawberry.field(description=UNHEALTHY_HELD)
    tainted: int = strawberry.field(description="Not held, on a cordoned or tainted node.")

    @classmethod
    def from_record(cls, c: counting.CapacityCounts) -> SliceCapacity:
        return cls(
            total=c.total,
            held=c.held,
            free=c.free,
            unhealthy=c.unhealthy,
            unhealthy_held=c.unhealthy_held,
            tainted=c.tainted,
        )


@strawberry.type(description=f"GPU capacity of one node. {COUNTS}")
class NodeCapacity:
    node_name: str = strawberry.field(description="The node's name.")
    product: str | None = strawberry.field(description="The GPU product on it.")
    basis: str = strawberry.field(
        description="`dra` (counted from its ResourceSlice devices and their claims), "
        "`device-plugin` (from `nvidia.com/gpu` capacity and pod requests) or `none`."
    )
    condition: str = strawberry.field(
        description="`ok`, `unhealthy` (not Ready, unreachable, unknown) or `tainted` "
        "(cordoned, or a NoSchedule/NoExecute taint other than `nvidia.com/gpu`)."
    )
    total: int = strawberry.field(description=TOTAL)
    held: int = strawberry.field(description="Allocated to a claim (or requested by a pod).")
    free: int = strawberry.field(description="Not held, on a schedulable healthy node.")
    unhealthy: int = strawberry.field(description=UNHEALTHY)
    unhealthy_held: int = strawberry.field(description=UNHEALTHY_HELD)
    tainted: int = strawberry.field(description="Not held, on a cordoned or tainted node.")
    partitioned: int = strawberry.field(description=PARTITIONED)
    slices: SliceCapacity = strawberry.field(description="Its MIG slices.")

    @classmethod
    def from_record(cls, rec: counting.NodeCapacity) -> NodeCapacity:
        c = rec.counts
        return cls(
            node_name=rec.node,
            product=rec.product,
            basis=rec.basis,
            condition=rec.condition,
            total=c.total,
            held=c.held,
            free=c.free,
            unhealthy=c.unhealthy,
            unhealthy_held=c.unhealthy_held,
            tainted=c.tainted,
            partitioned=rec.partitioned,
            slices=SliceCapacity.from_record(rec.slices),
        )

    @strawberry.field(description="The node (live).")
    async def node(self, info: Info) -> Node | None:
        rec = await cluster_reads.node_of(info.context, self.node_name)
        return Node.from_record(rec) if rec else None


@strawberry.type(description=f"GPU capacity of one GPU product across the cluster. {COUNTS}")
class ProductCapacity:
    product: str = strawberry.field(description="The GPU product (`nvidia.com/gpu.product`).")
    nodes: int = strawberry.field(description="Nodes with GPUs of this product.")
    total: int = strawberry.field(description=TOTAL)
    held: int = strawberry.field(description=HELD)
    free: int = strawberry.field(description=FREE)
    unhealthy: int = strawberry.field(description=UNHEALTHY)
    unhealthy_held: int = strawberry.field(description=UNHEALTHY_HELD)
    tainted: int = strawberry.field(description=TAINTED)
    partitioned: int = strawberry.field(description=PARTITIONED)
    slices: SliceCapacity = strawberry.field(description="Its MIG slices.")

    @classmethod
    def from_record(cls, rec: counting.ProductCapacity) -> ProductCapacity:
        c = rec.counts
        return cls(
            product=rec.product,
            nodes=rec.nodes,
            total=c.total,
            held=c.held,
            free=c.free,
            unhealthy=c.unhealthy,
            unhealthy_held=c.unhealthy_held,
            tainted=c.tainted,
            partitioned=rec.partitioned,
            slices=SliceCapacity.from_record(rec.slices),
        )


@strawberry.type(description=f"GPU capacity of the whole cluster (live). {COUNTS}")
class ClusterCapacity:
    nodes: int = strawberry.field(description="Nodes counted (with or without GPUs).")
    total: int = strawberry.field(description=TOTAL)
    held: int = strawberry.field(description=HELD)
    free: int = strawberry.field(description=FREE)
    unhealthy: int = strawberry.field(description=UNHEALTHY)
    unhealthy_held: int = strawberry.field(description=UNHEALTHY_HELD)
    tainted: int = strawberry.field(description=TAINTED)
    partitioned: int = strawberry.field(description=PARTITIONED)
    slices: SliceCapacity = strawberry.field(description="The cluster's MIG slices.")
    by_product: list[ProductCapacity] = strawberry.field(
        description="The same counts per GPU product."
    )
    degraded: bool = strawberry.field(
        description="Some kind it needed was not in sync: the counts may be stale."
    )
    truncated: bool = strawberry.field(description="More nodes or GPUs exist than counted.")
    source: str = strawberry.field(description=SOURCE_DESCRIPTION)

    @classmethod
    def from_record(cls, rec: counting.ClusterCapacity) -> ClusterCapacity:
        c = rec.total
        return cls(
            nodes=rec.nodes,
            total=c.total,
            held=c.held,
            free=c.free,
            unhealthy=c.unhealthy,
            unhealthy_held=c.unhealthy_held,
            tainted=c.tainted,
            partitioned=rec.partitioned,
            slices=SliceCapacity.from_record(rec.slices),
            by_product=[ProductCapacity.from_record(p) for p in rec.by_product],
            degraded=rec.degraded,
            truncated=rec.truncated,
            source=LIVE,
        )

    @strawberry.field(description="Capacity node by node, in name order.")
    async def by_node(
        self, info: Info, first: First = None, after: After = None
    ) -> LiveConnection[NodeCapacity]:
        page = await cluster_capacity.capacity_by_node(info.context, first, after)
        return LiveConnection.of(page, NodeCapacity.from_record)


@shows(NodeRecord)
@strawberry.type(description="A GPU node of the cluster (live, Kubernetes).")
class Node(NodeMetricsFields, NodeEventFields):
    name: str = strawberry.field(description="Its name (`metadata.name`).")
    labels: JSON = strawberry.field(description="Its `metadata.labels`, name -> value.")
    ready: bool | None = strawberry.field(description="Its Ready condition; null if unknown.")
    unschedulable: bool = strawberry.field(description="Cordoned.")
    taints: list[TaintType] = strawberry.field(description="Its `spec.taints`.")
    conditions: list[KubeCondition] = strawberry.field(
        description="Its `status.conditions` (Ready, MemoryPressure...)."
    )
    gpu_capacity: int | None = strawberry.field(description="`nvidia.com/gpu` capacity.")
    gpu_allocatable: int | None = strawberry.field(description="`nvidia.com/gpu` allocatable.")
    gpu_product: str | None = strawberry.field(description="Its `nvidia.com/gpu.product` label.")
    created_at: datetime | None = strawberry.field(
        description="`metadata.creationTimestamp` (UTC)."
    )
    source: str = strawberry.field(description=SOURCE_DESCRIPTION)

    _record: strawberry.Private[NodeRecord]

    @classmethod
    def from_record(cls, rec: NodeRecord) -> Node:
        return cls(
            name=rec.name,
            labels=as_json(dict(rec.labels)),
            ready=rec.ready,
            unschedulable=rec.unschedulable,
            taints=[TaintType.from_record(t) for t in rec.taints],
            conditions=conditions(rec.conditions),
            gpu_capacity=rec.gpu_capacity,
            gpu_allocatable=rec.gpu_allocatable,
            gpu_product=rec.labels.get(counting.PRODUCT_LABEL),
            created_at=ts(rec.created),
            source=LIVE,
            _record=rec,
        )

    @strawberry.field(description=DEGRADED_DESCRIPTION)
    async def degraded(self, info: Info) -> bool:
        return await cluster_reads.kind_degraded(info.context, "nodes")

    @strawberry.field(description="Its GPUs (DRA devices of its ResourceSlices), by device.")
    async def gpus(
        self, info: Info, first: First = None, after: After = None
    ) -> LiveConnection[Gpu]:
        page = await cluster_reads.node_gpus(info.context, self.name, first, after)
        return await gpu_connection(info, page)

    @strawberry.field(description="Pods bound to it, by namespace and name.")
    async def pods(
        self, info: Info, first: First = None, after: After = None
    ) -> LiveConnection[Pod]:
        page = await cluster_reads.node_pods(info.context, self.name, first, after)
        return LiveConnection.of(page, Pod.from_record)

    @strawberry.field(description="Its GPUs counted: total, held, free, unhealthy, tainted.")
    async def capacity(self, info: Info) -> NodeCapacity:
        return NodeCapacity.from_record(
            await cluster_capacity.node_capacity(info.context, self._record)
        )

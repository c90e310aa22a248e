"""Nodes, their GPUs (DRA devices), who holds each GPU, and GPU capacity."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.adapters.kubernetes import GpuDevice, NodeRecord
from openrl_inspect.resolvers.cluster import capacity as cluster_capacity
from openrl_inspect.resolvers.cluster import counting
from openrl_inspect.resolvers.cluster import holders as cluster_holders
from openrl_inspect.resolvers.cluster import reads as cluster_reads
from openrl_inspect.resolvers.cluster.reads import LivePage
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
from openrl_inspect.schema.cluster.gpu_health import DeviceTaintType, GpuHealth, health
from openrl_inspect.schema.cluster.pod import Pod, ResourceClaim
from openrl_inspect.schema.common import Info, as_json, ts
from openrl_inspect.schema.metrics.fields import GpuMetricsFields, NodeMetricsFields
from strawberry.scalars import JSON

if TYPE_CHECKING:
    from openrl_inspect.schema.state.model import Model

ModelT = Annotated["Model", strawberry.lazy("openrl_inspect.schema.state.model")]

COUNTS = (
    "Every GPU is in exactly one of held, free, unhealthy and tainted: "
    "total = held + free + unhealthy + tainted."
)


@strawberry.type(description=f"GPU capacity of one node. {COUNTS}")
class NodeCapacity:
    node_name: str
    product: str | None = strawberry.field(description="The GPU product on it.")
    basis: str = strawberry.field(
        description="`dra` (counted from its ResourceSlice devices and their claims), "
        "`device-plugin` (from `nvidia.com/gpu` capacity and pod requests) or `none`."
    )
    condition: str = strawberry.field(
        description="`ok`, `unhealthy` (not Ready, unreachable, unknown) or `tainted` "
        "(cordoned, or a NoSchedule/NoExecute taint other than `nvidia.com/gpu`)."
    )
    total: int
    held: int = strawberry.field(description="Allocated to a claim (or requested by a pod).")
    free: int = strawberry.field(description="Not held, on a schedulable healthy node.")
    unhealthy: int = strawberry.field(description="Not held, on an unhealthy node or broken.")
    tainted: int = strawberry.field(description="Not held, on a cordoned or tainted node.")

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
            tainted=c.tainted,
        )

    @strawberry.field(description="The node (live).")
    async def node(self, info: Info) -> Node | None:
        rec = await cluster_reads.node_of(info.context, self.node_name)
        return Node.from_record(rec) if rec else None


@strawberry.type(description=f"GPU capacity of one GPU product across the cluster. {COUNTS}")
class ProductCapacity:
    product: str
    nodes: int = strawberry.field(description="Nodes with GPUs of this product.")
    total: int
    held: int
    free: int
    unhealthy: int
    tainted: int

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
            tainted=c.tainted,
        )


@strawberry.type(description=f"GPU capacity of the whole cluster (live). {COUNTS}")
class ClusterCapacity:
    nodes: int = strawberry.field(description="Nodes counted (with or without GPUs).")
    total: int
    held: int
    free: int
    unhealthy: int
    tainted: int
    by_product: list[ProductCapacity]
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
            tainted=c.tainted,
            by_product=[ProductCapacity.from_record(p) for p in rec.by_product],
            degraded=rec.degraded,
            truncated=rec.truncated,
            source=LIVE,
        )

    @strawberry.field(description="Capacity node by node, in name order.")
    async def by_node(
        self, info: Info, first: int | None = None, after: str | None = None
    ) -> LiveConnection[NodeCapacity]:
        page = await cluster_capacity.capacity_by_node(info.context, first, after)
        return LiveConnection.of(page, NodeCapacity.from_record)


@strawberry.type(description="A GPU node of the cluster (live, Kubernetes).")
class Node(NodeMetricsFields, NodeEventFields):
    name: str
    labels: JSON
    ready: bool | None = strawberry.field(description="Its Ready condition; null if unknown.")
    unschedulable: bool = strawberry.field(description="Cordoned.")
    taints: list[TaintType]
    conditions: list[KubeCondition]
    gpu_capacity: int | None = strawberry.field(description="`nvidia.com/gpu` capacity.")
    gpu_allocatable: int | None = strawberry.field(description="`nvidia.com/gpu` allocatable.")
    gpu_product: str | None = strawberry.field(description="Its `nvidia.com/gpu.product` label.")
    created_at: datetime | None
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
        self, info: Info, first: int | None = None, after: str | None = None
    ) -> LiveConnection[Gpu]:
        page = await cluster_reads.node_gpus(info.context, self.name, first, after)
        return await gpu_connection(info, page)

    @strawberry.field(description="Pods bound to it, by namespace and name.")
    async def pods(
        self, info: Info, first: int | None = None, after: str | None = None
    ) -> LiveConnection[Pod]:
        page = await cluster_reads.node_pods(info.context, self.name, first, after)
        return LiveConnection.of(page, Pod.from_record)

    @strawberry.field(description="Its GPUs counted: total, held, free, unhealthy, tainted.")
    async def capacity(self, info: Info) -> NodeCapacity:
        return NodeCapacity.from_record(
            await cluster_capacity.node_capacity(info.context, self._record)
        )


@strawberry.type(description="Who holds a GPU: the claim it is allocated to, and its pod.")
class GpuHolder:
    _holder: strawberry.Private[cluster_holders.Holder]

    @strawberry.field
    def claim(self) -> ResourceClaim:
        # Built when asked for: the cluster view asks for the pod and model of thousands
        # of holders and not for their claims.
        return ResourceClaim.from_record(self._holder.claim)

    @strawberry.field(
        description="The pod the claim is reserved for (live); null when the "
        "claim is allocated but no pod uses it, or the pod is gone."
    )
    def pod(self) -> Pod | None:
        # Loaded with the GPU's list (``gpus_held``): no await per holder.
        rec = self._holder.pod_record
        return Pod.from_record(rec) if rec else None

    @strawberry.field(description="The pod's `openrl.ai/model-id` label.")
    def model_id(self) -> str | None:
        rec = self._holder.pod_record
        return rec.model_id if rec else None

    @strawberry.field(description="The model holding the GPU, from Redis (by the pod's label).")
    async def model(self, info: Info) -> ModelT | None:
        from openrl_inspect.schema.state.model import Model

        rec = await cluster_holders.holder_model(info.context, self._holder)
        return Model.from_record(rec) if rec else None


@strawberry.type(name="GPU", description="A GPU as NVIDIA's DRA driver publishes it (live).")
class Gpu(GpuMetricsFields):
    uuid: str | None
    driver: str
    pool: str
    device: str = strawberry.field(description="The device name in its pool (`gpu-0`).")
    pool_generation: int
    node_name: str | None
    index: int | None
    minor: int | None
    product_name: str | None
    architecture: str | None
    driver_version: str | None
    pci_bus_id: str | None
    memory_bytes: float | None = strawberry.field(description="Device memory (bytes).")
    health: GpuHealth = strawberry.field(
        description="UNHEALTHY when a NoSchedule/NoExecute taint keeps new claims off it "
        "(counted unhealthy, never free, in capacity)."
    )
    taints: list[DeviceTaintType] = strawberry.field(
        description="Its DRA device taints: its driver's, then DeviceTaintRules' by name."
    )
    taint_rules_not_evaluated: list[str] = strawberry.field(
        description="DeviceTaintRules that may taint it but need a CEL selector or a "
        "DeviceClass (resource.k8s.io/v1alpha3 before 1.35) the inspector cannot "
        "evaluate: not in `taints` nor `health`; check them by hand."
    )
    source: str = strawberry.field(description=SOURCE_DESCRIPTION)

    _record: strawberry.Private[GpuDevice]
    _held: strawberry.Private[cluster_holders.GpuHeld]

    @classmethod
    def from_record(cls, rec: GpuDevice, held: cluster_holders.GpuHeld) -> Gpu:
        """``held``: from ``gpu_objects``, which reads who holds a whole list of GPUs."""
        return cls(
            uuid=rec.uuid,
            driver=rec.driver,
            pool=rec.pool,
            device=rec.device,
            pool_generation=rec.pool_generation,
            node_name=rec.node_name,
            index=rec.index,
            minor=rec.minor,
            product_name=rec.product_name,
            architecture=rec.architecture,
            driver_version=rec.driver_version,
            pci_bus_id=rec.pci_bus_id,
            memory_bytes=None if rec.memory_bytes is None else float(rec.memory_bytes),
            health=health(rec),
            taints=[DeviceTaintType.from_record(t) for t in rec.taints],
            taint_rules_not_evaluated=list(rec.rules_not_evaluated),
            source=LIVE,
            _record=rec,
            _held=held,
        )

    @strawberry.field(description=DEGRADED_DESCRIPTION)
    async def degraded(self, info: Info) -> bool:
        # Its taints come from the DeviceTaintRules' cache as well as the slices'.
        return await cluster_reads.kind_degraded(
            info.context, "resourceslices"
        ) or await cluster_reads.kind_degraded(info.context, "devicetaintrules")

    @strawberry.field(description="The node it is on (live).")
    async def node(self, info: Info) -> Node | None:
        rec = await cluster_reads.node_of(info.context, self._record.node_name)
        return Node.from_record(rec) if rec else None

    # Not async: read with the GPU's list (``gpu_objects``). An async field costs
    # graphql-core an awaitable per GPU, thousands in a cluster view.
    @strawberry.field(description="True when a ResourceClaim holds it.")
    def held(self) -> bool:
        return self._held.held

    @strawberry.field(
        description="The claims it is allocated to with their pods and models: empty when "
        "free, one entry in practice (more only for shared devices)."
    )
    def held_by(self) -> list[GpuHolder]:
        return [GpuHolder(_holder=h) for h in self._held.holders]


async def gpu_objects(info: Info, records: Sequence[GpuDevice]) -> list[Gpu]:
    """GPUs with who holds them, read for the whole list at once (``gpus_held``)."""
    held = await cluster_holders.gpus_held(info.context, records)
    return [Gpu.from_record(rec, h) for rec, h in zip(records, held, strict=True)]


async def gpu_connection(info: Info, page: LivePage[GpuDevice]) -> LiveConnection[Gpu]:
    made = {g._record.key: g for g in await gpu_objects(info, [rec for _, rec in page.items])}
    return LiveConnection.of(page, lambda rec: made[rec.key])

"""GPUs as NVIDIA's DRA driver publishes them, and who holds each: read for a whole list
at once (``gpu_objects``), for a node's GPUs, a pod's and a claim's alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.adapters.kubernetes import GpuDevice
from openrl_inspect.resolvers.cluster import holders as cluster_holders
from openrl_inspect.resolvers.cluster import reads as cluster_reads
from openrl_inspect.resolvers.cluster.reads import LivePage
from openrl_inspect.schema.cluster import gpu_health
from openrl_inspect.schema.cluster.common import (
    DEGRADED_DESCRIPTION,
    LIVE,
    SOURCE_DESCRIPTION,
    LiveConnection,
)
from openrl_inspect.schema.cluster.gpu_health import DeviceTaintType, GpuHealth, GpuKind
from openrl_inspect.schema.common import Info
from openrl_inspect.schema.metrics.fields import GpuMetricsFields
from openrl_inspect.schema.shown import shown

if TYPE_CHECKING:
    from openrl_inspect.schema.cluster.node import Node
    from openrl_inspect.schema.cluster.pod import Pod, ResourceClaim
    from openrl_inspect.schema.state.model import Model

ModelT = Annotated["Model", strawberry.lazy("openrl_inspect.schema.state.model")]
NodeT = Annotated["Node", strawberry.lazy("openrl_inspect.schema.cluster.node")]
PodT = Annotated["Pod", strawberry.lazy("openrl_inspect.schema.cluster.pod")]
ResourceClaimT = Annotated["ResourceClaim", strawberry.lazy("openrl_inspect.schema.cluster.pod")]


@strawberry.type(description="Who holds a GPU: the claim it is allocated to, and its pod.")
class GpuHolder:
    _holder: strawberry.Private[cluster_holders.Holder]

    @strawberry.field(description="The ResourceClaim it is allocated to (live).")
    def claim(self) -> ResourceClaimT:
        # Built when asked for: the cluster view asks for the pod and model of thousands
        # of holders and not for their claims.
        claim: ResourceClaim = shown(self._holder.claim)
        return claim

    @strawberry.field(
        description="The pod the claim is reserved for (live); null when the "
        "claim is allocated but no pod uses it, or the pod is gone."
    )
    def pod(self) -> PodT | None:
        # Loaded with the GPU's list (``gpus_held``): no await per holder.
        rec = self._holder.pod_record
        return shown(rec) if rec else None

    @strawberry.field(description="The pod's `openrl.ai/model-id` label.")
    def model_id(self) -> str | None:
        rec = self._holder.pod_record
        return rec.model_id if rec else None

    @strawberry.field(description="The model holding the GPU, from Redis (by the pod's label).")
    async def model(self, info: Info) -> ModelT | None:
        rec = await cluster_holders.holder_model(info.context, self._holder)
        return shown(rec) if rec else None


@strawberry.type(
    name="GPU",
    description="A GPU, or a MIG slice of one (`kind`), as NVIDIA's DRA driver publishes "
    "it (live).",
)
class Gpu(GpuMetricsFields):
    uuid: str | None = strawberry.field(
        description="Its `uuid` attribute (a MIG slice's own UUID); null when not published."
    )
    driver: str = strawberry.field(
        description="The DRA driver publishing it (its ResourceSlice's `spec.driver`)."
    )
    pool: str = strawberry.field(description="Its ResourceSlice pool (usually the node's name).")
    device: str = strawberry.field(
        description="The device name in its pool (`gpu-0`; a MIG slice `gpu-0-mig-...`)."
    )
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
            _record=rec,
            _held=held,
        )

    # The other fields read the record when asked, rather than in ``from_record``: a
    # cluster view makes 8,000 GPUs and asks for three of their twenty fields. Methods,
    # not attributes, keep the schema's field order (Strawberry lists a type's methods
    # after its attributes).
    @strawberry.field(description="A whole GPU or a MIG slice of one.")
    def kind(self) -> GpuKind:
        return gpu_health.kind(self._record)

    @strawberry.field(
        description="A MIG slice's profile (`1g.10gb`: compute slices and memory); null "
        "for a whole GPU."
    )
    def profile(self) -> str | None:
        return self._record.profile

    @strawberry.field(description="A MIG slice's GPU, by UUID; null for a whole GPU.")
    def parent_uuid(self) -> str | None:
        return self._record.parent_uuid

    @strawberry.field(
        description="A MIG slice's GPU, by device name (`gpu-0`), whether or not the "
        "driver publishes the GPU itself (static MIG publishes only its slices)."
    )
    def parent_device(self) -> str | None:
        return self._record.parent_device

    @strawberry.field(
        description="The pool's generation it was published in (`spec.pool.generation`)."
    )
    def pool_generation(self) -> int:
        return self._record.pool_generation

    @strawberry.field(description="The node it is on (its ResourceSlice's `spec.nodeName`).")
    def node_name(self) -> str | None:
        return self._record.node_name

    @strawberry.field(description="Its `index` attribute (NVIDIA's driver before 25.8).")
    def index(self) -> int | None:
        return self._record.index

    @strawberry.field(
        description="A whole GPU's minor number: its `minor` attribute, or from its name "
        "`gpu-<minor>` (drivers from 25.8 publish no `minor`)."
    )
    def minor(self) -> int | None:
        return self._record.minor

    @strawberry.field(description="Its `productName` attribute (NVIDIA H100 80GB HBM3...).")
    def product_name(self) -> str | None:
        return self._record.product_name

    @strawberry.field(description="Its `architecture` attribute (Hopper...).")
    def architecture(self) -> str | None:
        return self._record.architecture

    @strawberry.field(description="Its `driverVersion` attribute: the NVIDIA driver's version.")
    def driver_version(self) -> str | None:
        return self._record.driver_version

    @strawberry.field(
        description="Its PCI address: `resource.kubernetes.io/pciBusID` (`pcieBusID` "
        "before driver 25.12)."
    )
    def pci_bus_id(self) -> str | None:
        return self._record.pci_bus_id

    @strawberry.field(description="Device memory (bytes).")
    def memory_bytes(self) -> float | None:
        rec = self._record
        return None if rec.memory_bytes is None else float(rec.memory_bytes)

    @strawberry.field(
        description="UNHEALTHY when a NoSchedule/NoExecute taint keeps new claims off it, "
        "or, for a MIG slice, off its GPU (counted unhealthy, never free, in capacity)."
    )
    def health(self) -> GpuHealth:
        return gpu_health.health(self._record)

    @strawberry.field(
        description="Its DRA device taints: its driver's, then DeviceTaintRules' by name, "
        "then (a MIG slice) those it inherits from its GPU (`inheritedFrom`)."
    )
    def taints(self) -> list[DeviceTaintType]:
        return [DeviceTaintType.from_record(t) for t in self._record.taints]

    @strawberry.field(
        description="DeviceTaintRules that may taint it but need a CEL selector or a "
        "DeviceClass (resource.k8s.io/v1alpha3 before 1.35) the inspector cannot "
        "evaluate: not in `taints` nor `health`; check them by hand."
    )
    def taint_rules_not_evaluated(self) -> list[str]:
        return list(self._record.rules_not_evaluated)

    @strawberry.field(description=SOURCE_DESCRIPTION)
    def source(self) -> str:
        return LIVE

    @strawberry.field(description=DEGRADED_DESCRIPTION)
    async def degraded(self, info: Info) -> bool:
        # Its taints come from the DeviceTaintRules' cache as well as the slices'.
        return await cluster_reads.kind_degraded(
            info.context, "resourceslices"
        ) or await cluster_reads.kind_degraded(info.context, "devicetaintrules")

    @strawberry.field(description="The node it is on (live).")
    async def node(self, info: Info) -> NodeT | None:
        rec = await cluster_reads.node_of(info.context, self._record.node_name)
        return shown(rec) if rec else None

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

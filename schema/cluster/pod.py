"""Pods and DRA ResourceClaims: the live Kubernetes side of a model's workers.

The cluster graph, split by area: pods and claims here, nodes, GPUs and capacity in
``cluster_node``, Kueue Workloads and wait reasons in ``cluster_workload``, shared
pieces in ``cluster_common``, root fields in ``cluster_query``, and the live fields of
the Redis types (Model, Placement, Worker) in ``model_cluster``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.adapters.kubernetes import (
    AllocatedDevice,
    ClaimConsumer,
    ClaimRecord,
    ClaimRequest,
    PodRecord,
    SchedulingFailure,
)
from openrl_inspect.resolvers.cluster import reads as cluster_reads
from openrl_inspect.resolvers.cluster import terminations
from openrl_inspect.schema.cluster.common import (
    DEGRADED_DESCRIPTION,
    LIVE,
    SOURCE_DESCRIPTION,
    KubeCondition,
    conditions,
)
from openrl_inspect.schema.cluster.container import Container
from openrl_inspect.schema.cluster.events import PodEventFields
from openrl_inspect.schema.cluster.gpu import Gpu, gpu_objects
from openrl_inspect.schema.common import Info, as_json, ts
from openrl_inspect.schema.logs.fields import PodLogFields
from openrl_inspect.schema.shown import shown, shows
from strawberry.scalars import JSON

if TYPE_CHECKING:
    from openrl_inspect.schema.cluster.node import Node
    from openrl_inspect.schema.state.model import Model

ModelT = Annotated["Model", strawberry.lazy("openrl_inspect.schema.state.model")]
NodeT = Annotated["Node", strawberry.lazy("openrl_inspect.schema.cluster.node")]


@strawberry.type(description="The pod's PodScheduled=False condition: why it has no node.")
class PodSchedulingFailure:
    reason: str | None = strawberry.field(description="Unschedulable, SchedulingGated...")
    message: str | None = strawberry.field(
        description="The scheduler's message, verbatim (nodes that fit, why the others not)."
    )
    since: datetime | None = strawberry.field(
        description="The condition's lastTransitionTime (UTC)."
    )

    @classmethod
    def from_record(cls, rec: SchedulingFailure) -> PodSchedulingFailure:
        return cls(reason=rec.reason, message=rec.message, since=ts(rec.since))


@shows(PodRecord)
@strawberry.type(description="A live pod of the cluster (Kubernetes).")
class Pod(PodLogFields, PodEventFields):
    namespace: str = strawberry.field(description="Its namespace (`metadata.namespace`).")
    name: str = strawberry.field(description="Its name (`metadata.name`).")
    uid: str = strawberry.field(description="Its `metadata.uid`.")
    phase: str | None = strawberry.field(description="Pending, Running, Succeeded, Failed.")
    node_name: str | None = strawberry.field(
        description="The node it is bound to (`spec.nodeName`); null while unscheduled."
    )
    _record: strawberry.Private[PodRecord]

    @classmethod
    def from_record(cls, rec: PodRecord) -> Pod:
        return cls(
            namespace=rec.namespace,
            name=rec.name,
            uid=rec.uid,
            phase=rec.phase,
            node_name=rec.node_name,
            _record=rec,
        )

    # The other fields read the record when asked, rather than in ``from_record``: a
    # cluster view makes thousands of pods (every GPU holder's) and asks for their names
    # and phases alone, and converting times, copying labels and building conditions
    # and containers cost most of making a pod. Methods, not attributes, keep the
    # schema's field order (Strawberry lists a type's methods after its attributes).
    @strawberry.field(description="Its `metadata.labels`, name -> value.")
    def labels(self) -> JSON:
        return as_json(dict(self._record.labels))

    @strawberry.field(description="Its `openrl.ai/model-id` label.")
    def model_id(self) -> str | None:
        return self._record.model_id

    @strawberry.field(description="Its `openrl.ai/role` label.")
    def role(self) -> str | None:
        return self._record.worker_role

    @strawberry.field(
        description="`nvidia.com/gpu` it requests through the device plugin (DRA GPUs "
        "come through its claims instead)."
    )
    def gpu_request(self) -> int:
        return self._record.gpu_request

    @strawberry.field(description="Its controlling owner reference's kind (Job, JobSet...).")
    def owner_kind(self) -> str | None:
        return self._record.owner_kind

    @strawberry.field(description="Its controlling owner reference's name.")
    def owner_name(self) -> str | None:
        return self._record.owner_name

    @strawberry.field(description="`metadata.creationTimestamp` (UTC).")
    def created_at(self) -> datetime | None:
        return ts(self._record.created)

    @strawberry.field(description="`status.startTime` (UTC): when the kubelet accepted it.")
    def started_at(self) -> datetime | None:
        return ts(self._record.started)

    @strawberry.field(description="True once deletion began (`metadata.deletionTimestamp` set).")
    def deleting(self) -> bool:
        return self._record.deleting

    @strawberry.field(description="Its `status.conditions` (PodScheduled, Ready...).")
    def conditions(self) -> list[KubeCondition]:
        return conditions(self._record.conditions)

    @strawberry.field(description="Init containers first, then the others, as in its status.")
    def containers(self) -> list[Container]:
        return [Container.from_record(c) for c in self._record.containers]

    @strawberry.field(description="Restarts of all its containers (init containers included).")
    def restarts(self) -> int:
        return terminations.restarts(self._record)

    @strawberry.field(description="A container's current state or last termination is an OOM kill.")
    def oom_killed(self) -> bool:
        return terminations.oom_killed(self._record)

    @strawberry.field(description="Why it has no node (PodScheduled false); null once scheduled.")
    def scheduling_failure(self) -> PodSchedulingFailure | None:
        failure = self._record.scheduling_failure
        return PodSchedulingFailure.from_record(failure) if failure else None

    @strawberry.field(description="Its ResourceClaims' names.")
    def claim_names(self) -> list[str]:
        return list(self._record.claim_names)

    @strawberry.field(description=SOURCE_DESCRIPTION)
    def source(self) -> str:
        return LIVE

    @strawberry.field(description=DEGRADED_DESCRIPTION)
    async def degraded(self, info: Info) -> bool:
        return await cluster_reads.kind_degraded(info.context, "pods")

    @strawberry.field(description="The node it runs on (live).")
    async def node(self, info: Info) -> NodeT | None:
        rec = await cluster_reads.node_of(info.context, self._record.node_name)
        return shown(rec) if rec else None

    @strawberry.field(description="The model its label names, from Redis.")
    async def model(self, info: Info) -> ModelT | None:
        rec = await cluster_reads.model_by_label(info.context, self._record.model_id)
        return shown(rec) if rec else None

    @strawberry.field(description="GPUs allocated to its ResourceClaims (live).")
    async def gpus(self, info: Info) -> list[Gpu]:
        return await gpu_objects(info, await cluster_reads.pod_gpus(info.context, self._record))

    @strawberry.field(description="Its DRA ResourceClaims: reserved for it or named by it.")
    async def claims(self, info: Info) -> list[ResourceClaim]:
        claims = await cluster_reads.pod_claims(info.context, self._record)
        return [ResourceClaim.from_record(c) for c in claims]


@strawberry.type(description="One device request of a ResourceClaim (`spec.devices.requests`).")
class DeviceRequest:
    name: str = strawberry.field(description="The request's name within the claim.")
    device_class: str | None = strawberry.field(
        description="The DeviceClass it asks from (`deviceClassName`)."
    )
    count: int | None = strawberry.field(
        description="How many devices, for allocation mode ExactCount."
    )
    allocation_mode: str | None = strawberry.field(description="ExactCount or All.")

    @classmethod
    def from_record(cls, rec: ClaimRequest) -> DeviceRequest:
        return cls(
            name=rec.name,
            device_class=rec.device_class,
            count=rec.count,
            allocation_mode=rec.allocation_mode,
        )


@strawberry.type(description="A device a claim's allocation names.")
class ClaimDevice:
    request: str = strawberry.field(description="The claim's request it satisfies.")
    driver: str = strawberry.field(description="The DRA driver (gpu.nvidia.com...).")
    pool: str = strawberry.field(description="The resource pool (usually the node's name).")
    device: str = strawberry.field(description="The device's name within the pool (gpu-0...).")

    _record: strawberry.Private[AllocatedDevice]

    @classmethod
    def from_record(cls, rec: AllocatedDevice) -> ClaimDevice:
        return cls(
            request=rec.request, driver=rec.driver, pool=rec.pool, device=rec.device, _record=rec
        )

    @strawberry.field(description="The GPU this device is (live); null if not published.")
    async def gpu(self, info: Info) -> Gpu | None:
        rec = await cluster_reads.device_gpu(info.context, self._record.key)
        return (await gpu_objects(info, [rec]))[0] if rec else None


@strawberry.type(description="An entry of the claim's `reservedFor`: who uses it.")
class ClaimConsumerRef:
    resource: str = strawberry.field(description="The consumer's resource (pods).")
    name: str = strawberry.field(description="The consumer's name.")
    uid: str | None = strawberry.field(description="The consumer's uid.")

    @classmethod
    def from_record(cls, rec: ClaimConsumer) -> ClaimConsumerRef:
        return cls(resource=rec.resource, name=rec.name, uid=rec.uid)


@shows(ClaimRecord)
@strawberry.type(description="A DRA ResourceClaim (live): the devices a pod asked for and got.")
class ResourceClaim:
    namespace: str = strawberry.field(description="Its namespace.")
    name: str = strawberry.field(description="Its name.")
    uid: str = strawberry.field(description="Its `metadata.uid`.")
    requests: list[DeviceRequest] = strawberry.field(description="What it asks for.")
    allocated: bool = strawberry.field(
        description="True once the scheduler allocated devices (`status.allocation`)."
    )
    devices: list[ClaimDevice] = strawberry.field(
        description="The devices allocated (`status.allocation.devices.results`)."
    )
    reserved_for: list[ClaimConsumerRef] = strawberry.field(
        description="Who may use it (`status.reservedFor`)."
    )
    created_at: datetime | None = strawberry.field(
        description="`metadata.creationTimestamp` (UTC)."
    )
    deleting: bool = strawberry.field(
        description="True once deletion began (`metadata.deletionTimestamp` set)."
    )
    source: str = strawberry.field(description=SOURCE_DESCRIPTION)

    @classmethod
    def from_record(cls, rec: ClaimRecord) -> ResourceClaim:
        return cls(
            namespace=rec.namespace,
            name=rec.name,
            uid=rec.uid,
            requests=[DeviceRequest.from_record(r) for r in rec.requests],
            allocated=rec.allocated,
            devices=[ClaimDevice.from_record(d) for d in rec.devices],
            reserved_for=[ClaimConsumerRef.from_record(c) for c in rec.reserved_for],
            created_at=ts(rec.created),
            deleting=rec.deleting,
            source=LIVE,
        )

    @strawberry.field(description=DEGRADED_DESCRIPTION)
    async def degraded(self, info: Info) -> bool:
        return await cluster_reads.kind_degraded(info.context, "resourceclaims")

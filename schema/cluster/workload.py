"""Kueue Workloads (live) and the ranked reasons a model waits."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.adapters.kubernetes import Admission, PodSet, PodSetAssignment, WorkloadRecord
from openrl_inspect.core import domain
from openrl_inspect.resolvers.cluster import reads as cluster_reads
from openrl_inspect.resolvers.cluster.wait_reasons import WaitReason as WaitReasonRecord
from openrl_inspect.schema.cluster.common import (
    DEGRADED_DESCRIPTION,
    LIVE,
    SOURCE_DESCRIPTION,
    KubeCondition,
    LiveConnection,
    conditions,
)
from openrl_inspect.schema.cluster.events import WorkloadEventFields
from openrl_inspect.schema.cluster.pod import Pod
from openrl_inspect.schema.common import Info, as_json, domain_enum, ts
from openrl_inspect.schema.connection import After, First
from openrl_inspect.schema.shown import shown, shows
from strawberry.scalars import JSON

if TYPE_CHECKING:
    from openrl_inspect.schema.state.model import Model

ModelT = Annotated["Model", strawberry.lazy("openrl_inspect.schema.state.model")]


@strawberry.type(name="WorkloadPodSet", description="A pod set of a Workload (`spec.podSets`).")
class PodSetType:
    name: str = strawberry.field(description="The pod set's name.")
    count: int | None = strawberry.field(description="Pods in it (`count`).")

    @classmethod
    def from_record(cls, rec: PodSet) -> PodSetType:
        return cls(name=rec.name, count=rec.count)


@strawberry.type(description="Which flavors a pod set got, and how much it uses.")
class PodSetAdmission:
    name: str = strawberry.field(description="The pod set's name.")
    flavors: JSON = strawberry.field(description="Resource -> ResourceFlavor.")
    resource_usage: JSON = strawberry.field(description="Resource -> quantity.")
    count: int | None = strawberry.field(description="Pods admitted in it.")

    @classmethod
    def from_record(cls, rec: PodSetAssignment) -> PodSetAdmission:
        return cls(
            name=rec.name,
            flavors=as_json(dict(rec.flavors)),
            resource_usage=as_json(dict(rec.resource_usage)),
            count=rec.count,
        )


@strawberry.type(description="How Kueue admitted a Workload (`status.admission`).")
class WorkloadAdmission:
    cluster_queue: str = strawberry.field(description="The ClusterQueue it was admitted to.")
    pod_sets: list[PodSetAdmission] = strawberry.field(
        description="Per pod set: flavors and usage (`podSetAssignments`)."
    )

    @classmethod
    def from_record(cls, rec: Admission) -> WorkloadAdmission:
        return cls(
            cluster_queue=rec.cluster_queue,
            pod_sets=[PodSetAdmission.from_record(a) for a in rec.pod_set_assignments],
        )


def workload_status(rec: WorkloadRecord) -> str:
    if rec.is_true("Finished"):
        return "finished"
    if not rec.active:
        return "inactive"
    if rec.is_true("Admitted"):
        return "admitted"
    if rec.is_true("Evicted"):
        return "evicted"
    if rec.is_true("QuotaReserved"):
        return "quota_reserved"
    return "pending"


@shows(WorkloadRecord)
@strawberry.type(description="A Kueue Workload (live): a model's demand, queue and admission.")
class Workload(WorkloadEventFields):
    namespace: str = strawberry.field(description="Its namespace.")
    name: str = strawberry.field(description="Its name.")
    uid: str = strawberry.field(description="Its `metadata.uid`.")
    model_id: str | None = strawberry.field(
        description="Its model: the model label, else through the job it queues "
        "(owner reference, `kueue.x-k8s.io/job-uid`) to the job's or its pods' label."
    )
    queue_name: str | None = strawberry.field(description="The LocalQueue it was sent to.")
    priority: int | None = strawberry.field(description="Its `spec.priority`.")
    priority_class: str | None = strawberry.field(
        description="Its priority class: `spec.priorityClassRef.name` (kueue.x-k8s.io "
        "v1beta2) or `spec.priorityClassName` (v1beta1)."
    )
    priority_class_kind: str | None = strawberry.field(
        description="WorkloadPriorityClass (Kueue's) or PriorityClass (the pods'), from "
        "`priorityClassRef.kind` (v1beta2) or `priorityClassSource` (v1beta1)."
    )
    active: bool = strawberry.field(description="Its `spec.active` (false: deactivated).")
    status: str = strawberry.field(
        description="Its state: pending, quota_reserved, admitted, evicted, inactive or finished."
    )
    admitted_at: datetime | None = strawberry.field(
        description="When its Admitted condition became true (UTC); null unless admitted."
    )
    pod_sets: list[PodSetType] = strawberry.field(description="Its `spec.podSets`.")
    conditions: list[KubeCondition] = strawberry.field(
        description="Its `status.conditions` (QuotaReserved, Admitted, Evicted...)."
    )
    admission: WorkloadAdmission | None = strawberry.field(
        description="Its `status.admission`; null until quota is reserved."
    )
    requeue_count: int | None = strawberry.field(
        description="Times it was requeued (`status.requeueState.count`)."
    )
    created_at: datetime | None = strawberry.field(
        description="`metadata.creationTimestamp` (UTC)."
    )
    source: str = strawberry.field(description=SOURCE_DESCRIPTION)

    _record: strawberry.Private[WorkloadRecord]

    @classmethod
    def from_record(cls, rec: WorkloadRecord) -> Workload:
        admitted = rec.condition("Admitted")
        return cls(
            namespace=rec.namespace,
            name=rec.name,
            uid=rec.uid,
            model_id=rec.model_id,
            queue_name=rec.queue_name,
            priority=rec.priority,
            priority_class=rec.priority_class,
            priority_class_kind=rec.priority_class_kind,
            active=rec.active,
            status=workload_status(rec),
            admitted_at=(
                ts(admitted.last_transition)
                if admitted is not None and admitted.status == "True"
                else None
            ),
            pod_sets=[PodSetType.from_record(p) for p in rec.pod_sets],
            conditions=conditions(rec.conditions),
            admission=WorkloadAdmission.from_record(rec.admission) if rec.admission else None,
            requeue_count=rec.requeue_count,
            created_at=ts(rec.created),
            source=LIVE,
            _record=rec,
        )

    @strawberry.field(description=DEGRADED_DESCRIPTION)
    async def degraded(self, info: Info) -> bool:
        return await cluster_reads.kind_degraded(info.context, "workloads")

    @strawberry.field(
        description="The pods of the job it queues (owner references and the Job and "
        "JobSet controllers' UID labels), in key order; paging reaches the first 256."
    )
    async def pods(
        self, info: Info, first: First = None, after: After = None
    ) -> LiveConnection[Pod]:
        page = await cluster_reads.workload_pods(info.context, self._record, first, after)
        return LiveConnection.of(page, Pod.from_record)

    @strawberry.field(description="Its model (see `modelId`), from Redis.")
    async def model(self, info: Info) -> ModelT | None:
        rec = await cluster_reads.model_by_label(info.context, self._record.model_id)
        return shown(rec) if rec else None


WaitReasonKind = domain.WaitKind
domain_enum(
    WaitReasonKind,
    name="WaitReasonKind",
    description="What kind of cause a wait reason is, read from live Kubernetes objects "
    "(Kueue Workloads, pods, ResourceClaims).",
    values={
        WaitReasonKind.NO_WORKLOAD: "No Kueue Workload and no pods belong to the model: "
        "its job was not created, or Kueue does not manage it.",
        WaitReasonKind.WORKLOAD_FINISHED: "Its only Workloads are Finished; no new one "
        "was created.",
        WaitReasonKind.WORKLOAD_INACTIVE: "Its Workload is deactivated (`spec.active` "
        "false): Kueue will not admit it.",
        WaitReasonKind.EVICTED: "Its Workload's Evicted condition is true and it is not "
        "admitted again.",
        WaitReasonKind.PREEMPTED: "Its Workload's Preempted condition is true and it is "
        "not admitted again.",
        WaitReasonKind.INADMISSIBLE: "QuotaReserved is false with reason Inadmissible: no "
        "queue Kueue serves can admit it.",
        WaitReasonKind.QUOTA: "QuotaReserved is false for lack of quota: see `resource`, "
        "`flavor`, `shortfall`.",
        WaitReasonKind.PENDING: "Kueue has not reserved quota yet (no QuotaReserved "
        "condition, or one without a quota shortfall).",
        WaitReasonKind.REQUEUED: "Its Workload was requeued after an eviction "
        "(`status.requeueState.count`).",
        WaitReasonKind.ADMISSION_CHECK: "Quota is reserved; its admission checks have not passed.",
        WaitReasonKind.NO_PODS: "The Workload is admitted but none of the model's pods exist yet.",
        WaitReasonKind.POD_GATED: "A pod has scheduling gates (SchedulingGated) until its "
        "Workload is admitted.",
        WaitReasonKind.UNSCHEDULABLE: "The scheduler cannot place a pod (PodScheduled "
        "false): see the message.",
        WaitReasonKind.CLAIM_UNALLOCATED: "A pod's DRA ResourceClaim is not allocated, or "
        "not created from its template yet.",
        WaitReasonKind.CONTAINER_ERROR: "A container is waiting on an error (image pull, "
        "config, crash loop).",
        WaitReasonKind.POD_FAILED: "A pod is in phase Failed.",
        WaitReasonKind.CONTAINER_WAITING: "A container is waiting for another reason "
        "(ContainerCreating, PodInitializing...).",
        WaitReasonKind.NO_WORKLOAD_FOR_PODS: "The model's pods have no Kueue Workload: "
        "they are not queued by Kueue.",
        WaitReasonKind.NOTHING_FOUND: "Kubernetes shows nothing blocking it: the Workload "
        "is admitted and its pods scheduled; the workers may still be starting.",
    },
)


@strawberry.type(
    description="One likely reason a model waits, from live Kubernetes state: rank 1 is "
    "the most likely (causes earlier on the way to GPUs block the later ones)."
)
class WaitReason:
    rank: int = strawberry.field(description="1 is the most likely.")
    kind: WaitReasonKind = strawberry.field(description="What kind of cause it is.")
    source: str = strawberry.field(
        description="Who reports it: kueue, scheduler, dra, kubelet, kubernetes, inspector."
    )
    object: str | None = strawberry.field(
        description="The object it comes from (`Workload ns/name`, `Pod ns/name`...)."
    )
    reason: str | None = strawberry.field(description="The condition's reason.")
    message: str = strawberry.field(description="The condition's message, verbatim.")
    since: datetime | None = strawberry.field(description="Since when it holds (UTC).")
    waited_seconds: float | None = strawberry.field(description="From `since` to now.")
    resource: str | None = strawberry.field(description="Quota: the resource short.")
    flavor: str | None = strawberry.field(description="Quota: the ResourceFlavor short.")
    shortfall: int | None = strawberry.field(description="Quota: how many more are needed.")
    queue_position: int | None = strawberry.field(
        description="Position among the pending Workloads of its LocalQueue (priority, "
        "then age), estimated from the cache; 1 is next."
    )
    queue_length: int | None = strawberry.field(description="Pending Workloads in that queue.")

    @classmethod
    def from_record(cls, rec: WaitReasonRecord) -> WaitReason:
        return cls(
            rank=rec.rank,
            kind=rec.kind,
            source=rec.source,
            object=rec.object,
            reason=rec.reason,
            message=rec.message,
            since=ts(rec.since),
            waited_seconds=rec.waited_seconds,
            resource=rec.resource,
            flavor=rec.flavor,
            shortfall=rec.shortfall,
            queue_position=rec.queue_position,
            queue_length=rec.queue_length,
        )

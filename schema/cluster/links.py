"""Live Kubernetes fields on the Redis types: Model, Placement and Worker.

Mixins: ``Model``, ``Placement`` and ``Worker`` list them among their bases, so these
fields join theirs. Every field here reads live state from Kubernetes (the watch cache);
the types' own fields are the history OpenRL recorded in Redis. Each is nullable: when
Kubernetes fails or is not configured, only these go null (with a coded error).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

import strawberry
from openrl_inspect.resolvers.cluster import links as cluster_links
from openrl_inspect.resolvers.cluster import reads as cluster_reads
from openrl_inspect.resolvers.cluster import terminations
from openrl_inspect.resolvers.cluster.waiting import waiting_seconds
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.schema.cluster.common import LiveConnection
from openrl_inspect.schema.cluster.container import OomKills
from openrl_inspect.schema.cluster.gpu import Gpu, gpu_objects
from openrl_inspect.schema.cluster.node import Node
from openrl_inspect.schema.cluster.pod import Pod
from openrl_inspect.schema.cluster.workload import WaitReason, Workload
from openrl_inspect.schema.common import Info
from openrl_inspect.schema.connection import After, First
from openrl_inspect.state.records import PlacementRecord

if TYPE_CHECKING:
    from openrl_inspect.schema.state.model import Model
    from openrl_inspect.schema.state.placement import Placement
    from openrl_inspect.schema.state.worker import Worker

LIVE = "Live, from Kubernetes (not the Redis history)"

OomFirst = Annotated[
    int | None,
    strawberry.argument(
        description="At most this many kills, 0 to OPENRL_INSPECT_LIMITS_MAX_PAGE_SIZE "
        "(100 unless set); default 20."
    ),
]


@strawberry.type
class ModelClusterFields:
    """Live fields of ``Model``."""

    def _model(self) -> Model:
        return cast("Model", self)

    @strawberry.field(description=f"{LIVE}: its pods, by their `openrl.ai/model-id` label.")
    async def pods(
        self, info: Info, first: First = None, after: After = None
    ) -> LiveConnection[Pod] | None:
        page = await cluster_reads.model_pods(info.context, self._model().id, first, after)
        return LiveConnection.of(page, Pod.from_record)

    @strawberry.field(description=f"{LIVE}: its Kueue Workloads, by label.")
    async def workloads(
        self, info: Info, first: First = None, after: After = None
    ) -> LiveConnection[Workload] | None:
        page = await cluster_reads.model_workloads(info.context, self._model().id, first, after)
        return LiveConnection.of(page, Workload.from_record)

    @strawberry.field(
        description=f"{LIVE}: why a WAITING (or PLACED, not yet running) model waits, most "
        "likely cause first: Kueue's quota and admission conditions, unschedulable pods, "
        "unallocated claims, waiting containers. Empty in other states."
    )
    async def why_waiting(self, info: Info) -> list[WaitReason] | None:
        reasons = await cluster_links.model_why_waiting(info.context, self._model().id)
        return [WaitReason.from_record(r) for r in reasons]

    @strawberry.field(
        description=f"{LIVE}: OOM kills of its pods' containers the kubelet still shows "
        "(current state or last termination), most recent first; `first` bounds them."
    )
    async def oom_kills(self, info: Info, first: OomFirst = None) -> OomKills | None:
        kills = await terminations.model_oom_kills(info.context, self._model().id, first)
        return OomKills.from_record(kills)

    @strawberry.field(
        description="Seconds in its current state while WAITING or PLACED (from Redis); "
        "null in other states."
    )
    async def waiting_seconds(self, info: Info) -> float | None:
        rec = await state_reads.model(info.context, self._model().id)
        return waiting_seconds(rec, info.context.now)


@strawberry.type
class PlacementClusterFields:
    """Live fields of ``Placement`` (whose own fields are the Redis history)."""

    def _placement_record(self) -> PlacementRecord:
        p = cast("Placement", self)
        return PlacementRecord(
            id=p.id,
            model_id=p.model_id,
            workload=p.workload,
            namespace=p.namespace,
            pods=p.pods,
            node=p.node,
            gpu_ids=p.gpu_ids,
            admitted_at=None,
            released_at=None,
        )

    @strawberry.field(
        description=f"{LIVE}: the recorded pods that still exist; the ones gone are absent."
    )
    async def live_pods(self, info: Info) -> list[Pod] | None:
        pods = await cluster_links.placement_pods(info.context, self._placement_record())
        return [Pod.from_record(p) for p in pods]

    @strawberry.field(description=f"{LIVE}: the recorded node; null when it is gone.")
    async def live_node(self, info: Info) -> Node | None:
        rec = await cluster_reads.node_of(info.context, self._placement_record().node)
        return Node.from_record(rec) if rec else None

    @strawberry.field(
        description=f"{LIVE}: the recorded GPUs (by UUID) still published; with their "
        "current holders under `heldBy`."
    )
    async def live_gpus(self, info: Info) -> list[Gpu] | None:
        gpus = await cluster_links.placement_gpus(info.context, self._placement_record())
        return await gpu_objects(info, gpus)

    @strawberry.field(
        description=f"{LIVE}: OOM kills of the recorded pods' containers the kubelet "
        "still shows, most recent first; `first` bounds them."
    )
    async def oom_kills(self, info: Info, first: OomFirst = None) -> OomKills | None:
        kills = await terminations.placement_oom_kills(
            info.context, self._placement_record(), first
        )
        return OomKills.from_record(kills)

    @strawberry.field(description=f"{LIVE}: the recorded Kueue Workload; null when gone.")
    async def live_workload(self, info: Info) -> Workload | None:
        rec = await cluster_links.placement_workload(info.context, self._placement_record())
        return Workload.from_record(rec) if rec else None


@strawberry.type
class WorkerClusterFields:
    """Live fields of ``Worker``."""

    def _worker(self) -> Worker:
        return cast("Worker", self)

    @strawberry.field(description=f"{LIVE}: its pod (found among its model's pods).")
    async def pod_object(self, info: Info) -> Pod | None:
        rec = await cluster_links.worker_pod(info.context, self._worker()._record)
        return Pod.from_record(rec) if rec else None

    @strawberry.field(description=f"{LIVE}: the node it last reported.")
    async def node_object(self, info: Info) -> Node | None:
        rec = await cluster_reads.node_of(info.context, self._worker().node)
        return Node.from_record(rec) if rec else None

"""Root fields over the live cluster (Kubernetes): nodes, GPUs, pods, Workloads, capacity."""

from __future__ import annotations

from typing import Annotated

import strawberry
from openrl_inspect.resolvers.cluster import capacity as cluster_capacity
from openrl_inspect.resolvers.cluster import reads as cluster_reads
from openrl_inspect.schema.cluster.common import KubernetesStatus, LiveConnection
from openrl_inspect.schema.cluster.gpu import Gpu, gpu_connection, gpu_objects
from openrl_inspect.schema.cluster.node import ClusterCapacity, Node
from openrl_inspect.schema.cluster.pod import Pod
from openrl_inspect.schema.cluster.workload import Workload
from openrl_inspect.schema.common import Info
from openrl_inspect.schema.connection import After, First

NodeName = Annotated[str, strawberry.argument(description="A node's name (an RFC 1123 subdomain).")]
Namespace = Annotated[str, strawberry.argument(description="A namespace (an RFC 1123 label).")]
ModelLabel = Annotated[
    strawberry.ID | None,
    strawberry.argument(
        description="Only the objects of this model id (their `openrl.ai/model-id` label, "
        "or their job's)."
    ),
]


@strawberry.type
class ClusterQuery:
    @strawberry.field(description="Nodes (live), by name.")
    async def nodes(
        self, info: Info, first: First = None, after: After = None
    ) -> LiveConnection[Node] | None:
        return LiveConnection.of(
            await cluster_reads.nodes(info.context, first, after), Node.from_record
        )

    @strawberry.field(description="A node by name (live); null with NOT_FOUND when unknown.")
    async def node(self, info: Info, name: NodeName) -> Node | None:
        return Node.from_record(await cluster_reads.node(info.context, name))

    @strawberry.field(description="GPUs (live DRA devices), by driver, pool and device.")
    async def gpus(
        self,
        info: Info,
        node: Annotated[
            str | None, strawberry.argument(description="Only the GPUs on this node.")
        ] = None,
        first: First = None,
        after: After = None,
    ) -> LiveConnection[Gpu] | None:
        page = await cluster_reads.gpus(info.context, node, first, after)
        return await gpu_connection(info, page)

    @strawberry.field(description="A GPU by device UUID (live); null with NOT_FOUND if unknown.")
    async def gpu(
        self,
        info: Info,
        uuid: Annotated[
            str,
            strawberry.argument(
                description="The device UUID (GPU-... or MIG-...; letters, digits and "
                "`._:-`, at most 128)."
            ),
        ],
    ) -> Gpu | None:
        (found,) = await gpu_objects(info, [await cluster_reads.gpu(info.context, uuid)])
        return found

    @strawberry.field(description="A pod by namespace and name (live).")
    async def pod(
        self,
        info: Info,
        namespace: Namespace,
        name: Annotated[
            str, strawberry.argument(description="The pod's name (an RFC 1123 subdomain).")
        ],
    ) -> Pod | None:
        return Pod.from_record(await cluster_reads.pod(info.context, namespace, name))

    @strawberry.field(
        description="Pods (live), by namespace and name; filter by model id (label), "
        "namespace, node or phase."
    )
    async def pods(
        self,
        info: Info,
        model: ModelLabel = None,
        namespace: Annotated[
            str | None, strawberry.argument(description="Only the pods of this namespace.")
        ] = None,
        node: Annotated[
            str | None, strawberry.argument(description="Only the pods bound to this node.")
        ] = None,
        phase: Annotated[
            str | None,
            strawberry.argument(
                description="Only the pods in this `status.phase` (Pending, Running, "
                "Succeeded, Failed, Unknown)."
            ),
        ] = None,
        first: First = None,
        after: After = None,
    ) -> LiveConnection[Pod] | None:
        page = await cluster_reads.pods(
            info.context,
            model_id=model,
            namespace=namespace,
            node_name=node,
            phase=phase,
            first=first,
            after=after,
        )
        return LiveConnection.of(page, Pod.from_record)

    @strawberry.field(description="Kueue Workloads (live), by namespace and name.")
    async def workloads(
        self,
        info: Info,
        namespace: Annotated[
            str | None,
            strawberry.argument(description="Only the Workloads of this namespace."),
        ] = None,
        model: ModelLabel = None,
        first: First = None,
        after: After = None,
    ) -> LiveConnection[Workload] | None:
        page = await cluster_reads.workloads(info.context, namespace, model, first, after)
        return LiveConnection.of(page, Workload.from_record)

    @strawberry.field(
        description="GPU capacity (live): total, held, free, unhealthy and tainted, for "
        "the cluster, per GPU product and per node."
    )
    async def capacity(self, info: Info) -> ClusterCapacity | None:
        return ClusterCapacity.from_record(await cluster_capacity.cluster_capacity(info.context))

    @strawberry.field(description="The Kubernetes watch cache: synced, degraded, per kind.")
    async def kubernetes_status(self, info: Info) -> KubernetesStatus | None:
        return KubernetesStatus.from_record(await cluster_reads.status(info.context))

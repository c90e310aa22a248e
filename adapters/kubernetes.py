"""Kubernetes, read-only: pods, nodes, Kueue Workloads, DRA ResourceSlices and Claims.

The public surface of the adapter. ``KubernetesSource`` is the protocol the loaders use;
``open_kubernetes(settings)`` gives the real one (a watch cache over the official
``kubernetes.aio`` client) and ``MemoryKubernetesSource`` the in-memory twin.

Reads return plain frozen records. Lists are ``Listing`` (items, ``truncated``,
``degraded``), filtered before they are capped and ordered by key, with an ``after``
cursor. Batch methods take a list of keys and return one result per key, in key order:
``None`` (or an empty ``Listing``) for a miss, as DataLoaders want. A one-to-one batch
answered while its kind was not synced is visible only through ``status()``.

Private modules, one concept each::

    kubernetes_records   records, keys, Listing, status types
    kubernetes_parse     JSON -> pod, node, Kueue workload records
    kubernetes_dra       JSON -> ResourceSlice / ResourceClaim records (v1 and v1beta1)
    kubernetes_store     keyed stores with indexes; newest-generation GPU index
    kubernetes_view      the queries over stores
    kubernetes_queries   the async surface shared by the real source and the twin
    kubernetes_api       the official client: paged LIST, WATCH, errors, request counts
    kubernetes_cache     the informer (list, watch, 410 relist, resync, backoff)
    kubernetes_source    the real source: cache reads, degraded direct reads
    kubernetes_memory    the in-memory twin
    kubernetes_settings  KubernetesSettings (OPENRL_INSPECT_KUBERNETES_*)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from openrl_inspect.adapters.kubernetes_api import (
    READ_VERBS,
    WATCHED_RESOURCES,
    WatchedResource,
)
from openrl_inspect.adapters.kubernetes_memory import MemoryKubernetesSource
from openrl_inspect.adapters.kubernetes_records import (
    MODEL_ID_LABEL,
    ROLE_LABEL,
    Admission,
    AllocatedDevice,
    ClaimConsumer,
    ClaimRecord,
    ClaimRequest,
    Condition,
    ContainerState,
    DeviceKey,
    GpuDevice,
    KindStatus,
    Listing,
    NodeRecord,
    ObjectKey,
    PodRecord,
    PodResourceClaim,
    PodSet,
    PodSetAssignment,
    SchedulingFailure,
    SliceRecord,
    SourceStatus,
    Taint,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes_settings import KubernetesSettings, load_settings
from openrl_inspect.adapters.kubernetes_source import KubernetesCacheSource, open_kubernetes

__all__ = [
    "MODEL_ID_LABEL",
    "READ_VERBS",
    "ROLE_LABEL",
    "WATCHED_RESOURCES",
    "Admission",
    "AllocatedDevice",
    "ClaimConsumer",
    "ClaimRecord",
    "ClaimRequest",
    "Condition",
    "ContainerState",
    "DeviceKey",
    "GpuDevice",
    "KindStatus",
    "KubernetesCacheSource",
    "KubernetesSettings",
    "KubernetesSource",
    "Listing",
    "MemoryKubernetesSource",
    "NodeRecord",
    "ObjectKey",
    "PodRecord",
    "PodResourceClaim",
    "PodSet",
    "PodSetAssignment",
    "SchedulingFailure",
    "SliceRecord",
    "SourceStatus",
    "Taint",
    "WatchedResource",
    "WorkloadRecord",
    "load_settings",
    "open_kubernetes",
]


class KubernetesSource(Protocol):
    """Read-only access to the cluster objects the inspector shows.

    Errors: ``BackendUnavailable`` / ``BackendTimeout`` / ``BackendProtocolError`` (backend
    ``"kubernetes"``) when an answer needs the API server and it fails; ``InvalidInput``
    for a negative limit. In steady state no read reaches the API server.
    """

    async def status(self) -> SourceStatus: ...

    async def list_pods(
        self,
        *,
        model_id: str | None = None,
        namespace: str | None = None,
        node_name: str | None = None,
        phase: str | None = None,
        after: ObjectKey | None = None,
        limit: int = 100,
    ) -> Listing[PodRecord]: ...

    async def get_pods(self, keys: Sequence[ObjectKey]) -> list[PodRecord | None]: ...

    async def pods_by_model(
        self, model_ids: Sequence[str], limit: int = 100
    ) -> list[Listing[PodRecord]]: ...

    async def pods_by_node(
        self, node_names: Sequence[str], limit: int = 100
    ) -> list[Listing[PodRecord]]: ...

    async def list_nodes(
        self, *, after: str | None = None, limit: int = 100
    ) -> Listing[NodeRecord]: ...

    async def get_nodes(self, names: Sequence[str]) -> list[NodeRecord | None]: ...

    async def list_gpus(
        self, *, node_name: str | None = None, after: DeviceKey | None = None, limit: int = 100
    ) -> Listing[GpuDevice]: ...

    async def gpus_by_node(
        self, node_names: Sequence[str], limit: int = 100
    ) -> list[Listing[GpuDevice]]: ...

    async def gpus_by_uuid(self, uuids: Sequence[str]) -> list[GpuDevice | None]: ...

    async def gpus_by_device(self, keys: Sequence[DeviceKey]) -> list[GpuDevice | None]: ...

    async def list_workloads(
        self,
        *,
        namespace: str | None = None,
        model_id: str | None = None,
        after: ObjectKey | None = None,
        limit: int = 100,
    ) -> Listing[WorkloadRecord]: ...

    async def workloads_by_model(
        self, model_ids: Sequence[str], limit: int = 100
    ) -> list[Listing[WorkloadRecord]]: ...

    async def get_claims(self, keys: Sequence[ObjectKey]) -> list[ClaimRecord | None]: ...

    async def claims_for_pods(
        self, pod_keys: Sequence[ObjectKey], limit: int = 100
    ) -> list[Listing[ClaimRecord]]: ...

    async def claims_by_device(
        self, keys: Sequence[DeviceKey], limit: int = 100
    ) -> list[Listing[ClaimRecord]]: ...


if TYPE_CHECKING:  # both implementations must keep satisfying the protocol

    def _conforms(
        real: KubernetesCacheSource, twin: MemoryKubernetesSource
    ) -> tuple[KubernetesSource, KubernetesSource]:
        return real, twin

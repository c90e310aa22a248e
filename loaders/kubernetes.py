"""DataLoaders over the Kubernetes source (the watch cache). Built fresh for every request.

Each loader's batch function is one ``KubernetesSource`` call (a query on the watch
cache; no API-server request in steady state), however many keys a level of the query
asks for. Lists keyed by ``(key, limit)`` group their keys by limit: one call per
distinct page size. When the inspector runs without Kubernetes, every batch raises
``BackendNotConfigured`` so the fields that need it go null with that code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from openrl_inspect.adapters.kubernetes import (
    ClaimRecord,
    DeviceKey,
    EventRecord,
    GpuDevice,
    GpuViewRead,
    KubernetesSource,
    Listing,
    NodeRecord,
    ObjectKey,
    PodRecord,
    Regarding,
    SourceStatus,
    WorkloadRecord,
)
from openrl_inspect.core.errors import BackendNotConfigured
from openrl_inspect.loaders.batch import BatchLoader

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

BACKEND = "kubernetes"


@dataclass(frozen=True)
class NodePage:
    after: str | None
    limit: int


@dataclass(frozen=True)
class GpuPage:
    node_name: str | None
    after: DeviceKey | None
    limit: int


@dataclass(frozen=True)
class PodPage:
    model_id: str | None
    namespace: str | None
    node_name: str | None
    phase: str | None
    after: ObjectKey | None
    limit: int


@dataclass(frozen=True)
class WorkloadPage:
    namespace: str | None
    model_id: str | None
    after: ObjectKey | None
    limit: int


def _not_configured() -> BackendNotConfigured:
    return BackendNotConfigured(BACKEND, "this inspector was started without Kubernetes")


def _limited(
    source: KubernetesSource | None,
    call: Callable[[KubernetesSource, list[Any], int], Awaitable[list[V]]],
) -> BatchLoader[tuple[Any, int], V]:
    """A loader keyed ``(key, limit)``: one source call per distinct limit in a batch."""

    async def load(keys: list[tuple[Any, int]]) -> list[V]:
        if source is None:
            raise _not_configured()
        by_limit: dict[int, list[Any]] = {}
        for key, limit in keys:
            by_limit.setdefault(limit, []).append(key)
        answers: dict[tuple[Any, int], V] = {}
        for limit, group in by_limit.items():
            for key, value in zip(group, await call(source, group, limit), strict=True):
                answers[key, limit] = value
        return [answers[k] for k in keys]

    return BatchLoader(load)


def _keyed(
    source: KubernetesSource | None,
    call: Callable[[KubernetesSource, list[K]], Awaitable[Sequence[V]]],
) -> BatchLoader[K, V]:
    async def load(keys: list[K]) -> Sequence[V]:
        if source is None:
            raise _not_configured()
        return await call(source, keys)

    return BatchLoader(load)


def _pages(
    source: KubernetesSource | None,
    call: Callable[[KubernetesSource, K], Awaitable[V]],
) -> BatchLoader[K, V]:
    """List requests (one call each; they are cache queries, run side by side)."""

    async def load(keys: list[K]) -> list[V]:
        if source is None:
            raise _not_configured()
        return list(await asyncio.gather(*(call(source, k) for k in keys)))

    return BatchLoader(load)


async def _status(source: KubernetesSource, keys: list[str]) -> list[SourceStatus]:
    status = await source.status()
    return [status for _ in keys]


async def _gpu_views(source: KubernetesSource, keys: list[str]) -> list[GpuViewRead]:
    views = await source.gpu_views()
    return [views for _ in keys]


async def _node_page(s: KubernetesSource, p: NodePage) -> Listing[NodeRecord]:
    return await s.list_nodes(after=p.after, limit=p.limit)


async def _gpu_page(s: KubernetesSource, p: GpuPage) -> Listing[GpuDevice]:
    return await s.list_gpus(node_name=p.node_name, after=p.after, limit=p.limit)


async def _pod_page(s: KubernetesSource, p: PodPage) -> Listing[PodRecord]:
    return await s.list_pods(
        model_id=p.model_id,
        namespace=p.namespace,
        node_name=p.node_name,
        phase=p.phase,
        after=p.after,
        limit=p.limit,
    )


async def _workload_page(s: KubernetesSource, p: WorkloadPage) -> Listing[WorkloadRecord]:
    return await s.list_workloads(
        namespace=p.namespace, model_id=p.model_id, after=p.after, limit=p.limit
    )


@dataclass(frozen=True)
class KubeLoaders:
    """Per-request loaders over ``Backends.kubernetes`` (each raises
    ``BackendNotConfigured`` when it is None)."""

    status: BatchLoader[str, SourceStatus]
    # One snapshot of the GPU views per request (key ""): every GPU, holder and count a
    # request reads comes from the same moment, and costs a lookup.
    gpu_views: BatchLoader[str, GpuViewRead]
    pods: BatchLoader[ObjectKey, PodRecord | None]
    nodes: BatchLoader[str, NodeRecord | None]
    gpus_by_uuid: BatchLoader[str, GpuDevice | None]
    gpus_by_device: BatchLoader[DeviceKey, GpuDevice | None]
    claims: BatchLoader[ObjectKey, ClaimRecord | None]
    workloads: BatchLoader[ObjectKey, WorkloadRecord | None]
    # keyed (key, limit)
    pods_by_model: BatchLoader[tuple[str, int], Listing[PodRecord]]
    pods_by_node: BatchLoader[tuple[str, int], Listing[PodRecord]]
    gpus_by_node: BatchLoader[tuple[str, int], Listing[GpuDevice]]
    workloads_by_model: BatchLoader[tuple[str, int], Listing[WorkloadRecord]]
    pods_for_workloads: BatchLoader[tuple[ObjectKey, int], Listing[PodRecord]]
    claims_for_pods: BatchLoader[tuple[ObjectKey, int], Listing[ClaimRecord]]
    claims_by_device: BatchLoader[tuple[DeviceKey, int], Listing[ClaimRecord]]
    # ((kind, namespace, name), limit): the events regarding an object, newest first
    events_for: BatchLoader[tuple[Regarding, int], Listing[EventRecord]]
    # list requests
    node_pages: BatchLoader[NodePage, Listing[NodeRecord]]
    gpu_pages: BatchLoader[GpuPage, Listing[GpuDevice]]
    pod_pages: BatchLoader[PodPage, Listing[PodRecord]]
    workload_pages: BatchLoader[WorkloadPage, Listing[WorkloadRecord]]

    @classmethod
    def build(cls, source: KubernetesSource | None) -> KubeLoaders:
        s = source
        return cls(
            status=_keyed(s, _status),
            gpu_views=_keyed(s, _gpu_views),
            pods=_keyed(s, lambda src, keys: src.get_pods(keys)),
            nodes=_keyed(s, lambda src, keys: src.get_nodes(keys)),
            gpus_by_uuid=_keyed(s, lambda src, keys: src.gpus_by_uuid(keys)),
            gpus_by_device=_keyed(s, lambda src, keys: src.gpus_by_device(keys)),
            claims=_keyed(s, lambda src, keys: src.get_claims(keys)),
            workloads=_keyed(s, lambda src, keys: src.get_workloads(keys)),
            pods_by_model=_limited(s, lambda src, keys, n: src.pods_by_model(keys, n)),
            pods_by_node=_limited(s, lambda src, keys, n: src.pods_by_node(keys, n)),
            gpus_by_node=_limited(s, lambda src, keys, n: src.gpus_by_node(keys, n)),
            workloads_by_model=_limited(s, lambda src, keys, n: src.workloads_by_model(keys, n)),
            pods_for_workloads=_limited(s, lambda src, keys, n: src.pods_for_workloads(keys, n)),
            claims_for_pods=_limited(s, lambda src, keys, n: src.claims_for_pods(keys, n)),
            claims_by_device=_limited(s, lambda src, keys, n: src.claims_by_device(keys, n)),
            events_for=_limited(s, lambda src, keys, n: src.events_for(keys, n)),
            node_pages=_pages(s, _node_page),
            gpu_pages=_pages(s, _gpu_page),
            pod_pages=_pages(s, _pod_page),
            workload_pages=_pages(s, _workload_page),
        )

"""The async read surface shared by the real source and the in-memory twin.

``KubernetesSource`` turns each protocol method into: which kinds it needs and how a direct
read could narrow them (a ``Selector``), then one query on a ``ClusterView``. A subclass
only decides where the view comes from (``_resolve``): the watch cache, a bounded direct
read for a kind not yet synced, or records set by a test.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from openrl_inspect.adapters.kubernetes._devices import (
    ClaimRecord,
    GpuDevice,
)
from openrl_inspect.adapters.kubernetes._event_store import Regarding
from openrl_inspect.adapters.kubernetes._events import EventRecord
from openrl_inspect.adapters.kubernetes._gpu_views import GpuSnapshot
from openrl_inspect.adapters.kubernetes._records import (
    DEFAULT_LABELS,
    DeviceKey,
    LabelKeys,
    Listing,
    NodeRecord,
    ObjectKey,
    PodRecord,
    SourceStatus,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._view import ClusterView, check_limit

T = TypeVar("T")

PODS, NODES, WORKLOADS = "pods", "nodes", "workloads"
SLICES, CLAIMS = "resourceslices", "resourceclaims"
JOBS, JOBSETS = "jobs", "jobsets"

TAINT_RULES = "devicetaintrules"
EVENTS = "events"

_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")


@dataclass(frozen=True, slots=True)
class Selector:
    """How a direct LIST may be narrowed on the server (the query still filters).

    ``required``: the read cannot be answered without the kind; when the cluster serves
    it only at API versions the adapter does not read, the read is refused. A kind that
    only links objects (ownership) is not required: the read goes on without it, marked
    degraded.
    """

    namespace: str | None = None
    labels: str | None = None
    fields: str | None = None
    required: bool = True


ALL = Selector()
LINKS = Selector(required=False)
# What a read by model needs beside its own kind: the kinds that link objects by
# ownership (``_links``); unlabelled, so a direct read cannot narrow them.
_OWNERSHIP = {WORKLOADS: LINKS, JOBS: LINKS, JOBSETS: LINKS}


def field_equals(field: str, value: str) -> str:
    """``field=value`` with the value escaped as the API server's field selectors expect."""
    escaped = value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
    return f"{field}={escaped}"


def label_in(key: str, values: Sequence[str]) -> str | None:
    """``key in (a,b)`` over the values that can be label values at all (others can
    never match, so leaving them out changes nothing)."""
    valid = sorted({v for v in values if _LABEL_VALUE.match(v)})
    return f"{key} in ({','.join(valid)})" if valid else None


def by_keys(keys: Sequence[ObjectKey]) -> Selector:
    distinct = {ObjectKey(*k) for k in keys}
    namespaces = {k.namespace for k in distinct}
    if len(distinct) == 1:
        (key,) = distinct
        return Selector(key.namespace or None, fields=field_equals("metadata.name", key.name))
    if len(namespaces) == 1:
        return Selector(namespace=namespaces.pop() or None)
    return ALL


def by_field(field: str, values: Sequence[str]) -> Selector:
    distinct = set(values)
    return Selector(fields=field_equals(field, distinct.pop())) if len(distinct) == 1 else ALL


# What the GPU views are made of.
GPU_VIEW_KINDS = (NODES, PODS, SLICES, CLAIMS, TAINT_RULES)


@dataclass(frozen=True, slots=True)
class GpuViewRead:
    """A snapshot of the GPU views, the kinds that were not in sync when it was taken
    (its parts from them may be stale) and whether a direct read was cut short."""

    snapshot: GpuSnapshot
    degraded: frozenset[str]
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Resolved:
    """A view to answer from, and what to say about the answer."""

    view: ClusterView
    degraded: bool = False
    truncated: bool = False

    def one(self, listing: Listing[T]) -> Listing[T]:
        if not (self.degraded or self.truncated):
            return listing
        return replace(
            listing,
            truncated=listing.truncated or self.truncated,
            degraded=listing.degraded or self.degraded,
        )

    def many(self, listings: list[Listing[T]]) -> list[Listing[T]]:
        return [self.one(listing) for listing in listings]


class KubernetesSource(abc.ABC):
    """Read-only access to the cluster objects the inspector shows.

    The one abstract source: the watch-cache source and the in-memory twin subclass it
    and decide only where a ``ClusterView`` comes from (``_resolve``) and what
    ``status`` says. Every read below is shared, so adding a read is one method here,
    one on ``ClusterView``, and its loader.

    Errors: ``BackendUnavailable`` / ``BackendTimeout`` / ``BackendProtocolError`` (backend
    ``"kubernetes"``) when an answer needs the API server and it fails;
    ``ApiVersionUnsupported`` when it needs a kind the cluster serves only at API versions
    the adapter does not read; ``InvalidInput`` for a negative limit. In steady state no
    read reaches the API server.
    """

    #: The label keys naming a model and a role (settings; the real source sets them).
    labels: LabelKeys = DEFAULT_LABELS

    @abc.abstractmethod
    async def _resolve(self, needs: Mapping[str, Selector]) -> Resolved: ...

    @abc.abstractmethod
    async def status(self) -> SourceStatus: ...

    # --- pods ---------------------------------------------------------------------------

    async def list_pods(
        self,
        *,
        model_id: str | None = None,
        namespace: str | None = None,
        node_name: str | None = None,
        phase: str | None = None,
        after: ObjectKey | None = None,
        limit: int = 100,
    ) -> Listing[PodRecord]:
        check_limit(limit)
        selector = Selector(
            namespace=namespace,
            labels=label_in(self.labels.model, [model_id]) if model_id is not None else None,
            fields=field_equals("spec.nodeName", node_name) if node_name is not None else None,
        )
        r = await self._resolve({**_OWNERSHIP, PODS: selector})
        return r.one(
            r.view.list_pods(
                model_id=model_id,
                namespace=namespace,
                node_name=node_name,
                phase=phase,
                after=after,
                limit=limit,
            )
        )

    async def get_pods(self, keys: Sequence[ObjectKey]) -> list[PodRecord | None]:
        if not keys:
            return []
        r = await self._resolve({**_OWNERSHIP, PODS: by_keys(keys)})
        return r.view.get_pods(keys)

    async def pods_by_model(
        self, model_ids: Sequence[str], limit: int = 100
    ) -> list[Listing[PodRecord]]:
        check_limit(limit)
        if not model_ids:
            return []
        by_label = Selector(labels=label_in(self.labels.model, model_ids))
        r = await self._resolve({**_OWNERSHIP, PODS: by_label})
        return r.many(r.view.pods_by_model(model_ids, limit))

    async def pods_by_node(
        self, node_names: Sequence[str], limit: int = 100
    ) -> list[Listing[PodRecord]]:
        check_limit(limit)
        if not node_names:
            return []
        r = await self._resolve({**_OWNERSHIP, PODS: by_field("spec.nodeName", node_names)})
        return r.many(r.view.pods_by_node(node_names, limit))

    async def pods_for_workloads(
        self, keys: Sequence[ObjectKey], limit: int = 100
    ) -> list[Listing[PodRecord]]:
        """The pods of each Workload's job (owner references and the controllers' UID
        labels), one listing per Workload key."""
        check_limit(limit)
        if not keys:
            return []
        namespace = by_keys(keys).namespace
        r = await self._resolve(
            {**_OWNERSHIP, WORKLOADS: Selector(namespace), PODS: Selector(namespace)}
        )
        return r.many(r.view.pods_for_workloads(keys, limit))

    # --- nodes --------------------------------------------------------------------------

    async def list_nodes(
        self, *, after: str | None = None, limit: int = 100
    ) -> Listing[NodeRecord]:
        check_limit(limit)
        r = await self._resolve({NODES: ALL})
        return r.one(r.view.list_nodes(after=after, limit=limit))

    async def get_nodes(self, names: Sequence[str]) -> list[NodeRecord | None]:
        if not names:
            return []
        r = await self._resolve({NODES: by_field("metadata.name", names)})
        return r.view.get_nodes(names)

    # --- GPUs ---------------------------------------------------------------------------
    # Every GPU read also needs the DeviceTaintRules: their taints are part of a GPU.

    async def list_gpus(
        self, *, node_name: str | None = None, after: DeviceKey | None = None, limit: int = 100
    ) -> Listing[GpuDevice]:
        check_limit(limit)
        selector = ALL if node_name is None else by_field("spec.nodeName", [node_name])
        r = await self._resolve({SLICES: selector, TAINT_RULES: ALL})
        return r.one(r.view.list_gpus(node_name=node_name, after=after, limit=limit))

    async def gpus_by_node(
        self, node_names: Sequence[str], limit: int = 100
    ) -> list[Listing[GpuDevice]]:
        check_limit(limit)
        if not node_names:
            return []
        r = await self._resolve({SLICES: by_field("spec.nodeName", node_names), TAINT_RULES: ALL})
        return r.many(r.view.gpus_by_node(node_names, limit))

    async def gpus_by_uuid(self, uuids: Sequence[str]) -> list[GpuDevice | None]:
        if not uuids:
            return []
        r = await self._resolve({SLICES: ALL, TAINT_RULES: ALL})
        return r.view.gpus_by_uuid(uuids)

    async def gpus_by_device(self, keys: Sequence[DeviceKey]) -> list[GpuDevice | None]:
        if not keys:
            return []
        r = await self._resolve({SLICES: ALL, TAINT_RULES: ALL})
        return r.view.gpus_by_device(keys)

    async def gpu_views(self) -> GpuViewRead:
        """Every node's GPUs with their holders, and the capacity counters: kept up to
        date by the watch cache, so this costs no walk over the cluster."""
        r = await self._resolve(dict.fromkeys(GPU_VIEW_KINDS, ALL))
        status = await self.status()
        degraded = frozenset(
            k.kind for k in status.kinds if k.kind in GPU_VIEW_KINDS and k.degraded
        )
        return GpuViewRead(r.view.gpu_snapshot(), degraded, r.truncated)

    # --- Kueue workloads ----------------------------------------------------------------

    async def list_workloads(
        self,
        *,
        namespace: str | None = None,
        model_id: str | None = None,
        after: ObjectKey | None = None,
        limit: int = 100,
    ) -> Listing[WorkloadRecord]:
        check_limit(limit)
        workloads = Selector(namespace=namespace)
        r = await self._resolve({**_OWNERSHIP, WORKLOADS: workloads, PODS: ALL})
        return r.one(
            r.view.list_workloads(namespace=namespace, model_id=model_id, after=after, limit=limit)
        )

    async def workloads_by_model(
        self, model_ids: Sequence[str], limit: int = 100
    ) -> list[Listing[WorkloadRecord]]:
        check_limit(limit)
        if not model_ids:
            return []
        by_label = Selector(labels=label_in(self.labels.model, model_ids))
        r = await self._resolve({**_OWNERSHIP, WORKLOADS: ALL, PODS: by_label})
        return r.many(r.view.workloads_by_model(model_ids, limit))

    async def get_workloads(self, keys: Sequence[ObjectKey]) -> list[WorkloadRecord | None]:
        if not keys:
            return []
        namespace = by_keys(keys).namespace
        r = await self._resolve({**_OWNERSHIP, WORKLOADS: ALL, PODS: Selector(namespace)})
        return r.view.get_workloads(keys)

    # --- DRA claims ---------------------------------------------------------------------

    async def get_claims(self, keys: Sequence[ObjectKey]) -> list[ClaimRecord | None]:
        if not keys:
            return []
        r = await self._resolve({CLAIMS: by_keys(keys)})
        return r.view.get_claims(keys)

    async def claims_for_pods(
        self, pod_keys: Sequence[ObjectKey], limit: int = 100
    ) -> list[Listing[ClaimRecord]]:
        check_limit(limit)
        if not pod_keys:
            return []
        pods = by_keys(pod_keys)
        r = await self._resolve({PODS: pods, CLAIMS: Selector(namespace=pods.namespace)})
        return r.many(r.view.claims_for_pods(pod_keys, limit))

    async def claims_by_device(
        self, keys: Sequence[DeviceKey], limit: int = 100
    ) -> list[Listing[ClaimRecord]]:
        check_limit(limit)
        if not keys:
            return []
        r = await self._resolve({CLAIMS: ALL})
        return r.many(r.view.claims_by_device(keys, limit))

    # --- events -------------------------------------------------------------------------

    async def events_for(
        self, objects: Sequence[Regarding], limit: int = 100
    ) -> list[Listing[EventRecord]]:
        """The events regarding each object, ``(kind, namespace, name)`` with namespace
        ``""`` for a Node, newest first (by when last seen); one listing per object,
        truncated when more exist. Only events still in the bounded cache are seen."""
        check_limit(limit)
        if not objects:
            return []
        # A direct read can be narrowed to one namespace, not by field: the regarding.*
        # field selectors are not served by every API server version.
        namespaces = {o[1] for o in objects}
        selector = Selector(namespace=namespaces.pop() or None) if len(namespaces) == 1 else ALL
        r = await self._resolve({EVENTS: selector})
        return r.many(r.view.events_for(objects, limit))

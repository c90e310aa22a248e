"""The read queries, answered from record stores (``ClusterView``).

Every list filters first and caps second, in key order, and says when it was truncated;
a cursor (``after``) continues from the last key of the previous page. Batch lookups
return one result per key, in key order (``None`` or an empty listing for a miss), as
DataLoaders want them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from openrl_inspect.adapters.kubernetes._dra_records import (
    ClaimRecord,
    GpuDevice,
)
from openrl_inspect.adapters.kubernetes._event_records import EventRecord
from openrl_inspect.adapters.kubernetes._event_store import EventStore, Regarding, event_store
from openrl_inspect.adapters.kubernetes._records import (
    DeviceKey,
    Listing,
    NodeRecord,
    ObjectKey,
    PodRecord,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._store import (
    Keyed,
    SliceStore,
    Store,
    claim_store,
    node_store,
    pod_store,
    slice_store,
    workload_store,
)
from openrl_inspect.errors import InvalidInput

T = TypeVar("T")
K = TypeVar("K", bound=Keyed)


def check_limit(limit: int) -> int:
    if limit < 0:
        raise InvalidInput("limit must not be negative")
    return limit


def page(items: Iterable[T], limit: int) -> Listing[T]:
    """The first ``limit`` items; truncated when at least one more exists."""
    check_limit(limit)
    out: list[T] = []
    for item in items:
        if len(out) == limit:
            return Listing(tuple(out), truncated=True)
        out.append(item)
    return Listing(tuple(out))


@dataclass
class ClusterView:
    """The kinds' stores and the queries over them."""

    pods: Store[PodRecord] = field(default_factory=pod_store)
    nodes: Store[NodeRecord] = field(default_factory=node_store)
    workloads: Store[WorkloadRecord] = field(default_factory=workload_store)
    slices: SliceStore = field(default_factory=slice_store)
    claims: Store[ClaimRecord] = field(default_factory=claim_store)
    events: EventStore = field(default_factory=event_store)

    # --- pods ---------------------------------------------------------------------------

    def list_pods(
        self,
        *,
        model_id: str | None = None,
        namespace: str | None = None,
        node_name: str | None = None,
        phase: str | None = None,
        after: ObjectKey | None = None,
        limit: int = 100,
    ) -> Listing[PodRecord]:
        keys: Iterator[ObjectKey]
        if model_id is not None or node_name is not None:
            sets = []
            if model_id is not None:
                sets.append(self.pods.keys_for("model", model_id))
            if node_name is not None:
                sets.append(self.pods.keys_for("node", node_name))
            chosen = set.intersection(*sets)
            keys = iter(sorted(k for k in chosen if after is None or k > after))
        else:
            start = after
            if namespace is not None and (after is None or after < ObjectKey(namespace, "")):
                start = ObjectKey(namespace, "")
            keys = self.pods.keys_after(start)

        def matches(pod: PodRecord) -> bool:
            if namespace is not None and pod.namespace != namespace:
                return False
            return phase is None or pod.phase == phase

        def select() -> Iterator[PodRecord]:
            for key in keys:
                if namespace is not None and key.namespace > namespace:
                    return
                pod = self.pods.get(key)
                if pod is not None and matches(pod):
                    yield pod

        return page(select(), limit)

    def get_pods(self, keys: Sequence[ObjectKey]) -> list[PodRecord | None]:
        return [self.pods.get(ObjectKey(*k)) for k in keys]

    def pods_by_model(self, model_ids: Sequence[str], limit: int = 100) -> list[Listing[PodRecord]]:
        return [self._by_index(self.pods, "model", m, limit) for m in model_ids]

    def pods_by_node(self, node_names: Sequence[str], limit: int = 100) -> list[Listing[PodRecord]]:
        return [self._by_index(self.pods, "node", n, limit) for n in node_names]

    # --- nodes --------------------------------------------------------------------------

    def list_nodes(self, *, after: str | None = None, limit: int = 100) -> Listing[NodeRecord]:
        start = None if after is None else ObjectKey("", after)
        return page(self._records(self.nodes, self.nodes.keys_after(start)), limit)

    def get_nodes(self, names: Sequence[str]) -> list[NodeRecord | None]:
        return [self.nodes.get(ObjectKey("", n)) for n in names]

    # --- GPUs ---------------------------------------------------------------------------

    def list_gpus(
        self, *, node_name: str | None = None, after: DeviceKey | None = None, limit: int = 100
    ) -> Listing[GpuDevice]:
        index = self.slices.gpus()
        devices = index.devices if node_name is None else index.by_node.get(node_name, [])
        return page((d for d in devices if after is None or d.key > after), limit)

    def gpus_by_node(self, node_names: Sequence[str], limit: int = 100) -> list[Listing[GpuDevice]]:
        index = self.slices.gpus()
        return [page(index.by_node.get(n, []), limit) for n in node_names]

    def gpus_by_uuid(self, uuids: Sequence[str]) -> list[GpuDevice | None]:
        index = self.slices.gpus()
        return [index.by_uuid.get(u) for u in uuids]

    def gpus_by_device(self, keys: Sequence[DeviceKey]) -> list[GpuDevice | None]:
        index = self.slices.gpus()
        return [index.by_key.get(DeviceKey(*k)) for k in keys]

    # --- Kueue workloads ----------------------------------------------------------------

    def list_workloads(
        self,
        *,
        namespace: str | None = None,
        model_id: str | None = None,
        after: ObjectKey | None = None,
        limit: int = 100,
    ) -> Listing[WorkloadRecord]:
        keys: Iterable[ObjectKey]
        if model_id is not None:
            keys = sorted(self.workloads.keys_for("model", model_id))
        else:
            keys = self.workloads.keys_after(after)
        selected = (
            w
            for w in self._records(self.workloads, keys)
            if (after is None or w.key > after) and (namespace is None or w.namespace == namespace)
        )
        return page(selected, limit)

    def workloads_by_model(
        self, model_ids: Sequence[str], limit: int = 100
    ) -> list[Listing[WorkloadRecord]]:
        return [self._by_index(self.workloads, "model", m, limit) for m in model_ids]

    # --- DRA claims ---------------------------------------------------------------------

    def get_claims(self, keys: Sequence[ObjectKey]) -> list[ClaimRecord | None]:
        return [self.claims.get(ObjectKey(*k)) for k in keys]

    def claims_for_pods(
        self, pod_keys: Sequence[ObjectKey], limit: int = 100
    ) -> list[Listing[ClaimRecord]]:
        """Claims reserved for each pod, plus those its spec names (allocated or not)."""
        out = []
        for raw_key in pod_keys:
            key = ObjectKey(*raw_key)
            keys = set(self.claims.keys_for("pod", key))
            pod = self.pods.get(key)
            if pod is not None:
                keys.update(ObjectKey(pod.namespace, name) for name in pod.claim_names)
            out.append(page(self._records(self.claims, sorted(keys)), limit))
        return out

    def claims_by_device(
        self, keys: Sequence[DeviceKey], limit: int = 100
    ) -> list[Listing[ClaimRecord]]:
        """The claims a device is allocated to (more than one only for shared devices)."""
        return [self._by_index(self.claims, "device", DeviceKey(*k), limit) for k in keys]

    # --- events -------------------------------------------------------------------------

    def events_for(
        self, objects: Sequence[Regarding], limit: int = 100
    ) -> list[Listing[EventRecord]]:
        """The events regarding each (kind, namespace, name), newest first by last seen."""
        return [page(self.events.for_object((o[0], o[1], o[2])), limit) for o in objects]

    # --- helpers ------------------------------------------------------------------------

    @staticmethod
    def _records(store: Store[K], keys: Iterable[ObjectKey]) -> Iterator[K]:
        for key in keys:
            record = store.get(key)
            if record is not None:
                yield record

    def _by_index(self, store: Store[K], index: str, value: Hashable, limit: int) -> Listing[K]:
        keys = sorted(store.keys_for(index, value))
        return page(self._records(store, keys), limit)

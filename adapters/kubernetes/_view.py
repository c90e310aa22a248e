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

from openrl_inspect.adapters.kubernetes._devices import (
    ClaimRecord,
    GpuDevice,
)
from openrl_inspect.adapters.kubernetes._event_store import Regarding
from openrl_inspect.adapters.kubernetes._events import EventRecord
from openrl_inspect.adapters.kubernetes._gpu_views import GpuSnapshot, GpuViews
from openrl_inspect.adapters.kubernetes._links import Linked, LinkedStores
from openrl_inspect.adapters.kubernetes._records import (
    DeviceKey,
    Listing,
    NodeRecord,
    ObjectKey,
    PodRecord,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._store import GpuIndex, Keyed, Store
from openrl_inspect.core.errors import InvalidInput

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
class ClusterView(LinkedStores):
    """The kinds' stores and the queries over them. Pods and Workloads come out with
    their model filled in from ownership when they carry no model label."""

    # Derived from the stores, so never passed in: a view made by ``dataclasses.replace``
    # (a direct read's stores) gets its own, unwatched, rebuilt from its stores.
    gpu_views: GpuViews = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.gpu_views = GpuViews(self.nodes, self.pods, self.slices, self.claims, self.taint_rules)

    def gpu_snapshot(self) -> GpuSnapshot:
        """Each node's GPUs with their holders and the capacity counters, as of now."""
        return self.gpu_views.snapshot()

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
                sets.append(self.model_pod_keys(model_id))
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
                    yield self.with_model(pod)

        return page(select(), limit)

    def get_pods(self, keys: Sequence[ObjectKey]) -> list[PodRecord | None]:
        found = (self.pods.get(ObjectKey(*k)) for k in keys)
        return [None if p is None else self.with_model(p) for p in found]

    def pods_by_model(self, model_ids: Sequence[str], limit: int = 100) -> list[Listing[PodRecord]]:
        return [self._linked(self.pods, self.model_pod_keys(m), limit) for m in model_ids]

    def pods_by_node(self, node_names: Sequence[str], limit: int = 100) -> list[Listing[PodRecord]]:
        return [self._linked(self.pods, self.pods.keys_for("node", n), limit) for n in node_names]

    def pods_for_workloads(
        self, keys: Sequence[ObjectKey], limit: int = 100
    ) -> list[Listing[PodRecord]]:
        """The pods of each Workload's job, by ownership (empty for an unknown Workload)."""
        out = []
        for key in keys:
            w = self.workloads.get(ObjectKey(*key))
            pod_keys = set() if w is None else self.workload_pod_keys(w)
            out.append(self._linked(self.pods, pod_keys, limit))
        return out

    # --- nodes --------------------------------------------------------------------------

    def list_nodes(self, *, after: str | None = None, limit: int = 100) -> Listing[NodeRecord]:
        start = None if after is None else ObjectKey("", after)
        return page(self._records(self.nodes, self.nodes.keys_after(start)), limit)

    def get_nodes(self, names: Sequence[str]) -> list[NodeRecord | None]:
        return [self.nodes.get(ObjectKey("", n)) for n in names]

    # --- GPUs ---------------------------------------------------------------------------

    def gpu_index(self) -> GpuIndex:
        """The GPUs with the DeviceTaintRules' taints applied (rebuilt when either changes)."""
        return self.slices.gpus(self.taint_rules)

    def list_gpus(
        self, *, node_name: str | None = None, after: DeviceKey | None = None, limit: int = 100
    ) -> Listing[GpuDevice]:
        index = self.gpu_index()
        devices = index.devices if node_name is None else index.by_node.get(node_name, [])
        return page((d for d in devices if after is None or d.key > after), limit)

    def gpus_by_node(self, node_names: Sequence[str], limit: int = 100) -> list[Listing[GpuDevice]]:
        index = self.gpu_index()
        return [page(index.by_node.get(n, []), limit) for n in node_names]

    def gpus_by_uuid(self, uuids: Sequence[str]) -> list[GpuDevice | None]:
        index = self.gpu_index()
        return [index.by_uuid.get(u) for u in uuids]

    def gpus_by_device(self, keys: Sequence[DeviceKey]) -> list[GpuDevice | None]:
        index = self.gpu_index()
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
            keys = sorted(self.model_workload_keys(model_id))
        else:
            keys = self.workloads.keys_after(after)
        selected = (
            self.with_model(w)
            for w in self._records(self.workloads, keys)
            if (after is None or w.key > after) and (namespace is None or w.namespace == namespace)
        )
        return page(selected, limit)

    def get_workloads(self, keys: Sequence[ObjectKey]) -> list[WorkloadRecord | None]:
        found = (self.workloads.get(ObjectKey(*k)) for k in keys)
        return [None if w is None else self.with_model(w) for w in found]

    def workloads_by_model(
        self, model_ids: Sequence[str], limit: int = 100
    ) -> list[Listing[WorkloadRecord]]:
        return [self._linked(self.workloads, self.model_workload_keys(m), limit) for m in model_ids]

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

    def _linked(
        self, store: Store[Linked], keys: Iterable[ObjectKey], limit: int
    ) -> Listing[Linked]:
        """A page of pods or Workloads in key order, each with its model filled in."""
        records = self._records(store, sorted(keys))
        return page((self.with_model(r) for r in records), limit)

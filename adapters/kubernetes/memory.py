"""``MemoryKubernetesSource``: the in-memory twin of the Kubernetes source.

Records are set directly (``put``, ``put_gpus``, ``remove``; DeviceTaintRules too, whose
taints the GPU reads then apply as the real source does, and Events, into a store
bounded as the real one is); reads go through the same
queries as the real watch cache, so a demo or a unit test sees the same ordering,
truncation and batching. ``failure`` makes every read raise (a backend outage),
``degraded_kinds`` marks answers degraded as an unsynced cache would, and
``unsupported`` (kind -> the versions "served") refuses the reads that need a kind as a
cluster serving it only at versions the adapter does not read does. ``parse_object``
turns an object as the API server serves it into its record with the real parsers, so
a twin's objects can be written as the controllers write them.

``MemoryLeases`` is the twin of the Lease client leader election uses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from openrl_inspect.adapters.kubernetes._devices import (
    ClaimRecord,
    GpuDevice,
    SliceRecord,
    TaintRuleRecord,
)
from openrl_inspect.adapters.kubernetes._dra import parse_claim, parse_slice, parse_taint_rule
from openrl_inspect.adapters.kubernetes._event_store import EventStore
from openrl_inspect.adapters.kubernetes._events import EventRecord, parse_event
from openrl_inspect.adapters.kubernetes._lease import LeaseConflict, LeaseRecord
from openrl_inspect.adapters.kubernetes._pods import parse_node, parse_pod
from openrl_inspect.adapters.kubernetes._queries import (
    CLAIMS,
    EVENTS,
    JOBS,
    JOBSETS,
    NODES,
    PODS,
    SLICES,
    TAINT_RULES,
    WORKLOADS,
    KubernetesSource,
    Resolved,
    Selector,
)
from openrl_inspect.adapters.kubernetes._records import (
    JobRecord,
    KindStatus,
    NodeRecord,
    ObjectKey,
    PodRecord,
    SourceStatus,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._resources import WATCHED_RESOURCES
from openrl_inspect.adapters.kubernetes._view import ClusterView
from openrl_inspect.adapters.kubernetes._workloads import parse_job, parse_workload
from openrl_inspect.core.errors import BackendError

Record = (
    PodRecord
    | NodeRecord
    | WorkloadRecord
    | SliceRecord
    | ClaimRecord
    | JobRecord
    | TaintRuleRecord
    | EventRecord
)

_RESOURCES = {r.kind: r for r in WATCHED_RESOURCES}

# By ``kind``: the parsers the real source reads the API server's JSON with.
_PARSERS: dict[str, Callable[[Mapping[str, Any]], Record | None]] = {
    "Pod": parse_pod,
    "Node": parse_node,
    "Workload": parse_workload,
    "ResourceSlice": parse_slice,
    "ResourceClaim": parse_claim,
    "Job": lambda obj: parse_job(obj, "Job"),
    "JobSet": lambda obj: parse_job(obj, "JobSet"),
    "DeviceTaintRule": parse_taint_rule,
    "Event": parse_event,
}


def parse_object(obj: Mapping[str, Any]) -> Record | None:
    """An object as the API server serves it (with its ``kind``; Events in the
    events.k8s.io/v1 shape) -> its record, through the real source's parsers with the
    default label keys. None for a kind the adapter does not read, or a malformed object."""
    parser = _PARSERS.get(str(obj.get("kind")))
    return None if parser is None else parser(obj)


class MemoryKubernetesSource(KubernetesSource):
    """A ``KubernetesSource`` over records held in memory."""

    def __init__(self, records: Iterable[Record] = (), *, events: EventStore | None = None) -> None:
        self.view = ClusterView() if events is None else ClusterView(events=events)
        self.view.gpu_views.watch()  # the twin's stores live as long as it: follow them
        self.failure: BackendError | None = None
        self.degraded_kinds: set[str] = set()
        self.unsupported: dict[str, tuple[str, ...]] = {}
        self.put(*records)

    def put(self, *records: Record) -> None:
        """Add or replace records (by kind and key)."""
        for record in records:
            if isinstance(record, PodRecord):
                self.view.pods.upsert(record)
            elif isinstance(record, NodeRecord):
                self.view.nodes.upsert(record)
            elif isinstance(record, WorkloadRecord):
                self.view.workloads.upsert(record)
            elif isinstance(record, SliceRecord):
                self.view.slices.upsert(record)
            elif isinstance(record, JobRecord):
                (self.view.jobsets if record.kind == "JobSet" else self.view.jobs).upsert(record)
            elif isinstance(record, TaintRuleRecord):
                self.view.taint_rules.upsert(record)
            elif isinstance(record, EventRecord):
                self.view.events.upsert(record)
            else:
                self.view.claims.upsert(record)

    def put_gpus(self, devices: Iterable[GpuDevice]) -> None:
        """Publish devices as the ResourceSlices they name (one slice per slice_name)."""
        slices: dict[str, list[GpuDevice]] = {}
        for device in devices:
            slices.setdefault(device.slice_name, []).append(device)
        for name, members in slices.items():
            first = members[0]
            self.view.slices.upsert(
                SliceRecord(
                    name=name,
                    driver=first.driver,
                    pool=first.pool,
                    pool_generation=first.pool_generation,
                    node_name=first.node_name,
                    devices=tuple(members),
                )
            )

    def remove(self, kind: str, key: ObjectKey) -> None:
        """Delete one record; ``kind`` is pods, nodes, workloads, resourceslices,
        resourceclaims, jobs, jobsets, devicetaintrules or events (cluster-scoped keys
        have namespace ``""``)."""
        self._stores()[kind].delete(ObjectKey(*key))

    def _stores(self) -> dict[str, Any]:
        v = self.view
        return {
            PODS: v.pods,
            NODES: v.nodes,
            WORKLOADS: v.workloads,
            SLICES: v.slices,
            CLAIMS: v.claims,
            JOBS: v.jobs,
            JOBSETS: v.jobsets,
            TAINT_RULES: v.taint_rules,
            EVENTS: v.events,
        }

    async def _resolve(self, needs: Mapping[str, Selector]) -> Resolved:
        if self.failure is not None:
            raise self.failure
        degraded = bool(self.degraded_kinds & set(needs))
        for kind, selector in needs.items():
            if kind in self.unsupported:
                if selector.required:
                    raise self._status(kind).refusal()
                degraded = True
        return Resolved(self.view, degraded=degraded)

    def _status(self, kind: str) -> KindStatus:
        resource = _RESOURCES[kind]
        seen = self.unsupported.get(kind, ())
        degraded = kind in self.degraded_kinds
        error = None if self.failure is None else self.failure.message
        return KindStatus(
            kind=kind,
            served=True,
            synced=not degraded,
            objects=0 if seen else len(self._stores()[kind]),
            list_age_s=0.0,
            error_age_s=None if error is None else 0.0,
            last_error=error,
            relists=1,
            watch_restarts=1,
            evicted=self._stores()[kind].evicted,
            group=resource.group,
            version=None if seen else resource.versions[0],
            understood=resource.versions,
            unsupported_versions=seen,
        )

    async def status(self) -> SourceStatus:
        return SourceStatus("kubernetes", tuple(self._status(kind) for kind in self._stores()))


class MemoryLeases:
    """The twin of ``KubeLeases``: Leases in a dict, with the API server's conflict rule
    (a create of an existing Lease, or a replace carrying a stale ``resourceVersion``,
    raises ``LeaseConflict``). ``fail`` makes the next calls raise, as an unreachable
    API server would."""

    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], LeaseRecord] = {}
        self.fail: BackendError | None = None
        self.writes = 0
        self._version = 0

    async def get(self, namespace: str, name: str) -> LeaseRecord | None:
        self._check()
        return self.leases.get((namespace, name))

    async def create(self, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord:
        self._check()
        if (namespace, name) in self.leases:
            raise LeaseConflict("kubernetes", "create lease: it exists")
        return self._store(namespace, name, record)

    async def replace(self, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord:
        self._check()
        current = self.leases.get((namespace, name))
        if current is None or current.resource_version != record.resource_version:
            raise LeaseConflict("kubernetes", "replace lease: written by someone else first")
        return self._store(namespace, name, record)

    def _store(self, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord:
        self._version += 1
        self.writes += 1
        stored = dataclasses.replace(record, resource_version=str(self._version))
        self.leases[namespace, name] = stored
        return stored

    def _check(self) -> None:
        if self.fail is not None:
            raise self.fail

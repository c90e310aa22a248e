"""Keyed record stores with secondary indexes, and the GPU view over ResourceSlices.

A ``Store`` holds one kind's records by ``ObjectKey``; secondary indexes (pods by model,
by node; claims by reserving pod, by device) are kept up to date on every upsert and
delete, so a lookup never scans. The watch cache, the direct-read fallback and the
in-memory twin all keep their records in these stores and answer through the same
queries (``kubernetes_view``), so they cannot disagree.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Generic, Protocol, TypeVar

from openrl_inspect.adapters.kubernetes._devices import (
    ClaimRecord,
    GpuDevice,
    SliceRecord,
    TaintRuleRecord,
)
from openrl_inspect.adapters.kubernetes._records import (
    DeviceKey,
    JobRecord,
    NodeRecord,
    ObjectKey,
    PodRecord,
    WorkloadRecord,
)


class Keyed(Protocol):
    @property
    def key(self) -> ObjectKey: ...


R = TypeVar("R", bound=Keyed)

IndexFn = Callable[[R], Iterable[Hashable]]
# Called with (old, new) after every change: None for "absent" on either side.
Listener = Callable[[R | None, R | None], None]


class Store(Generic[R]):
    """Records of one kind by key, with incrementally maintained secondary indexes."""

    def __init__(self, indexes: Mapping[str, IndexFn[R]] | None = None) -> None:
        self._items: dict[ObjectKey, R] = {}
        self._index_fns: dict[str, IndexFn[R]] = dict(indexes or {})
        self._indexes: dict[str, dict[Hashable, set[ObjectKey]]] = {
            name: {} for name in self._index_fns
        }
        self._sorted: list[ObjectKey] | None = None
        self._listeners: list[Listener[R]] = []
        self.version = 0
        # Records a bounded store dropped to stay within its bounds (see EventStore).
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: ObjectKey) -> R | None:
        return self._items.get(key)

    def values(self) -> Iterator[R]:
        return iter(self._items.values())

    def listen(self, listener: Listener[R]) -> None:
        """Call ``listener(old, new)`` after each upsert and delete (a relist's ``replace``
        is made of those): how views derived from several stores stay up to date."""
        self._listeners.append(listener)

    def keys_for(self, index: str, value: Hashable) -> set[ObjectKey]:
        return self._indexes[index].get(value, set())

    def sorted_keys(self) -> list[ObjectKey]:
        if self._sorted is None:
            self._sorted = sorted(self._items)
        return self._sorted

    def keys_after(self, after: ObjectKey | None) -> Iterator[ObjectKey]:
        keys = self.sorted_keys()
        start = 0 if after is None else bisect.bisect_right(keys, after)
        # Not a slice: a page reads only its first keys. The list is never changed in
        # place (a change makes a new one), so iterating it after a change is safe.
        return itertools.islice(keys, start, None)

    def upsert(self, record: R) -> None:
        key = record.key
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        else:
            self._sorted = None
        self._items[key] = record
        self._index(key, record)
        self.version += 1
        for listener in self._listeners:
            listener(old, record)

    def delete(self, key: ObjectKey) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
            self._sorted = None
            self.version += 1
            for listener in self._listeners:
                listener(old, None)

    def replace(self, records: Iterable[R], namespace: str | None = None) -> None:
        """Make the store hold exactly ``records`` (within ``namespace`` if given)."""
        fresh = {record.key: record for record in records}
        stale = [k for k in self._items if k not in fresh]
        if namespace is not None:
            stale = [k for k in stale if k.namespace == namespace]
        for key in stale:
            self.delete(key)
        for record in fresh.values():
            if self._items.get(record.key) != record:
                self.upsert(record)
        self.version += 1

    def _index(self, key: ObjectKey, record: R) -> None:
        for name, fn in self._index_fns.items():
            table = self._indexes[name]
            for value in fn(record):
                table.setdefault(value, set()).add(key)

    def _unindex(self, key: ObjectKey, record: R) -> None:
        for name, fn in self._index_fns.items():
            table = self._indexes[name]
            for value in fn(record):
                keys = table.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del table[value]


def _one(value: str | None) -> tuple[str, ...]:
    return (value,) if value else ()


def pod_store() -> Store[PodRecord]:
    return Store[PodRecord](
        {
            "model": lambda p: _one(p.model_id),
            "node": lambda p: _one(p.node_name),
            # Its jobs, and itself: Kueue's plain-pod integration makes the pod the
            # Workload's owner.
            "job": lambda p: [(p.namespace, u) for u in (*p.job_uids, p.uid) if u],
        }
    )


def node_store() -> Store[NodeRecord]:
    return Store[NodeRecord]()


def workload_store() -> Store[WorkloadRecord]:
    return Store[WorkloadRecord](
        {
            "model": lambda w: _one(w.model_id),
            "job": lambda w: [(w.namespace, u) for u in w.job_uids if u],
        }
    )


def job_store() -> Store[JobRecord]:
    """Jobs or JobSets, by model label, by UID and by owner UID (a JobSet's Jobs)."""
    return Store[JobRecord](
        {
            "model": lambda j: _one(j.model_id),
            "uid": lambda j: [(j.namespace, j.uid)] if j.uid else [],
            "owner": lambda j: [(j.namespace, u) for u in j.owner_uids if u],
        }
    )


def slice_store() -> SliceStore:
    return SliceStore()


def claim_store() -> Store[ClaimRecord]:
    return Store[ClaimRecord](
        {
            # reservedFor names pods of the claim's own namespace.
            "pod": lambda c: [ObjectKey(c.namespace, p.name) for p in c.reserved_pods],
            "device": lambda c: [d.key for d in c.devices],
        }
    )


def taint_rule_store() -> Store[TaintRuleRecord]:
    return Store[TaintRuleRecord]()


def with_parents(devices: Sequence[GpuDevice], rules: Sequence[TaintRuleRecord]) -> list[GpuDevice]:
    """One pool's devices (rules applied) with each MIG slice carrying its GPU's taints,
    marked ``inherited_from``: a slice is on its GPU, so what makes the GPU unhealthy
    makes the slice so. The GPU's taints are those of its own device when the driver
    publishes it (dynamic MIG), else those of the DeviceTaintRules that name it by device
    name (``gpu-3`` for ``gpu-3-mig-...``; static MIG publishes slices only). The
    scheduler does not apply inherited taints: they say the hardware is sick."""
    whole = {d.gpu_id: d for d in devices if not d.is_slice}
    out = []
    for device in devices:
        parent_name = device.parent_device
        if not device.is_slice or (parent_name is None and device.gpu_id not in whole):
            out.append(device)
            continue
        parent = whole.get(device.gpu_id)
        if parent is not None:
            inherited = parent.taints
        else:
            named = (r for r in rules if r.evaluable and r.device and r.names(device, parent_name))
            inherited = tuple(r.taint for r in named)
        source = parent.device if parent is not None else parent_name
        own = {(t.key, t.value, t.effect) for t in device.taints}
        extra = tuple(
            replace(t, inherited_from=source)
            for t in inherited
            if (t.key, t.value, t.effect) not in own
        )
        out.append(replace(device, taints=device.taints + extra) if extra else device)
    return out


def with_rules(device: GpuDevice, rules: Sequence[TaintRuleRecord]) -> GpuDevice:
    """The device with the taints of the DeviceTaintRules that select it added (taints are
    cumulative: the driver's and every rule's). A rule that also needs a CEL expression
    or a DeviceClass to match cannot be evaluated here; applying it would taint devices it
    may not select, ignoring it would hide a taint, so it is named in
    ``rules_not_evaluated`` instead (only where its other criteria hold)."""
    selecting = [r for r in rules if r.names(device)]
    if not selecting:
        return device
    return replace(
        device,
        taints=device.taints + tuple(r.taint for r in selecting if r.evaluable),
        rules_not_evaluated=tuple(r.name for r in selecting if not r.evaluable),
    )


class GpuIndex:
    """The devices of each pool's newest generation, by key, UUID and node, with the
    taints of the DeviceTaintRules applied.

    A driver that republishes a pool bumps its generation; slices of older generations
    may linger until it deletes them and must not count.
    """

    def __init__(
        self, slices: Iterable[SliceRecord], rules: Iterable[TaintRuleRecord] = ()
    ) -> None:
        slices = list(slices)
        ordered = sorted(rules, key=lambda r: r.name)
        newest: dict[tuple[str, str], int] = {}
        for s in slices:
            pool = (s.driver, s.pool)
            newest[pool] = max(newest.get(pool, s.pool_generation), s.pool_generation)
        pools: dict[tuple[str, str], list[GpuDevice]] = {}
        for s in slices:
            if s.pool_generation == newest[(s.driver, s.pool)]:
                pools.setdefault((s.driver, s.pool), []).extend(
                    with_rules(d, ordered) for d in s.devices
                )
        devices = [d for pool in pools.values() for d in with_parents(pool, ordered)]
        devices.sort(key=lambda d: d.key)
        self.devices: list[GpuDevice] = devices
        self.keys: list[DeviceKey] = [d.key for d in devices]
        self.by_key: dict[DeviceKey, GpuDevice] = {d.key: d for d in devices}
        self.by_uuid: dict[str, GpuDevice] = {d.uuid: d for d in devices if d.uuid}
        self.by_node: dict[str, list[GpuDevice]] = {}
        for d in devices:
            if d.node_name:
                self.by_node.setdefault(d.node_name, []).append(d)


class SliceStore(Store[SliceRecord]):
    """A slice store that keeps its ``GpuIndex`` until the slices or the rules change."""

    def __init__(self) -> None:
        # By pool: a pool's newest generation decides which of its slices count.
        super().__init__({"pool": lambda s: [(s.driver, s.pool)]})
        # (slices' version, the rule store, its version, the index). The rule store is
        # held, not its id: a direct read's short-lived store could reuse a freed id.
        self._gpu_index: tuple[int, Store[TaintRuleRecord] | None, int, GpuIndex] | None = None

    def gpus(self, rules: Store[TaintRuleRecord] | None = None) -> GpuIndex:
        rules_version = -1 if rules is None else rules.version
        cached = self._gpu_index
        if (
            cached is None
            or cached[0] != self.version
            or cached[1] is not rules
            or cached[2] != rules_version
        ):
            index = GpuIndex(self.values(), () if rules is None else rules.values())
            cached = self._gpu_index = (self.version, rules, rules_version, index)
        return cached[3]

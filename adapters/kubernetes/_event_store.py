"""The Events store: bounded in count and in age, indexed by the object each regards.

Events are the one kind whose volume the cluster does not bound for us (a crash-looping
pod or a full queue writes them all day), so the store keeps at most ``max_events`` and
none older than ``max_age_s`` (by when each was last seen), evicting the oldest first,
and counts what it evicted. An event already too old when it arrives is not kept (the
API server itself drops events after its TTL, an hour by default).

Oldest-first eviction uses a heap of (last seen, sequence, key) with lazy deletion: an
update pushes a fresh entry and the stale one is skipped when it surfaces, and the heap
is rebuilt once stale entries outnumber live ones, so every operation stays logarithmic.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Iterable, Sequence

from openrl_inspect.adapters.kubernetes._events import EventRecord
from openrl_inspect.adapters.kubernetes._records import ObjectKey
from openrl_inspect.adapters.kubernetes._store import Store

#: (kind, namespace, name) of the object an event regards; namespace "" for Nodes.
Regarding = tuple[str, str, str]

DEFAULT_MAX_EVENTS = 20_000
DEFAULT_MAX_AGE_S = 3600.0


def regarding_of(event: EventRecord) -> Regarding:
    ref = event.regarding
    return (ref.kind, ref.namespace, ref.name)


def newest_event_first(event: EventRecord) -> tuple[float, float, str, str]:
    """Sort key: last seen, then first seen, newest first (then by name, stable)."""
    return (-(event.last_at or 0.0), -(event.first_at or 0.0), event.namespace, event.name)


class EventStore(Store[EventRecord]):
    """A ``Store`` of Events that bounds itself on every write."""

    def __init__(
        self,
        max_events: int = DEFAULT_MAX_EVENTS,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__({"regarding": lambda e: (regarding_of(e),)})
        self.max_events = max_events
        self.max_age_s = max_age_s
        self.clock = clock
        self._seen: dict[ObjectKey, tuple[float, int]] = {}
        self._heap: list[tuple[float, int, ObjectKey]] = []
        self._seq = itertools.count()

    def for_object(self, regarding: Regarding) -> list[EventRecord]:
        """The events regarding one object, newest first."""
        self.expire()
        found = (self.get(k) for k in self.keys_for("regarding", regarding))
        return sorted((e for e in found if e is not None), key=newest_event_first)

    def upsert(self, record: EventRecord) -> None:
        now = self.clock()
        stamp = record.last_at if record.last_at is not None else now
        if stamp < now - self.max_age_s:
            self.delete(record.key)  # an update that is already too old: gone
            return
        super().upsert(record)
        seq = next(self._seq)
        self._seen[record.key] = (stamp, seq)
        heapq.heappush(self._heap, (stamp, seq, record.key))
        self._bound(now)

    def delete(self, key: ObjectKey) -> None:
        super().delete(key)
        self._seen.pop(key, None)  # its heap entry goes stale and is skipped later

    def replace(self, records: Iterable[EventRecord], namespace: str | None = None) -> None:
        # A LIST may hold more than the bound: keep the newest, so a relist of a busy
        # cluster does not churn through events only to evict them again.
        fresh: Sequence[EventRecord] = sorted(records, key=newest_event_first)
        if len(fresh) > self.max_events:
            self.evicted += len(fresh) - self.max_events
            fresh = fresh[: self.max_events]
        super().replace(reversed(fresh), namespace)

    def expire(self) -> None:
        """Evict what has grown too old since it was stored (reads call this)."""
        self._bound(self.clock())

    def _bound(self, now: float) -> None:
        oldest_allowed = now - self.max_age_s
        while self._heap:
            stamp, seq, key = self._heap[0]
            if self._seen.get(key) != (stamp, seq):
                heapq.heappop(self._heap)  # stale: updated or deleted since
                continue
            if len(self) <= self.max_events and stamp >= oldest_allowed:
                break
            heapq.heappop(self._heap)
            self.delete(key)
            self.evicted += 1
        if len(self._heap) > 2 * len(self._seen) + 64:
            self._heap = [(s, q, k) for k, (s, q) in self._seen.items()]
            heapq.heapify(self._heap)


def event_store(
    max_events: int = DEFAULT_MAX_EVENTS, max_age_s: float = DEFAULT_MAX_AGE_S
) -> EventStore:
    return EventStore(max_events, max_age_s)

"""Per-request loaders for logs: worker log pages, client log slices, a model's pods.

``client`` is one Redis round trip per batch (``RedisClientLogs.client_logs``).
``worker`` reads the pages of one batch concurrently, each from the backend its key
names; an expected failure (an ``InspectorError``) fails its own key only, so one
model's failing read does not fail its siblings' fields. ``model_pods`` asks the
Kubernetes source for the pods of a batch of models once, best effort: the names only
widen a Cloud Logging filter to entries that lack the model label.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from openrl_inspect.adapters.kubernetes import (
    EventRecord,
    KubernetesSource,
    ObjectKey,
    ObjectRef,
    PodLogReader,
    Regarding,
)
from openrl_inspect.adapters.logs import (
    MAX_EVENT_OBJECTS,
    MAX_MODEL_PODS,
    LogEntry,
    LogPage,
    LogQuery,
    LogSource,
)
from openrl_inspect.adapters.redis import ClientLogReader, ClientLogRequest, ClientLogSlice
from openrl_inspect.core.errors import (
    BackendError,
    BackendNotConfigured,
    InspectorError,
    InvalidInput,
)
from openrl_inspect.loaders.batch import BatchLoader

WorkerBackend = Literal["cloud_logging", "kubernetes"]

# Worker-log backend reads one request may make (each logs field makes one to a few):
# Cloud Logging's read quota is per minute, and a list of models asking each for its
# logs must not spend it in one query.
MAX_WORKER_READS = 32


@dataclass(frozen=True, slots=True)
class WorkerRead:
    """One page of worker logs: from ``backend``, for ``query``, resuming at ``cursor``;
    ``pods`` (Kubernetes only) reads those pods instead of the query's model's."""

    backend: WorkerBackend
    query: LogQuery
    cursor: str | None = None
    pods: tuple[ObjectKey, ...] | None = None


# The events log, read once per request for every model that needs its past: the
# newest entries of the union of their objects, over at most this long a window.
EVENTS_LOG_ENTRIES = 300
EVENTS_LOG_WINDOW_S = 72 * 3600.0


@dataclass(frozen=True, slots=True)
class EventsLogRead:
    """A model's past in Cloud Logging's events log: the Events about ``objects``
    (pods and Workloads long deleted, their nodes) between ``start`` and ``end``."""

    objects: tuple[Regarding, ...]
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class EventsLogAnswer:
    """The Events found for one read, oldest first; ``complete`` is False when the
    request's one read was cut (more objects than it names, or more entries than it
    returns), so fewer may be shown than there were."""

    events: tuple[EventRecord, ...]
    complete: bool


def event_of(entry: LogEntry) -> EventRecord | None:
    """An events-log entry as the Event record the watch cache would hold (the
    exporter keeps no count: each entry is one sighting, at its timestamp)."""
    about = entry.event
    if about is None:
        return None
    at = entry.timestamp.timestamp()
    ident = entry.insert_id or f"log-{about.kind}-{about.name}-{at:.3f}"
    return EventRecord(
        namespace=about.namespace or "",
        name=ident,
        uid=ident,
        type=about.type,
        reason=about.reason,
        note=entry.message or None,
        action=None,
        regarding=ObjectRef(about.kind, about.namespace or "", about.name),
        related=None,
        reporting_controller=about.component,
        count=1,
        first_at=at,
        last_at=at,
    )


async def read_events_log(source: LogSource, reads: list[EventsLogRead]) -> list[EventsLogAnswer]:
    """One events-log read for a batch of models: their objects together (at most
    ``MAX_EVENT_OBJECTS``, in the order asked), over the window that covers theirs."""
    objects = list(dict.fromkeys(o for r in reads for o in r.objects))
    sent = set(objects[:MAX_EVENT_OBJECTS])
    end = max(r.end for r in reads)
    start = max(min(r.start for r in reads), end - EVENTS_LOG_WINDOW_S)
    query = LogQuery(
        start=datetime.fromtimestamp(start, tz=UTC),
        end=datetime.fromtimestamp(max(end, start + 1.0), tz=UTC),
        event_objects=tuple(objects[:MAX_EVENT_OBJECTS]),
        events_only=True,
        newest_first=True,
        limit=EVENTS_LOG_ENTRIES,
    )
    page = await source.entries(query)
    found = [e for e in (event_of(x) for x in page.entries) if e is not None]
    found.sort(key=lambda e: (e.last_at or 0.0, e.name))
    out = []
    for r in reads:
        wanted = set(r.objects)
        mine = tuple(
            e
            for e in found
            if (e.regarding.kind, e.regarding.namespace, e.regarding.name) in wanted
            and r.start <= (e.last_at or 0.0) <= r.end
        )
        complete = wanted <= sent and not page.truncated and r.start >= start
        out.append(EventsLogAnswer(mine, complete))
    return out


def events_log_loader(source: LogSource | None) -> BatchLoader[EventsLogRead, EventsLogAnswer]:
    async def load(reads: list[EventsLogRead]) -> list[EventsLogAnswer]:
        if source is None:
            raise BackendNotConfigured("cloud_logging", "Cloud Logging is not configured")
        return await read_events_log(source, reads)

    return BatchLoader(load)


@dataclass(frozen=True)
class LogLoaders:
    client: BatchLoader[ClientLogRequest, ClientLogSlice]
    worker: BatchLoader[WorkerRead, LogPage]
    model_pods: BatchLoader[str, tuple[str, ...]]
    # Cloud Logging's events log: one read per batch, whatever the number of models.
    events_log: BatchLoader[EventsLogRead, EventsLogAnswer]
    # Which worker-log backends exist, for the resolver's choice.
    cloud_logging: bool
    kubernetes: bool
    # The filter and link a query would use in Cloud Logging (None when not configured).
    describe: Callable[[LogQuery], tuple[str, str | None]] | None = None

    @classmethod
    def build(
        cls,
        client_logs: ClientLogReader | None,
        cloud_logging: LogSource | None,
        pod_logs: PodLogReader | None,
        kubernetes: KubernetesSource | None,
    ) -> LogLoaders:
        async def load_client(requests: list[ClientLogRequest]) -> list[ClientLogSlice]:
            if client_logs is None:
                raise BackendNotConfigured("redis", "client logs are not readable here")
            return await client_logs.client_logs(requests)

        async def read(key: WorkerRead) -> LogPage:
            if key.backend == "cloud_logging":
                if cloud_logging is None:
                    raise BackendNotConfigured("cloud_logging", "Cloud Logging is not configured")
                return await cloud_logging.entries(key.query, key.cursor)
            if pod_logs is None:
                raise BackendNotConfigured("kubernetes", "Kubernetes is not configured")
            return await pod_logs.entries(key.query, key.cursor, pods=key.pods)

        budget = [MAX_WORKER_READS]

        async def load_worker(keys: list[WorkerRead]) -> list[LogPage | InspectorError]:
            # An InspectorError in the list fails its own key (see ``BatchLoader``).
            allowed, budget[0] = keys[: budget[0]], max(0, budget[0] - len(keys))
            refused = InvalidInput(
                f"one query may read worker logs at most {MAX_WORKER_READS} times; "
                "ask for fewer logs fields (or smaller sessions) at once"
            )
            answers: list[LogPage | BaseException] = list(
                await asyncio.gather(*(read(k) for k in allowed), return_exceptions=True)
            )
            answers += [refused] * (len(keys) - len(allowed))
            out: list[LogPage | InspectorError] = []
            for answer in answers:
                if isinstance(answer, InspectorError | LogPage):
                    out.append(answer)
                else:
                    raise answer  # not an expected failure: a bug, reported as such
            return out

        async def load_pods(model_ids: list[str]) -> list[tuple[str, ...]]:
            if kubernetes is None:
                return [() for _ in model_ids]
            try:
                listings = await kubernetes.pods_by_model(model_ids, limit=MAX_MODEL_PODS)
            except BackendError:
                return [() for _ in model_ids]  # the label alone still selects
            return [tuple(p.name for p in listing.items) for listing in listings]

        return cls(
            client=BatchLoader(load_client),
            worker=BatchLoader(load_worker),
            model_pods=BatchLoader(load_pods),
            events_log=events_log_loader(cloud_logging),
            cloud_logging=cloud_logging is not None,
            kubernetes=pod_logs is not None,
            describe=None if cloud_logging is None else cloud_logging.describe,
        )

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
from typing import Literal

from openrl_inspect.adapters.kubernetes import KubernetesSource, ObjectKey, PodLogReader
from openrl_inspect.adapters.logs import MAX_MODEL_PODS, LogPage, LogQuery, LogSource
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


@dataclass(frozen=True)
class LogLoaders:
    client: BatchLoader[ClientLogRequest, ClientLogSlice]
    worker: BatchLoader[WorkerRead, LogPage]
    model_pods: BatchLoader[str, tuple[str, ...]]
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
            cloud_logging=cloud_logging is not None,
            kubernetes=pod_logs is not None,
            describe=None if cloud_logging is None else cloud_logging.describe,
        )

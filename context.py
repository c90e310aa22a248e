"""The typed per-request context every resolver receives."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from openrl_inspect.principal import ANONYMOUS_OPERATOR, NOBODY, Principal

if TYPE_CHECKING:
    from openrl_inspect.adapters.kubernetes import KubernetesSource, PodLogReader
    from openrl_inspect.adapters.logs import LogSource
    from openrl_inspect.adapters.prometheus import GpuMetrics, MetricsSource, RawQuerySettings
    from openrl_inspect.adapters.redis import StateStore
    from openrl_inspect.loaders.kubernetes import KubeLoaders
    from openrl_inspect.loaders.logs import LogLoaders
    from openrl_inspect.loaders.metrics import MetricsLoaders
    from openrl_inspect.loaders.state import StateLoaders


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask for. Env prefix ``OPENRL_INSPECT_LIMITS_``."""

    default_page_size: int = 20
    max_page_size: int = 100
    # Product of page sizes down the nested connections of one query.
    max_nodes: int = 250_000
    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 4000
    # Field selections once fragments are expanded (fragment spreads under many fields).
    max_fields: int = 2000
    # Seconds one GraphQL request may run before it is cancelled (DEADLINE_EXCEEDED);
    # 0 turns the deadline off.
    request_deadline_s: float = 30.0
    # A query whose node cost reaches this is expensive: at most max_expensive_requests
    # of them run at once; another waits up to busy_wait_s, then is answered BUSY.
    expensive_nodes: int = 10_000
    max_expensive_requests: int = 2
    busy_wait_s: float = 2.0
    # Identical queries (same principal, document, operation and variables) that arrive
    # while one of them runs wait for its result instead of running again
    # (``single_flight``). Never a cache: a query after the result runs anew.
    single_flight: bool = True
    # With single flight: an answer also serves identical queries arriving within this
    # many seconds after it (polls of one page from many dashboards). 0: off, every
    # query after an answer runs anew.
    fresh_for_s: float = 0.0
    # Off: introspection queries are refused and errors carry no "Did you mean" hints
    # (GraphiQL's schema explorer needs it on).
    introspection: bool = True
    # Only the documents the server ships (the dashboard's, the REST routes' and MCP
    # tools'), by text or by persisted-query hash (``engine.persisted``).
    registered_only: bool = False
    # An op whose worker has not heartbeat for this long is lost.
    heartbeat_stale_s: float = 30.0
    # An op running longer than this on a live worker is stuck.
    stuck_after_s: float = 600.0
    # Summaries read a model's rollup (one read) where the recorder kept one; off: they
    # scan every op of the steps summarised, as before rollups (for comparisons).
    use_rollups: bool = True
    # "fast": plain fields are read and serialised by the schema's own executor
    # (``schema.fast``); "stock": graphql-core's and Strawberry's per-field path for
    # every field. Both answer byte for byte alike (tests/api/test_fast_execution.py).
    # Set by ``OPENRL_INSPECT_EXECUTION`` (``server.Runtime``).
    execution: str = "fast"


def _raw_query_off() -> RawQuerySettings:
    # Imported when a Backends is built: importing this module needs no adapter.
    from openrl_inspect.adapters.prometheus import RawQuerySettings

    return RawQuerySettings()


@dataclass
class Backends:
    """The long-lived clients, opened once in the app's lifespan.

    Only Redis is required; a backend left out (``None``) makes the fields that need it
    null with code ``BACKEND_NOT_CONFIGURED``.
    """

    state: StateStore
    kubernetes: KubernetesSource | None = None
    # DCGM duty and vLLM stats, in batches: the layer the metrics loaders read.
    gpu_metrics: GpuMetrics | None = None
    # The raw PromQL source behind ``gpu_metrics``, for the guarded raw-query field.
    prometheus: MetricsSource | None = None
    # The guarded raw-query field's switch and caps (off by default).
    raw_query: RawQuerySettings = field(default_factory=_raw_query_off)
    logs: LogSource | None = None
    # Pod logs from the Kubernetes API: the worker logs when Cloud Logging is not there.
    pod_logs: PodLogReader | None = None


@dataclass
class Context:
    backends: Backends
    # The loaders, one set per backend: OpenRL's state in Redis, GPU metrics, the
    # cluster, logs.
    state: StateLoaders
    limits: Limits
    metrics: MetricsLoaders
    kube: KubeLoaders
    logs: LogLoaders
    # Who asks: what the answer may show (``principal``; nothing when unset).
    principal: Principal = NOBODY
    # One "now" per request, so every derived age in an answer agrees.
    now: float = field(default_factory=time.time)

    @classmethod
    def build(
        cls, backends: Backends, limits: Limits, principal: Principal = ANONYMOUS_OPERATOR
    ) -> Context:
        # Imported here: a resolver importing this module for the type needs none of them.
        from openrl_inspect.adapters.redis import RedisClientLogs
        from openrl_inspect.loaders.kubernetes import KubeLoaders
        from openrl_inspect.loaders.logs import LogLoaders
        from openrl_inspect.loaders.metrics import MetricsLoaders
        from openrl_inspect.loaders.state import StateLoaders

        return cls(
            backends=backends,
            principal=principal,
            state=StateLoaders.build(backends.state),
            limits=limits,
            metrics=MetricsLoaders.build(
                backends.gpu_metrics, backends.prometheus, backends.raw_query
            ),
            kube=KubeLoaders.build(backends.kubernetes),
            logs=LogLoaders.build(
                RedisClientLogs.of(backends.state),
                backends.logs,
                backends.pod_logs,
                backends.kubernetes,
            ),
        )

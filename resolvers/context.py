"""The typed per-request context every resolver receives."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from openrl_inspect.adapters.kubernetes import KubernetesSource, PodLogReader
from openrl_inspect.adapters.logs import LogSource
from openrl_inspect.adapters.prometheus import GpuMetrics, MetricsSource, RawQuerySettings
from openrl_inspect.adapters.redis import RedisClientLogs, StateStore
from openrl_inspect.core.cursor import Sealer, process_sealer
from openrl_inspect.core.principal import ANONYMOUS_OPERATOR, NOBODY, Principal
from openrl_inspect.core.settings import Bounds, Settings, Thresholds
from openrl_inspect.loaders.kubernetes import KubeLoaders
from openrl_inspect.loaders.logs import LogLoaders
from openrl_inspect.loaders.metrics import MetricsLoaders
from openrl_inspect.loaders.state import StateLoaders
from openrl_inspect.resolvers.summary.memo import Judgements


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
    raw_query: RawQuerySettings = field(default_factory=RawQuerySettings)
    logs: LogSource | None = None
    # Pod logs from the Kubernetes API: the worker logs when Cloud Logging is not there.
    pod_logs: PodLogReader | None = None
    # Models' judgements by the version of their inputs, shared by every request over
    # these backends (resolvers.summary.memo); None judges every model afresh.
    judgements: Judgements | None = field(default_factory=Judgements)


@dataclass
class Context:
    backends: Backends
    # The loaders, one set per backend: OpenRL's state in Redis, GPU metrics, the
    # cluster, logs.
    state: StateLoaders
    # What one request may ask for, and how the diagnosis judges.
    bounds: Bounds
    thresholds: Thresholds
    metrics: MetricsLoaders
    kube: KubeLoaders
    logs: LogLoaders
    # Who asks: what the answer may show (``principal``; nothing when unset).
    principal: Principal = NOBODY
    # Seals a viewer's cursors to it (one per process: ``Secrets.cursor_key``).
    cursors: Sealer = field(default_factory=process_sealer)
    # One "now" per request, so every derived age in an answer agrees.
    now: float = field(default_factory=time.time)
    # Timelines this request has read so far (each reads every backend: they are capped).
    timelines_read: int = 0

    @classmethod
    def build(
        cls,
        backends: Backends,
        principal: Principal = ANONYMOUS_OPERATOR,
        settings: Settings | None = None,
        cursors: Sealer | None = None,
    ) -> Context:
        """A request's context: fresh loaders over ``backends`` for ``principal``."""
        settings = settings or Settings()
        return cls(
            backends=backends,
            principal=principal,
            state=StateLoaders.build(backends.state),
            bounds=settings.bounds,
            thresholds=settings.thresholds,
            cursors=cursors or process_sealer(),
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

"""The typed per-request context every resolver receives."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from openrl_inspect.core.principal import ANONYMOUS_OPERATOR, NOBODY, Principal
from openrl_inspect.core.settings import Limits

if TYPE_CHECKING:
    from openrl_inspect.adapters.kubernetes import KubernetesSource, PodLogReader
    from openrl_inspect.adapters.logs import LogSource
    from openrl_inspect.adapters.prometheus import GpuMetrics, MetricsSource, RawQuerySettings
    from openrl_inspect.adapters.redis import StateStore
    from openrl_inspect.loaders.kubernetes import KubeLoaders
    from openrl_inspect.loaders.logs import LogLoaders
    from openrl_inspect.loaders.metrics import MetricsLoaders
    from openrl_inspect.loaders.state import StateLoaders


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

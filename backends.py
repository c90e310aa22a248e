"""Opening the real backends for ``serve`` (the demo's are in ``openrl_inspect.demo``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

from openrl_inspect.adapters.cloud_logging import CloudLoggingSource
from openrl_inspect.adapters.kubernetes import (
    KubernetesSettings,
    PodLogSettings,
    PodLogSource,
    open_kubernetes,
)
from openrl_inspect.adapters.logs import CloudLoggingSettings
from openrl_inspect.adapters.prometheus import (
    PrometheusSettings,
    PromGpuMetrics,
    RawQuerySettings,
    make_metrics_source,
)
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.context import Backends

log = logging.getLogger("openrl_inspect.backends")


@dataclass(frozen=True)
class BackendSettings:
    """Which backends ``serve`` opens; ``None`` leaves one out."""

    redis: RedisSettings = field(default_factory=RedisSettings)
    kubernetes: KubernetesSettings | None = None
    prometheus: PrometheusSettings | None = None
    cloud_logging: CloudLoggingSettings | None = None
    # The pod-logs fallback, used when ``kubernetes`` is configured.
    pod_logs: PodLogSettings = field(default_factory=PodLogSettings)
    # The guarded raw PromQL field (off unless enabled), used when ``prometheus`` is set.
    raw_query: RawQuerySettings = field(default_factory=RawQuerySettings)


@asynccontextmanager
async def real_backends(config: BackendSettings) -> AsyncIterator[Backends]:
    async with AsyncExitStack() as stack:
        store = RedisStateStore.from_settings(config.redis)
        stack.push_async_callback(store.aclose)
        backends = Backends(state=store)
        if config.kubernetes is not None:
            kube = await stack.enter_async_context(open_kubernetes(config.kubernetes))
            backends.kubernetes = kube
            backends.pod_logs = PodLogSource.for_cluster(
                kube, config.pod_logs, bounds=config.cloud_logging
            )
        if config.prometheus is not None:
            source = make_metrics_source(config.prometheus)
            stack.push_async_callback(source.aclose)
            backends.prometheus = source
            backends.gpu_metrics = PromGpuMetrics.from_settings(config.prometheus, source)
            backends.raw_query = config.raw_query
        if config.cloud_logging is not None:
            logs = CloudLoggingSource(config.cloud_logging)
            stack.push_async_callback(logs.aclose)
            backends.logs = logs
        yield backends

"""Opening the real backends for ``serve`` (the demo's are in ``openrl_inspect.cli.demo``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

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
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.web.identity import BackendIdentity, Identity, clean_url

log = logging.getLogger("openrl_inspect.cli.serve")


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


def kubernetes_server(kube: KubernetesSettings, env: Mapping[str, str]) -> str:
    """The API server's address: the in-cluster service, or the kubeconfig's cluster."""
    if kube.in_cluster:
        host = env.get("KUBERNETES_SERVICE_HOST", "")
        port = env.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            return "in-cluster"
        return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    return _kubeconfig_server(kube.kubeconfig or "", kube.context)


def _kubeconfig_server(path: str, context: str | None) -> str:
    # A kubeconfig that cannot be read here fails loudly where the client opens it.
    try:
        import yaml

        with open(path, encoding="utf-8") as f:
            config = yaml.safe_load(f.read(1 << 20))
        name = context or config.get("current-context")
        ctx = _named(config.get("contexts"), name).get("context") or {}
        cluster = _named(config.get("clusters"), ctx.get("cluster")).get("cluster") or {}
        server = cluster.get("server")
    except Exception:  # any shape: the identity only says it does not know
        return "kubeconfig (server unknown)"
    return clean_url(server) if isinstance(server, str) else "kubeconfig (server unknown)"


def _named(items: Any, name: Any) -> dict[str, Any]:
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("name") == name:
            return item
    return {}


def for_serve(config: BackendSettings, env: Mapping[str, str]) -> Identity:
    redis = clean_url(config.redis.url)
    backends = [BackendIdentity("redis", redis + (" (cluster)" if config.redis.cluster else ""))]
    if config.kubernetes is not None:
        backends.append(BackendIdentity("kubernetes", kubernetes_server(config.kubernetes, env)))
    if config.prometheus is not None:
        backends.append(BackendIdentity("prometheus", clean_url(config.prometheus.url)))
    if config.cloud_logging is not None:
        project = f"project {config.cloud_logging.project}"
        backends.append(BackendIdentity("cloud_logging", project))
    return Identity("serve", tuple(backends))

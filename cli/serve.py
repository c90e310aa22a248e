"""Opening the real backends for ``serve`` (the demo's are in ``openrl_inspect.cli.demo``)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from openrl_inspect import auth
from openrl_inspect.adapters import cloud_logging, kubernetes, prometheus
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
from openrl_inspect.cli.launch import launch, listen_settings
from openrl_inspect.core import settings
from openrl_inspect.core.settings import Settings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.telemetry import MetricsSettings
from openrl_inspect.web.app import create_app
from openrl_inspect.web.guard import HttpSettings
from openrl_inspect.web.health import HealthSettings
from openrl_inspect.web.identity import BackendIdentity, Identity, clean_url
from starlette.applications import Starlette

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
        # lazy: PyYAML is read only with a kubeconfig.
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


#: The command line's names for the Redis settings it takes.
REDIS_FLAGS = {
    "url": "--redis-url",
    "cluster": "--redis-cluster",
    "timeout_s": "--redis-timeout",
    "max_connections": "--redis-max-connections",
}


def backend_settings(args: argparse.Namespace, env: Mapping[str, str]) -> BackendSettings:
    """Redis always; each other backend when its flag or environment names it."""
    redis = settings.load(
        RedisSettings,
        "OPENRL_INSPECT_REDIS_",
        env,
        {
            "url": args.redis_url,
            "cluster": args.redis_cluster,
            "timeout_s": args.redis_timeout,
            "max_connections": args.redis_max_connections,
        },
        REDIS_FLAGS,
    )
    kube_flags = {
        "in_cluster": args.in_cluster,
        "kubeconfig": args.kubeconfig,
        "context": args.kube_context,
    }
    kube = kubernetes.load_settings(env, kube_flags, {"context": "--kube-context"})
    prom = prometheus.load_settings(env, {"url": args.prometheus_url}, {"url": "--prometheus-url"})
    # GKE writes pod labels into log entries as ``k8s-pod/<key, dots as underscores>``:
    # unless set, the log label keys follow the Kubernetes label settings.
    log_labels = {
        "project": args.logging_project,
        "model_label_key": kube.labels.log_label(kube.model_label),
        "role_label_key": kube.labels.log_label(kube.role_label),
    }
    for name in ("model_label_key", "role_label_key"):
        if f"OPENRL_INSPECT_CLOUD_LOGGING_{name.upper()}" in env:
            del log_labels[name]
    logs = cloud_logging.load_settings(env, log_labels, {"project": "--logging-project"})
    pod_logs = kubernetes.load_pod_log_settings(env)
    named = set(env)
    return BackendSettings(
        redis=redis,
        kubernetes=kube if kube.in_cluster or kube.kubeconfig else None,
        prometheus=prom
        if args.prometheus_url or "OPENRL_INSPECT_PROMETHEUS_URL" in named
        else None,
        cloud_logging=logs if logs.project else None,
        pod_logs=pod_logs,
        raw_query=prometheus.load_raw_settings(env),
    )


def run(args: argparse.Namespace, env: Mapping[str, str], inspector: Settings) -> int:
    config = backend_settings(args, env)
    listen = listen_settings(args, env)
    metrics = settings.load(MetricsSettings, "OPENRL_INSPECT_METRICS_", env)

    def build(http: HttpSettings, health: HealthSettings) -> tuple[Starlette, list[str]]:
        warnings = auth.redis_secrets(config.redis, args.redis_url)
        served = auth.for_serve(args, env, listen.host, inspector)
        warnings += served.warnings
        app = create_app(
            lambda: real_backends(config),
            served.settings,
            http,
            health,
            served.authenticator,
            served.graphiql,
            for_serve(config, env),
            metrics,
        )
        app.state.runner.warm()
        return app, warnings

    return launch(args, env, listen, build)

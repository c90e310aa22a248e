"""What is answering: the service, its version, this process, its mode, and where each
backend is, with every credential removed.

``/healthz`` answers it (``app``), and the CLI asks it of a port already taken to tell
an inspector it can reuse from anything else. The identity is made once, when the app
is created, from the settings, so it never waits on a backend and never changes while
the process lives.
"""

from __future__ import annotations

import importlib.metadata
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from openrl_inspect.adapters.kubernetes import KubernetesSettings
    from openrl_inspect.backends import BackendSettings

SERVICE = "openrl-inspect"
# What a caller compares to know the other side speaks this API.
API = "openrl-inspect/v1"


def package_version() -> str:
    try:
        return importlib.metadata.version(SERVICE)
    except importlib.metadata.PackageNotFoundError:  # run from a tree never installed
        return "0+unknown"


@dataclass(frozen=True)
class BackendIdentity:
    """One backend: its name and where it is (no userinfo, password, token or query)."""

    name: str
    endpoint: str


@dataclass(frozen=True)
class Identity:
    mode: str  # "demo" or "serve"
    backends: tuple[BackendIdentity, ...] = ()
    service: str = SERVICE
    version: str = field(default_factory=package_version)
    # Per process start: a restart, or another replica, is another instance.
    instance: str = field(default_factory=lambda: uuid.uuid4().hex)

    def answer(self, endpoints: bool) -> dict[str, Any]:
        """The ``/healthz`` body; ``endpoints`` adds where each backend is."""
        backends: list[dict[str, str]] = [
            {"name": b.name, "endpoint": b.endpoint} if endpoints else {"name": b.name}
            for b in self.backends
        ]
        return {
            "ok": True,
            "service": self.service,
            "api": API,
            "version": self.version,
            "instance": self.instance,
            "mode": self.mode,
            "backends": backends,
        }


def clean_url(url: str) -> str:
    """``url`` without userinfo, query or fragment; a URL that does not parse says so."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "(unparsable URL)"
    if not parts.scheme or not host:
        return "(unparsable URL)"
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return f"{parts.scheme}://{netloc}{parts.path}"


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


def for_demo(redis_url: str | None) -> Identity:
    redis = clean_url(redis_url) if redis_url else "in-process fakeredis"
    simulated = "simulated (in memory)"
    return Identity(
        "demo",
        (
            BackendIdentity("redis", redis),
            BackendIdentity("kubernetes", simulated),
            BackendIdentity("prometheus", simulated),
            BackendIdentity("cloud_logging", simulated),
        ),
    )


def is_inspector(body: Any) -> bool:
    """Whether a ``/healthz`` answer comes from an inspector speaking this API."""
    return isinstance(body, dict) and body.get("service") == SERVICE and body.get("api") == API

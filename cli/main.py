"""``openrl-inspect``: serve the API on real backends, run the demo, export the schema,
issue bearer tokens; for agents and scripts, the MCP tools over stdio and a summary.

Settings come from the command line, then the environment, then defaults.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from openrl_inspect.core import settings

if TYPE_CHECKING:
    from openrl_inspect.cli.serve import BackendSettings
    from openrl_inspect.core.settings import Limits
    from openrl_inspect.web.guard import HttpSettings
    from openrl_inspect.web.health import HealthSettings
    from starlette.applications import Starlette


@dataclass(frozen=True)
class ServerSettings:
    """Where the API listens. Env prefix ``OPENRL_INSPECT_``."""

    host: str = "127.0.0.1"
    port: int = 8080
    log_level: str = "info"


def browsable_url(host: str, port: int) -> str:
    """A URL a browser can open: wildcard listen addresses become loopback."""
    if host in ("0.0.0.0", "::", "[::]", ""):
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _listen_flags(p: argparse.ArgumentParser) -> None:
    """Where to listen, and the request limits most often tuned from the command line."""
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    # Checked in ``listen.parse_port``: a bad value is one line, not argparse's usage.
    p.add_argument("--port", help="listen port, 1-65535 (default 8080)")
    p.add_argument("--log-level", choices=["critical", "error", "warning", "info", "debug"])
    p.add_argument("--max-body-bytes", type=int, help="largest request body (default 1 MiB)")
    p.add_argument(
        "--request-deadline", type=float, help="seconds a GraphQL request may run (default 30)"
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        help="an origin browsers may call the API from (repeat; default none)",
    )
    p.add_argument(
        "--no-introspection",
        dest="introspection",
        action="store_false",
        default=None,
        help="refuse introspection and hide field suggestions",
    )
    p.add_argument(
        "--introspection",
        dest="introspection",
        action="store_true",
        default=None,
        help="allow introspection (default: on, off once authentication is on)",
    )
    p.add_argument(
        "--registered-only",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run only the registered documents (persisted queries; default off)",
    )


def _parser() -> argparse.ArgumentParser:
    from openrl_inspect import auth
    from openrl_inspect.cli import summary as terminal
    from openrl_inspect.cli import track as track_cli

    parser = argparse.ArgumentParser(prog="openrl-inspect", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the API over real backends")
    _listen_flags(serve)
    serve.add_argument("--redis-url", help="redis:// or rediss:// URL of OpenRL's Redis")
    serve.add_argument(
        "--redis-cluster", action="store_true", default=None, help="the URL is a Redis Cluster"
    )
    serve.add_argument("--redis-timeout", type=float, help="seconds per Redis call (default 2)")
    serve.add_argument(
        "--redis-max-connections", type=int, help="Redis connection pool size (default 32)"
    )
    serve.add_argument(
        "--in-cluster",
        action="store_true",
        default=None,
        help="read Kubernetes with the pod's service account",
    )
    serve.add_argument("--kubeconfig", help="read Kubernetes through this kubeconfig")
    serve.add_argument("--kube-context", help="the kubeconfig context to use")
    serve.add_argument("--prometheus-url", help="Prometheus HTTP API root (Managed Prometheus too)")
    serve.add_argument("--logging-project", help="Google Cloud project whose Cloud Logging to read")
    auth.add_flags(serve)

    demo = sub.add_parser("demo", help="serve the API over a live simulated cluster")
    _listen_flags(demo)
    demo.add_argument("--redis-url", help="fill this Redis instead of an in-process fakeredis")
    demo.add_argument("--seed", type=int, help="simulation seed (default 7)")
    demo.add_argument(
        "--open-browser",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="open the dashboard in a browser (env OPENRL_INSPECT_OPEN_BROWSER; default: "
        "only when a graphical browser is usable: not in CI, over SSH or without a display)",
    )

    track_cli.add_command(sub)

    auth.add_hash_token_command(sub)
    terminal.add_commands(sub)  # mcp, summary

    export = sub.add_parser("export-schema", help="print or write the GraphQL SDL")
    export.add_argument("path", nargs="?", help="file to write (default: stdout)")
    return parser


def backend_settings(args: argparse.Namespace, env: Mapping[str, str]) -> BackendSettings:
    """Redis always; each other backend when its flag or environment names it."""
    from openrl_inspect.adapters import cloud_logging, kubernetes, prometheus
    from openrl_inspect.adapters.redis import RedisSettings
    from openrl_inspect.cli.serve import BackendSettings

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
    )
    kube_flags = {
        "in_cluster": args.in_cluster,
        "kubeconfig": args.kubeconfig,
        "context": args.kube_context,
    }
    kube = kubernetes.load_settings(env, kube_flags)
    prom = prometheus.load_settings(env, {"url": args.prometheus_url})
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
    logs = cloud_logging.load_settings(env, log_labels)
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


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    args = _parser().parse_args(argv)
    env = os.environ if environ is None else environ
    try:
        return _run(args, env)
    except settings.SettingsError as exc:
        print(f"openrl-inspect: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from openrl_inspect import auth
    from openrl_inspect.cli import track as track_cli
    from openrl_inspect.core.settings import Limits

    if args.command == "hash-token":
        return auth.hash_token(args, env)
    limits = settings.load(
        Limits,
        "OPENRL_INSPECT_LIMITS_",
        env,
        {
            "request_deadline_s": getattr(args, "request_deadline", None),
            "introspection": getattr(args, "introspection", None),
            "registered_only": getattr(args, "registered_only", None),
            "execution": _execution(env),
        },
    )
    if args.command == "export-schema":
        return _export_schema(args, limits)
    if args.command == "track-placements":
        return track_cli.run(args, env)
    if args.command in ("mcp", "summary"):
        from openrl_inspect.cli import summary as terminal

        return terminal.run(args, env, limits)
    return _serve(args, env, limits)


def _execution(env: Mapping[str, str]) -> str | None:
    """``OPENRL_INSPECT_EXECUTION``: ``fast`` (the default) or ``stock`` (``schema.fast``)."""
    value = env.get("OPENRL_INSPECT_EXECUTION")
    if value is None:
        return None
    if value.strip().lower() not in ("stock", "fast"):
        raise settings.SettingsError(
            f"OPENRL_INSPECT_EXECUTION: expected 'stock' or 'fast', got {value!r}"
        )
    return value.strip().lower()


def _export_schema(args: argparse.Namespace, limits: Limits) -> int:
    from openrl_inspect.execution.schema import build_schema

    sdl = build_schema(limits).as_str() + "\n"
    if args.path:
        Path(args.path).write_text(sdl, encoding="utf-8")
    else:
        sys.stdout.write(sdl)
    return 0


def _serve(args: argparse.Namespace, env: Mapping[str, str], limits: Limits) -> int:
    """``serve`` over the real backends, ``demo`` over the simulated ones."""
    # Imported here so that ``--help`` and a settings error answer at once.
    from openrl_inspect.cli.listen import PortUnusable, check_port, print_urls, report_taken
    from openrl_inspect.telemetry import jsonlog
    from openrl_inspect.web import server
    from openrl_inspect.web.app import UI
    from openrl_inspect.web.guard import HttpSettings
    from openrl_inspect.web.health import HealthSettings

    listen = _listen_settings(args, env)
    cors = tuple(args.cors_origin) if args.cors_origin else None
    http = settings.load(
        HttpSettings,
        "OPENRL_INSPECT_HTTP_",
        env,
        {"max_body_bytes": args.max_body_bytes, "cors_origins": cors},
    )
    health = settings.load(HealthSettings, "OPENRL_INSPECT_HEALTH_", env)
    gc_settings = settings.load(server.GcSettings, "OPENRL_INSPECT_GC_", env)
    app, warnings = _app(args, env, limits, listen, http, health)
    url = browsable_url(listen.host, listen.port)
    opening = args.command == "demo" and _opens_browser(args, env)
    try:
        taken = check_port(listen.host, listen.port, url)
    except PortUnusable as exc:
        print(f"openrl-inspect: {exc}", file=sys.stderr)
        return 2
    if taken is not None:
        return report_taken(args.command, listen.port, url, taken.inspector, opening)
    print_urls(args.command, url)
    if opening:
        from openrl_inspect.cli.open_browser import open_when_listening

        host = "127.0.0.1" if url.startswith("http://127.0.0.1:") else listen.host
        open_when_listening(f"{url}{UI}", host, listen.port, lambda s: print(s, flush=True))
    jsonlog.configure(listen.log_level)
    for warning in warnings:
        logging.getLogger("openrl_inspect.auth").warning(warning)
    server.serve(app, listen.host, listen.port, listen.log_level, http, gc_settings)
    return 0


def _listen_settings(args: argparse.Namespace, env: Mapping[str, str]) -> ServerSettings:
    """Where to listen; a port out of 1-65535, or not a number, is a ``SettingsError``."""
    from openrl_inspect.cli.listen import parse_port

    port = None if args.port is None else parse_port(args.port, "--port")
    listen = settings.load(
        ServerSettings,
        "OPENRL_INSPECT_",
        env,
        {"host": args.host, "port": port, "log_level": args.log_level},
    )
    if port is None:
        parse_port(listen.port, "OPENRL_INSPECT_PORT")
    return listen


def _app(
    args: argparse.Namespace,
    env: Mapping[str, str],
    limits: Limits,
    listen: ServerSettings,
    http: HttpSettings,
    health: HealthSettings,
) -> tuple[Starlette, list[str]]:
    """The app for ``serve`` or ``demo``, and the warnings to log once logging is on."""
    from openrl_inspect import auth
    from openrl_inspect.cli.demo import DemoSettings, demo_backends, for_demo
    from openrl_inspect.cli.serve import for_serve, real_backends
    from openrl_inspect.telemetry import MetricsSettings
    from openrl_inspect.web.app import create_app

    metrics = settings.load(MetricsSettings, "OPENRL_INSPECT_METRICS_", env)
    if args.command == "serve":
        config = backend_settings(args, env)
        warnings = auth.redis_secrets(config.redis, args.redis_url)
        served = auth.for_serve(args, env, listen.host, limits)
        warnings += served.warnings
        app = create_app(
            lambda: real_backends(config),
            served.limits,
            http,
            health,
            served.authenticator,
            served.graphiql,
            for_serve(config, env),
            metrics,
        )
        return app, warnings
    warnings = [w for w in [auth.argv_password(args.redis_url, "--redis-url")] if w]
    demo = settings.load(
        DemoSettings,
        "OPENRL_INSPECT_DEMO_",
        env,
        {"redis_url": args.redis_url, "seed": args.seed},
    )
    who = for_demo(demo.redis_url)
    # The DNS rebinding guard on loopback, as for ``serve`` with mode none.
    anonymous = auth.Anonymous(loopback_only=auth.is_loopback(listen.host))
    app = create_app(
        lambda: demo_backends(demo), limits, http, health, anonymous, identity=who,
        metrics_settings=metrics,
    )  # fmt: skip
    return app, warnings


@dataclass(frozen=True)
class OpenBrowserSettings:
    """Whether the demo opens the dashboard. Env ``OPENRL_INSPECT_OPEN_BROWSER``."""

    open_browser: bool | None = None


def _opens_browser(args: argparse.Namespace, env: Mapping[str, str]) -> bool:
    from openrl_inspect.cli.open_browser import should_open

    choice = settings.load(
        OpenBrowserSettings, "OPENRL_INSPECT_", env, {"open_browser": args.open_browser}
    ).open_browser
    return should_open(choice, env)

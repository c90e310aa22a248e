"""Serving the app for ``serve`` and ``demo``: where to listen, the port check, the URLs
printed, the browser opened, the logs configured, then the server until it stops."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from openrl_inspect.cli.listen import (
    PortUnusable,
    check_port,
    parse_port,
    print_urls,
    report_taken,
)
from openrl_inspect.cli.open_browser import open_when_listening, should_open
from openrl_inspect.core import settings
from openrl_inspect.telemetry import jsonlog
from openrl_inspect.web import collector, server
from openrl_inspect.web.app import UI
from openrl_inspect.web.guard import HttpSettings
from openrl_inspect.web.health import HealthSettings
from starlette.applications import Starlette

#: Builds the app once the HTTP and health settings are known; returns it and the
#: warnings to log once logging is on.
AppFactory = Callable[[HttpSettings, HealthSettings], tuple[Starlette, list[str]]]


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


def listen_settings(args: argparse.Namespace, env: Mapping[str, str]) -> ServerSettings:
    """Where to listen; a port out of 1-65535, or not a number, is a ``SettingsError``."""
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


def launch(
    args: argparse.Namespace, env: Mapping[str, str], listen: ServerSettings, build: AppFactory
) -> int:
    """Serve the app ``build`` makes on ``listen`` until the server stops."""
    cors = tuple(args.cors_origin) if args.cors_origin else None
    http = settings.load(
        HttpSettings,
        "OPENRL_INSPECT_HTTP_",
        env,
        {"max_body_bytes": args.max_body_bytes, "cors_origins": cors},
        {"cors_origins": "--cors-origin"},
    )
    health = settings.load(HealthSettings, "OPENRL_INSPECT_HEALTH_", env)
    gc_settings = settings.load(collector.GcSettings, "OPENRL_INSPECT_GC_", env)
    app, warnings = build(http, health)
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
        host = "127.0.0.1" if url.startswith("http://127.0.0.1:") else listen.host
        open_when_listening(f"{url}{UI}", host, listen.port, lambda s: print(s, flush=True))
    jsonlog.configure(listen.log_level)
    for warning in warnings:
        logging.getLogger("openrl_inspect.auth").warning(warning)
    server.serve(app, listen.host, listen.port, listen.log_level, http, gc_settings)
    return 0


@dataclass(frozen=True)
class OpenBrowserSettings:
    """Whether the demo opens the dashboard. Env ``OPENRL_INSPECT_OPEN_BROWSER``."""

    open_browser: bool | None = None


def _opens_browser(args: argparse.Namespace, env: Mapping[str, str]) -> bool:
    choice = settings.load(
        OpenBrowserSettings, "OPENRL_INSPECT_", env, {"open_browser": args.open_browser}
    ).open_browser
    return should_open(choice, env)

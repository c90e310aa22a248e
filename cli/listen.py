"""Before listening: is the port a port, and if it is taken, by whom?

A port already in use is asked for its ``/healthz``: an inspector answering there can
be reused by the demo (``Taken.inspector``); anything else is a one-line error that
names the port. Both are checked before uvicorn starts, whose own failure is a log
line and an exit code that say little.
"""

from __future__ import annotations

import errno
import socket
import sys
from dataclasses import dataclass
from typing import Any

import httpx
from openrl_inspect.cli.open_browser import open_now
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.web.app import PREFIX, UI
from openrl_inspect.web.identity import is_inspector

HEALTHZ = f"{PREFIX}/healthz"


def parse_port(raw: object, source: str) -> int:
    """A TCP port to listen on (1-65535) from a flag or variable named ``source``."""
    text = str(raw).strip()
    try:
        port = int(text, 10)
    except ValueError:
        raise SettingsError(f"{source}: expected a port number 1-65535, got {text!r}") from None
    if not 1 <= port <= 65535:
        raise SettingsError(f"{source}: {port} is not a port number (1-65535)")
    return port


class PortUnusable(SettingsError):
    """The port cannot be listened on; the message is one line naming it."""


@dataclass(frozen=True)
class Taken:
    """The port is in use; ``inspector`` is its ``/healthz`` answer when an inspector
    answered there, else ``None``."""

    inspector: dict[str, Any] | None


def _bindable(host: str, port: int) -> OSError | None:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # As uvicorn binds: SO_REUSEADDR, so a port in TIME_WAIT is not "taken".
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as exc:
            return exc
    return None


def ask_healthz(base_url: str, timeout_s: float = 2.0) -> dict[str, Any] | None:
    """``base_url``'s ``/healthz`` answer when an inspector gave it, else ``None``."""
    try:
        resp = httpx.get(base_url + HEALTHZ, timeout=timeout_s, follow_redirects=False)
        body = resp.json() if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return body if is_inspector(body) else None


def check_port(host: str, port: int, base_url: str) -> Taken | None:
    """``None`` when ``host:port`` is free; ``Taken`` when something listens there.

    Raises ``PortUnusable`` when the address cannot be bound for another reason
    (a privileged port, an address not on this machine).
    """
    problem = _bindable(host, port)
    if problem is None:
        return None
    if problem.errno != errno.EADDRINUSE:
        reason = problem.strerror or type(problem).__name__
        raise PortUnusable(f"cannot listen on {host}:{port}: {reason}")
    return Taken(ask_healthz(base_url))


def print_urls(command: str, url: str) -> None:
    print(f"OpenRL Inspector ({command}) dashboard: {url}{UI}", flush=True)
    print(f"GraphiQL: {url}{PREFIX}/graphiql", flush=True)
    print(f"GraphQL endpoint: {url}{PREFIX}/graphql", flush=True)


def report_taken(
    command: str, port: int, url: str, inspector: dict[str, Any] | None, opening: bool
) -> int:
    """The demo reuses an inspector already on the port (and leaves it running);
    anything else there is an error naming the port."""
    if inspector is None:
        print(
            f"openrl-inspect: port {port} is in use by something that is not an OpenRL "
            "inspector; choose another with --port",
            file=sys.stderr,
        )
        return 1
    who = f"{inspector.get('mode')}, version {inspector.get('version')}"
    if command != "demo":
        print(
            f"openrl-inspect: port {port} is in use by another OpenRL inspector ({who}); "
            "choose another with --port",
            file=sys.stderr,
        )
        return 1
    print(f"An OpenRL Inspector ({who}) already serves port {port}: using it.", flush=True)
    print_urls(str(inspector.get("mode")), url)
    if opening:
        open_now(f"{url}{UI}", lambda s: print(s, flush=True))
    return 0

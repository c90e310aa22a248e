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
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

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
    # How old an answer may be when it serves an identical poll (Switches.fresh_for_s).
    fresh_for_s: float = 0.0

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
            "freshForSeconds": self.fresh_for_s,
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


def is_inspector(body: Any) -> bool:
    """Whether a ``/healthz`` answer comes from an inspector speaking this API."""
    return isinstance(body, dict) and body.get("service") == SERVICE and body.get("api") == API

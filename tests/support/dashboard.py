"""The dashboard in headless Chromium against a demo served on a real socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from support.browser import chromium_page
from support.ports import free_port, wait_for_port
from support.tree import ROOT

UI_PATH = "/api/v1/inspect/ui/"


@contextmanager
def demo_server(*extra: str) -> Iterator[str]:
    """``openrl-inspect demo`` on a free port; yields its base URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "openrl_inspect.cli", "demo", "--port", str(port), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OPENRL_INSPECT_OPEN_BROWSER": "false"},
    )
    try:
        # The demo builds its world before it listens: half a minute on a loaded machine.
        wait_for_port(port, timeout_s=90)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            # Seen now and then under load: uvicorn still draining after SIGTERM while
            # the demo's simulation keeps ticking. The pages were checked; end it.
            proc.kill()
            proc.wait(15)


def ask(base: str, page: str, variables: dict[str, Any] | None = None) -> Any:
    """A page's own document, asked directly: what the page should show."""
    query = (ROOT / "static" / "ui" / "queries" / f"{page}.graphql").read_text()
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(
        f"{base}/api/v1/inspect/graphql", body, {"content-type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


@dataclass
class Browser:
    """One page for a whole module, and what it did since the last ``reset``."""

    page: Any
    base: str
    requested: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.requested.clear()
        self.problems.clear()

    def open(self, hash_route: str) -> None:
        self.page.goto(f"{self.base}{UI_PATH}{hash_route}")

    def assert_clean(self) -> None:
        assert self.problems == []
        hosts = {urlparse(u).hostname for u in self.requested if not u.startswith("data:")}
        assert hosts <= {"127.0.0.1"}, hosts


@contextmanager
def dashboard(base: str) -> Iterator[Browser]:
    with chromium_page() as page:
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.set_default_timeout(15_000)
        b = Browser(page, base)
        page.on("request", lambda r: b.requested.append(r.url))
        page.on("pageerror", lambda e: b.problems.append(f"pageerror: {e}"))
        page.on(
            "console",
            lambda m: b.problems.append(f"console: {m.text}") if m.type == "error" else None,
        )
        yield b

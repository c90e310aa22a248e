"""The app over the demo's simulated world, served by uvicorn on a loopback port in a
thread: for clients that need a real socket (schemathesis' requests, MCP over HTTP)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from openrl_inspect.cli.demo import DemoSettings, demo_backends
from openrl_inspect.web.app import create_app
from openrl_inspect.web.health import HealthSettings

from support.ports import free_port, wait_for_port

# The simulation stands still between requests: answers depend on the seed alone.
FROZEN = DemoSettings(seed=11, tick_s=3600.0)


@contextmanager
def serve_demo(**app_options: Any) -> Iterator[str]:
    """Yields the base URL (``http://127.0.0.1:PORT``) while the server runs."""
    app = create_app(
        lambda: demo_backends(FROZEN), health=HealthSettings(interval_s=0), **app_options
    )
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for_port(port, timeout_s=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)

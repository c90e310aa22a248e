"""The app over the demo's simulated world (frozen between requests), through ASGI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from openrl_inspect.cli.demo import demo_backends
from openrl_inspect.web.app import create_app
from openrl_inspect.web.health import HealthSettings

from support.live_server import FROZEN


@asynccontextmanager
async def demo_client(**app_options: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        lambda: demo_backends(FROZEN), health=HealthSettings(interval_s=0), **app_options
    )
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://inspector", timeout=30) as client,
    ):
        yield client

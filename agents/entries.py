"""The entries for agents and scripts, wired beside ``/graphql``: the REST routes and
their OpenAPI document, and the MCP endpoint, all over one engine (the app's schema).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from openrl_inspect.core.settings import Limits
from openrl_inspect.execution import Engine
from starlette.routing import BaseRoute


class Agents:
    def __init__(self, schema: Any, limits: Limits) -> None:
        from openrl_inspect.agents.mcp.http import McpEndpoint

        self.engine = Engine(schema, limits)
        self.mcp = McpEndpoint(self.engine)

    def routes(self, prefix: str) -> list[BaseRoute]:
        from openrl_inspect.agents import rest

        return [*rest.mount(self.engine, prefix), *self.mcp.routes(prefix)]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For the app's lifespan: the MCP endpoint's session manager runs in it."""
        async with self.mcp.running():
            yield

"""The entries for agents and scripts, wired beside ``/graphql``: the REST routes and
their OpenAPI document, and the MCP endpoint, all over the app's one runner.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from openrl_inspect.agents import rest
from openrl_inspect.agents.mcp.http import McpEndpoint
from openrl_inspect.execution import Runner
from starlette.routing import BaseRoute


class Agents:
    def __init__(self, runner: Runner, origins: tuple[str, ...] = ()) -> None:
        self.runner = runner
        self.mcp = McpEndpoint(runner, origins)

    def routes(self, prefix: str) -> list[BaseRoute]:
        return [*rest.mount(self.runner, prefix), *self.mcp.routes(prefix)]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For the app's lifespan: the MCP endpoint's session manager runs in it."""
        async with self.mcp.running():
            yield

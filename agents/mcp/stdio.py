"""``openrl-inspect mcp``: the MCP server over stdio, for a local client (Claude Desktop,
an IDE) that starts it as a subprocess.

The process reads with the credentials it was started with, as the operator: whoever
can start it can read those backends anyway. Nothing but JSON-RPC goes to stdout.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from openrl_inspect.agents.mcp import build
from openrl_inspect.core.principal import ANONYMOUS_OPERATOR
from openrl_inspect.core.settings import Settings
from openrl_inspect.execution import Runner, build_schema
from openrl_inspect.resolvers.context import Backends


async def serve(
    open_backends: Callable[[], AbstractAsyncContextManager[Backends]],
    settings: Settings,
) -> None:
    runner = Runner(build_schema(settings.switches), settings)
    async with open_backends() as backends:
        server = build(runner, lambda ctx: (backends, ANONYMOUS_OPERATOR))
        await server.run_stdio_async()

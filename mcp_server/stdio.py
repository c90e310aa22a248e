"""``openrl-inspect mcp``: the MCP server over stdio, for a local client (Claude Desktop,
an IDE) that starts it as a subprocess.

The process reads with the credentials it was started with, as the operator: whoever
can start it can read those backends anyway. Nothing but JSON-RPC goes to stdout.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from openrl_inspect.context import Backends, Limits
from openrl_inspect.engine import Engine
from openrl_inspect.mcp_server import build
from openrl_inspect.principal import ANONYMOUS_OPERATOR
from openrl_inspect.schema.root import build_schema


async def serve(
    open_backends: Callable[[], AbstractAsyncContextManager[Backends]],
    limits: Limits,
) -> None:
    engine = Engine(build_schema(limits), limits)
    async with open_backends() as backends:
        server = build(engine, lambda ctx: (backends, ANONYMOUS_OPERATOR))
        await server.run_stdio_async()

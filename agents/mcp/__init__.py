"""An MCP server over the runner (the official ``mcp`` SDK): read-only tools that answer
"why is model X slow or stuck?" within a token budget, and the GraphQL SDL as a resource.

Two transports: stdio (``openrl-inspect mcp``, ``stdio``) and streamable HTTP under
``/api/v1/inspect/mcp`` (``http``), which takes the principal the app's authentication
left on the request, so a viewer's tools see what its GraphQL sees.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.mcpserver import MCPServer
from openrl_inspect.agents.mcp.tools import Caller, register, tools_for
from openrl_inspect.execution import Runner

INSTRUCTIONS = (
    "Read-only inspection of OpenRL training runs (sessions -> models -> steps -> ops) and "
    "the cluster under them. Start with `attention` (what needs a person) or "
    "`model_summary` (why one model is slow, stuck, waiting or dead: ranked causes with "
    "evidence and where to look next); then `model_logs`, `step_timeline`, "
    "`gpu_activity`, `node_activity`, `why_waiting`; `graphql` for anything else."
)


def build(runner: Runner, caller: Caller) -> MCPServer[Any]:
    # The SDK's constructor configures the root logger (a rich handler, level INFO) when
    # it has none; the inspector's logging is its own (``jsonlog``): put it back.
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        server: MCPServer[Any] = MCPServer(
            "openrl-inspect",
            title="OpenRL Inspector",
            instructions=INSTRUCTIONS,
            version="1",
            tools=tools_for(runner, caller),
        )
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    register(server, runner)
    return server

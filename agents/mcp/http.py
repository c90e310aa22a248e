"""The streamable-HTTP endpoint, ``/api/v1/inspect/mcp``, inside the app.

Stateless and JSON: each POST is one exchange, answered with the principal the app's
authentication put on that very request (no session carries a principal over from an
earlier request). The SDK's session manager runs in the app's lifespan.

A request with an ``Origin`` (a browser's) is answered only from the inspector's own
origin or one of ``HttpSettings.cors_origins``, as the MCP specification asks of an HTTP
server: a page elsewhere, or one reached through DNS rebinding, is refused (403).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from openrl_inspect.agents.mcp import build
from openrl_inspect.core.errors import Forbidden
from openrl_inspect.core.principal import NOBODY, SCOPE_KEY, Principal
from openrl_inspect.core.responses import refused
from openrl_inspect.execution import Runner
from openrl_inspect.resolvers.context import Backends
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send


def from_request(ctx: Context) -> tuple[Backends, Principal]:
    request = ctx.request_context.request
    if not isinstance(request, Request):
        raise RuntimeError("an MCP call over HTTP without its request")
    principal = request.scope.get(SCOPE_KEY, NOBODY)
    backends: Backends = request.app.state.backends
    return backends, principal if isinstance(principal, Principal) else NOBODY


def same_origin(origin: str, host: str) -> bool:
    """Whether ``origin`` names the host the request was sent to (scheme aside)."""
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and bool(host) and parts.netloc == host


class McpEndpoint:
    def __init__(self, runner: Runner, origins: tuple[str, ...] = ()) -> None:
        self.origins = frozenset(origins)
        self.server = build(runner, from_request)
        # The app's RequestGuard and authentication stand in front. The SDK's Host check
        # (on by default, for 127.0.0.1 only) would refuse the inspector's own name
        # behind a Service or proxy: the endpoint answers any Host, as /graphql does.
        open_host = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.server.streamable_http_app(
            stateless_http=True, json_response=True, transport_security=open_host
        )
        self.manager = self.server.session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is not None and not (
            origin in self.origins or same_origin(origin, headers.get("host", ""))
        ):
            answer = refused(Forbidden("Requests from this origin are not accepted here."))
            await answer(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)

    def routes(self, prefix: str) -> list[Route]:
        # POST only: stateless, the server never speaks first, so a GET's event stream
        # would stay open for nothing (the spec's answer to it is 405), and there is no
        # session to DELETE.
        return [Route(f"{prefix}/mcp", self, methods=["POST"])]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Any]:
        async with self.manager.run():
            yield

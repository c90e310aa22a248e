"""The GraphQL endpoint: Strawberry's ASGI app with our context and vendored GraphiQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openrl_inspect.context import Backends, Context, Limits
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL

STATIC = Path(__file__).resolve().parent / "static"


class InspectorGraphQL(GraphQL[Context, None]):
    """Builds a fresh typed ``Context`` (and so fresh DataLoaders) for every request."""

    def __init__(self, schema: Any, limits: Limits) -> None:
        super().__init__(schema, graphql_ide="graphiql", allow_queries_via_get=True)
        self.limits = limits

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket | None
    ) -> Context:
        backends: Backends = request.app.state.backends
        return Context.build(backends, self.limits)

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        # Strawberry's own page loads GraphiQL from a CDN; serve the vendored copy.
        return HTMLResponse((STATIC / "graphiql.html").read_text(encoding="utf-8"))

"""The GraphQL endpoint: Strawberry's ASGI app with our context and vendored GraphiQL.

Refusals leave as JSON with a code, never as Strawberry's plain-text 400s; a ``BUSY``
answer is HTTP 429 with ``Retry-After``, for clients that read the status only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cross_web import HTTPException
from openrl_inspect.core.errors import BackendBusy, BadRequest, Busy, RequestRefused
from openrl_inspect.core.principal import NOBODY, SCOPE_KEY
from openrl_inspect.core.responses import refused
from openrl_inspect.core.settings import Limits
from openrl_inspect.execution import registry
from openrl_inspect.execution.disconnect import Disconnected, unless_disconnected
from openrl_inspect.execution.persisted import resolve
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.telemetry.records import CLIENT_DISCONNECTED, RECORD, RequestRecord
from openrl_inspect.web.body import decode
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.types import ExecutionResult

STATIC = Path(__file__).resolve().parents[1] / "static"


class InspectorGraphQL(GraphQL[Context, None]):
    """Builds a fresh typed ``Context`` (and so fresh DataLoaders) for every request."""

    def __init__(
        self,
        schema: Any,
        limits: Limits,
        max_json_depth: int = 64,
        graphiql_on: bool = True,
    ) -> None:
        # Off, a browser's GET for the IDE is answered like any other GET (a principal
        # needed, then a query needed).
        super().__init__(
            schema, graphql_ide="graphiql" if graphiql_on else None, allow_queries_via_get=True
        )
        self.limits = limits
        self.max_json_depth = max_json_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        response: Response
        request = Request(scope=scope, receive=receive)
        try:
            if scope["method"] == "POST":
                await request.body()  # read (and kept) before the watch takes receive
            response = await unless_disconnected(receive, self.run(request))
        except Disconnected:
            # Nobody to answer: the execution was cancelled (or is left to the other
            # requests sharing it); the log line says why there was no response.
            record = scope.get(RECORD)
            if isinstance(record, RequestRecord):
                record.codes.append(CLIENT_DISCONNECTED)
            return
        except HTTPException as exc:
            refusal = BadRequest(exc.reason)
            refusal.http_status = exc.status_code
            response = self._refused(scope, refusal)
        except RequestRefused as exc:
            response = self._refused(scope, exc)
        await response(scope, receive, send)

    def _refused(self, scope: Scope, exc: RequestRefused) -> Response:
        record = scope.get(RECORD)
        if isinstance(record, RequestRecord):
            record.codes.append(exc.code)
        return refused(exc)

    def should_render_graphql_ide(self, request: Any) -> bool:
        # A GET naming a persisted query has no ``query`` but is no browser asking for
        # the IDE (Apollo's link sends ``accept: */*``).
        if request.query_params.get("extensions") is not None:
            return False
        return bool(super().should_render_graphql_ide(request))

    async def parse_http_body(self, request: Any) -> GraphQLRequestData | list[GraphQLRequestData]:
        data = await super().parse_http_body(request)
        if isinstance(data, GraphQLRequestData):
            # Persisted queries (``engine.persisted``): a registered document by its hash.
            data.query = resolve(
                data.query, data.extensions, registry(), self.limits.registered_only
            )
        return data

    def decode_json(self, data: str | bytes) -> object:
        # GET's variables and extensions too: strict UTF-8, bounded nesting, no NaN.
        return decode(data, self.max_json_depth)

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket | None
    ) -> Context:
        backends: Backends = request.app.state.backends
        # Set by the authentication middleware; a request that skipped it sees nothing.
        principal = request.scope.get(SCOPE_KEY, NOBODY)
        return Context.build(backends, self.limits, principal)

    async def process_result(
        self, request: Request | WebSocket, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        record = request.scope.get(RECORD)
        if isinstance(record, RequestRecord):
            for error in result.errors or ():
                code = (error.extensions or {}).get("code")
                record.codes.append(code if isinstance(code, str) else "GRAPHQL_ERROR")
        return await super().process_result(request, result)  # type: ignore[arg-type]  # Strawberry's ASGI view types its request as Starlette's

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: Response,
    ) -> Response:
        response = super().create_response(response_data, sub_response)
        if isinstance(response_data, dict):
            errors: list[dict[str, Any]] = list(response_data.get("errors") or ())  # type: ignore[arg-type]  # GraphQLFormattedError is a TypedDict
            for error in errors:
                extensions = error.get("extensions") or {}
                code = extensions.get("code")
                if code not in (Busy.code, BackendBusy.code):
                    continue
                response.headers["retry-after"] = str(extensions.get("retryAfterSeconds", 1))
                # A full Redis pool with nothing else to show is a 429 too (as on REST);
                # with a part of the answer standing it stays a 200 with the header.
                if code == Busy.code or response_data.get("data") is None:
                    response.status_code = Busy.http_status
        return response

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        # Strawberry's own page loads GraphiQL from a CDN; serve the vendored copy.
        return HTMLResponse((STATIC / "graphiql.html").read_text(encoding="utf-8"))

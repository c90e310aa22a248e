"""The GraphQL endpoint: GraphQL over HTTP (GET and POST) in front of ``Runner.run``,
and the vendored GraphiQL page for a browser's GET.

The answer's media type follows ``Accept``: ``application/graphql-response+json`` when
the client asks for it, ``application/json`` otherwise (the legacy type, and what a
request without ``Accept`` gets). With the former, a request that did not run answers
its code's status from the error table (``core.errors.CODES``: 400 for a document that
does not parse or validate); with the latter, a GraphQL answer is a 200 and only a
refusal of the HTTP request itself (``transport`` in the table) takes its status.
A ``BUSY`` answer, and a ``BACKEND_BUSY`` one with nothing to show, is a 429 with
``Retry-After`` either way, for clients that read the status only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openrl_inspect.core.codes import code_of, status_of
from openrl_inspect.core.errors import (
    BadRequest,
    ClientDisconnected,
    InspectorError,
    UnsupportedMediaType,
)
from openrl_inspect.core.principal import NOBODY, SCOPE_KEY
from openrl_inspect.core.responses import refused
from openrl_inspect.execution import Answer, Request, Runner
from openrl_inspect.execution.disconnect import unless_disconnected
from openrl_inspect.telemetry.records import CLIENT_DISCONNECTED, RECORD, RequestRecord
from openrl_inspect.web.body import decode, graphql_request, operation_of
from starlette.requests import Request as HttpRequest
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive, Scope, Send

STATIC = Path(__file__).resolve().parents[1] / "static"
JSON = "application/json"
GRAPHQL_RESPONSE = "application/graphql-response+json"


def media_type(accept: str) -> str:
    """The answer's media type for an ``Accept`` header (the better of the two we speak;
    the legacy type when it names neither, or nothing)."""
    best, best_q = JSON, -1.0
    for part in accept.split(","):
        name, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if name in (GRAPHQL_RESPONSE, JSON) and q > 0 and q > best_q:
            best, best_q = name, q
    return best


def _status(answer: Answer, media: str) -> int:
    if not answer.ran and (
        media == GRAPHQL_RESPONSE or any(code_of(c).transport for c in answer.codes)
    ):
        return status_of(answer.codes)
    codes = set(answer.codes)
    if "BUSY" in codes or ("BACKEND_BUSY" in codes and answer.data is None):
        return 429
    return 200


def respond(answer: Answer, media: str) -> Response:
    """The HTTP response for ``answer``, serialised once."""
    response = Response(answer.encoded, _status(answer, media), media_type=media)
    retry = [code_of(c).retry_after_s for c in answer.codes]
    waits = [r for r in retry if r is not None]
    for e in answer.errors:
        given = (e.get("extensions") or {}).get("retryAfterSeconds")
        if isinstance(given, int):
            waits.append(given)
    if waits:
        response.headers["retry-after"] = str(max(waits))
    return response


def from_query_string(request: HttpRequest, max_json_depth: int) -> Request:
    """A GET's request from its parameters (``variables`` and ``extensions`` as JSON)."""
    params = request.query_params
    fields: dict[str, Any] = {"query": params.get("query"), "operationName": None}
    if "operationName" in params:
        fields["operationName"] = params["operationName"]
    for name in ("variables", "extensions"):
        raw = params.get(name)
        if raw:
            value = decode(raw, max_json_depth)
            if not isinstance(value, dict):
                raise BadRequest(f"`{name}` must be a JSON object.")
            fields[name] = value
    return _request(fields)


def _request(fields: dict[str, Any]) -> Request:
    return Request(
        query=fields.get("query"),
        variables=fields.get("variables"),
        operation_name=fields.get("operationName"),
        extensions=fields.get("extensions"),
    )


class GraphQLEndpoint:
    """``/graphql``: every request runs through ``runner`` for the request's principal."""

    def __init__(self, runner: Runner, max_json_depth: int = 64, graphiql_on: bool = True):
        self.runner = runner
        self.max_json_depth = max_json_depth
        self.graphiql_on = graphiql_on

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = HttpRequest(scope, receive)
        record = scope.get(RECORD)
        media = media_type(request.headers.get("accept", ""))
        try:
            if self._wants_ide(request):
                page = (STATIC / "graphiql.html").read_text(encoding="utf-8")
                await HTMLResponse(page)(scope, receive, send)
                return
            answer = await self._answer(request, record)
        except ClientDisconnected:
            # Nobody to answer: the execution was cancelled (or is left to the other
            # requests sharing it); the log line says why there was no response.
            if isinstance(record, RequestRecord):
                record.codes.append(CLIENT_DISCONNECTED)
            return
        except InspectorError as exc:
            # The HTTP request itself is refused (not JSON): its status whatever the type.
            if isinstance(record, RequestRecord):
                record.codes.append(exc.code)
            await refused(exc)(scope, receive, send)
            return
        if isinstance(record, RequestRecord):
            record.codes.extend(answer.codes)
        await respond(answer, media)(scope, receive, send)

    async def _answer(self, request: HttpRequest, record: object) -> Answer:
        parsed = await self._parse(request)
        if isinstance(record, RequestRecord):
            record.operation = operation_of(
                {"operationName": parsed.operation_name, "query": parsed.query}
            )
        principal = request.scope.get(SCOPE_KEY, NOBODY)
        backends = request.app.state.backends
        running = self.runner.run(parsed, backends, principal, read_only=True)
        return await unless_disconnected(request.receive, running)

    def _wants_ide(self, request: HttpRequest) -> bool:
        # A GET naming a persisted query has no ``query`` but is no browser asking for
        # the IDE (Apollo's link sends ``accept: */*``).
        params = request.query_params
        return (
            self.graphiql_on
            and request.method == "GET"
            and "text/html" in request.headers.get("accept", "")
            and "query" not in params
            and "extensions" not in params
        )

    async def _parse(self, request: HttpRequest) -> Request:
        if request.method == "GET":
            return from_query_string(request, self.max_json_depth)
        if "json" not in request.headers.get("content-type", ""):
            raise UnsupportedMediaType("A POST body must be JSON (content-type: application/json).")
        return _request(graphql_request(await request.body(), self.max_json_depth))

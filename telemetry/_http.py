"""Counting each request, and answering the scraper."""

from __future__ import annotations

import asyncio
import contextlib
import time

from openrl_inspect.core import backend_calls
from openrl_inspect.core.errors import BackendError, Forbidden
from openrl_inspect.core.principal import SCOPE_KEY, Principal
from openrl_inspect.core.responses import refused
from openrl_inspect.telemetry._registry import InspectorMetrics
from openrl_inspect.telemetry.records import RECORD, RequestRecord, unanswered
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The route label: the part after the API prefix, from a fixed list (the REST routes
# by their first segment: ``models/{id}/summary`` is ``models``, never an id).
_ROUTES = (
    "graphql", "graphiql", "healthz", "readyz", "metrics", "ui", "static",
    "inventory", "models", "sessions", "nodes", "gpus", "attention", "logs", "query",
    "mcp", "openapi.json",
)  # fmt: skip


def route_of(path: str, prefix: str) -> str:
    """A bounded name for ``path``: a known route, ``root`` or ``other``."""
    if path == "/":
        return "root"
    if path.startswith(prefix + "/"):
        head = path[len(prefix) + 1 :].split("/", 1)[0]
        if head in _ROUTES:
            return head
    return "other"


class RequestMetrics:
    """Outermost middleware: times every request and counts it once it has been
    answered, from the record ``RequestGuard`` and the GraphQL view filled in; backend
    calls made while answering are observed into the same registry."""

    def __init__(self, app: ASGIApp, metrics: InspectorMetrics, prefix: str) -> None:
        self.app = app
        self.metrics = metrics
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status: int | None = None
        started = time.perf_counter()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        token = backend_calls.observing(self.metrics)
        try:
            await self.app(scope, receive, send_status)
        finally:
            backend_calls.stop_observing(token)
            record = scope.get(RECORD)
            self.metrics.request_done(
                route_of(scope["path"], self.prefix),
                record if isinstance(record, RequestRecord) else None,
                unanswered(record) if status is None else status,
                time.perf_counter() - started,
            )


async def metrics_endpoint(request: Request) -> Response:
    """The Prometheus text format; with ``access=operators`` an operator's only."""
    metrics: InspectorMetrics = request.app.state.metrics
    if metrics.settings.access == "operators":
        principal = request.scope.get(SCOPE_KEY)
        if not (isinstance(principal, Principal) and principal.operator):
            refusal = Forbidden("Operators only.")
            record = request.scope.get(RECORD)
            if isinstance(record, RequestRecord):
                record.codes.append(refusal.code)
            return refused(refusal)
    backends = getattr(request.app.state, "backends", None)
    if backends is not None and backends.kubernetes is not None:
        # The cache's own state, read from memory; a failure keeps the last one read.
        with contextlib.suppress(BackendError, TimeoutError):
            async with asyncio.timeout(3.0):
                metrics.cache.status = await backends.kubernetes.status()
    return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

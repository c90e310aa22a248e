"""The Starlette application: routes, and backends opened once in the lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from openrl_inspect.context import Backends, Limits
from openrl_inspect.graphql_app import STATIC, InspectorGraphQL
from openrl_inspect.health import HealthLog, HealthSettings, probe_all, watch
from openrl_inspect.principal import ANONYMOUS_OPERATOR, SCOPE_KEY
from openrl_inspect.request_guard import HttpSettings, RequestGuard
from openrl_inspect.schema.root import build_schema
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

PREFIX = "/api/v1/inspect"
# The dashboard: static/ui/ served as is (ES modules, no build step).
UI = f"{PREFIX}/ui/"
BackendsFactory = Callable[[], AbstractAsyncContextManager[Backends]]


async def healthz(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def readyz(request: Request) -> Response:
    """Each backend's state. Only Redis decides readiness: without Kubernetes,
    Prometheus or Cloud Logging the API still answers everything else."""
    checks = await probe_all(request.app.state.backends)
    request.app.state.health.observe(checks)
    ready = bool(checks[0]["ok"])
    return JSONResponse({"ready": ready, "backends": checks}, status_code=200 if ready else 503)


async def graphiql(request: Request) -> Response:
    return FileResponse(STATIC / "graphiql.html", media_type="text/html")


async def root(request: Request) -> Response:
    return RedirectResponse(UI)


async def ui_slash(request: Request) -> Response:
    # The dashboard's modules are fetched relative to its page: it needs the slash.
    return RedirectResponse(UI)


def _middleware(http: HttpSettings) -> list[Middleware]:
    # Outermost first: CORS headers go on refusals too; the guard sees every request.
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=list(http.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["content-type", "x-request-id"],
            expose_headers=["x-request-id", "retry-after"],
            max_age=600,
        ),
        Middleware(RequestGuard, settings=http),
        Middleware(GZipMiddleware, minimum_size=1024),
        Middleware(Anonymous),
    ]


class Anonymous:
    """Authentication off: every request is the anonymous operator (loopback, the demo)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope[SCOPE_KEY] = ANONYMOUS_OPERATOR
        await self.app(scope, receive, send)


def create_app(
    open_backends: BackendsFactory,
    limits: Limits | None = None,
    http: HttpSettings | None = None,
    health: HealthSettings | None = None,
) -> Starlette:
    """An app whose lifespan opens the backends with ``open_backends`` and closes them."""
    limits = limits or Limits()
    http = http or HttpSettings()
    health = health or HealthSettings()
    graphql = InspectorGraphQL(build_schema(limits), limits, http.max_json_depth)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with open_backends() as backends:
            app.state.backends = backends
            app.state.health = HealthLog()
            stop = asyncio.Event()
            watcher = None
            if health.interval_s > 0:
                probing = watch(backends, app.state.health, health.interval_s, stop)
                watcher = asyncio.create_task(probing)
            try:
                yield
            finally:
                # A stop signal, not cancel(): under a test client's anyio cancel scopes a
                # cancelled sleeping task was seen never to wake.
                stop.set()
                if watcher is not None:
                    await asyncio.wait([watcher], timeout=5.0)

    return Starlette(
        routes=[
            Route("/", root),
            Route(f"{PREFIX}/graphql", graphql, methods=["GET", "POST"]),
            Route(f"{PREFIX}/graphiql", graphiql),
            Route(f"{PREFIX}/ui", ui_slash),
            Mount(f"{PREFIX}/ui", StaticFiles(directory=STATIC / "ui", html=True), name="ui"),
            Route(f"{PREFIX}/healthz", healthz),
            Route(f"{PREFIX}/readyz", readyz),
            Mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=_middleware(http),
        lifespan=lifespan,
    )

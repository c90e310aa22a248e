"""The Starlette application: routes, and backends opened once in the lifespan."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from openrl_inspect.adapters.errors import BackendError
from openrl_inspect.context import Backends, Limits
from openrl_inspect.graphql_app import STATIC, InspectorGraphQL
from openrl_inspect.schema.root import build_schema
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

PREFIX = "/api/v1/inspect"
BackendsFactory = Callable[[], AbstractAsyncContextManager[Backends]]


async def _check(name: str, probe: Any, timeout_s: float) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        async with asyncio.timeout(timeout_s):
            await probe()
    except (BackendError, TimeoutError) as exc:
        code = exc.code if isinstance(exc, BackendError) else "BACKEND_TIMEOUT"
        return {"name": name, "ok": False, "code": code}
    return {"name": name, "ok": True, "latency_ms": round((time.perf_counter() - started) * 1e3, 2)}


async def healthz(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def readyz(request: Request) -> Response:
    backends: Backends = request.app.state.backends
    checks = [await _check("redis", backends.state.ready, 3.0)]
    ready = all(c["ok"] for c in checks)
    return JSONResponse({"ready": ready, "backends": checks}, status_code=200 if ready else 503)


async def graphiql(request: Request) -> Response:
    return FileResponse(STATIC / "graphiql.html", media_type="text/html")


async def root(request: Request) -> Response:
    return RedirectResponse(f"{PREFIX}/graphiql")


def create_app(open_backends: BackendsFactory, limits: Limits | None = None) -> Starlette:
    """An app whose lifespan opens the backends with ``open_backends`` and closes them."""
    limits = limits or Limits()
    graphql = InspectorGraphQL(build_schema(limits), limits)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with open_backends() as backends:
            app.state.backends = backends
            yield

    return Starlette(
        routes=[
            Route("/", root),
            Route(f"{PREFIX}/graphql", graphql, methods=["GET", "POST"]),
            Route(f"{PREFIX}/graphiql", graphiql),
            Route(f"{PREFIX}/healthz", healthz),
            Route(f"{PREFIX}/readyz", readyz),
            Mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=[Middleware(GZipMiddleware, minimum_size=1024)],
        lifespan=lifespan,
    )

"""The Starlette application: routes, and backends opened once in the lifespan."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from openrl_inspect.context import Backends, Limits
from openrl_inspect.errors import BackendError
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


async def _kubernetes(backends: Backends) -> dict[str, Any]:
    assert backends.kubernetes is not None
    try:
        async with asyncio.timeout(3.0):
            status = await backends.kubernetes.status()
    except (BackendError, TimeoutError):
        return {"name": "kubernetes", "ok": False, "code": "BACKEND_UNAVAILABLE"}
    kinds = [
        {
            "kind": k.kind,
            "served": k.served,
            "synced": k.synced,
            "objects": k.objects,
            "age_s": None if k.list_age_s is None else round(k.list_age_s, 1),
            "error": k.last_error,
        }
        for k in status.kinds
    ]
    return {"name": "kubernetes", "ok": status.ready, "degraded": status.degraded, "kinds": kinds}


async def readyz(request: Request) -> Response:
    """Each backend's state. Only Redis decides readiness: without Kubernetes,
    Prometheus or Cloud Logging the API still answers everything else."""
    backends: Backends = request.app.state.backends
    redis = await _check("redis", backends.state.ready, 3.0)
    checks = [redis]
    if backends.kubernetes is not None:
        checks.append(await _kubernetes(backends))
    if backends.prometheus is not None:
        source = backends.prometheus
        checks.append(await _check("prometheus", lambda: source.instant("vector(1)"), 6.0))
    if backends.logs is not None:
        # Listing entries costs read quota: configured, not probed.
        checks.append({"name": "cloud_logging", "ok": True, "probed": False})
    ready = bool(redis["ok"])
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

"""The Starlette application: routes, authentication, and backends opened once in the
lifespan.

Which paths need a principal: the static assets are open; liveness (``/healthz``)
answers anyone what is answering, and only an operator where its backends are;
readiness (``/readyz``) answers anyone whether the inspector is ready, and only a
principal what each backend says (an operator all of it); the GraphiQL page is open
when it is on at all (it is static; its queries carry the credential); every other
path, ``/graphql`` first, needs a principal; ``/metrics`` an operator unless
``MetricsSettings.access`` opens it to an in-cluster scraper.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace

from openrl_inspect.agents.entries import Agents
from openrl_inspect.auth import Anonymous, Authenticator, AuthGate
from openrl_inspect.core.cursor import Sealer
from openrl_inspect.core.errors import BadRequest, MethodNotAllowed, NotFound, body
from openrl_inspect.core.principal import SCOPE_KEY, Principal
from openrl_inspect.core.responses import refused
from openrl_inspect.core.settings import Settings
from openrl_inspect.execution import Runner, build_schema
from openrl_inspect.execution.registry import DASHBOARD, ROUTES
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.telemetry import (
    InspectorMetrics,
    MetricsSettings,
    RequestMetrics,
    metrics_endpoint,
)
from openrl_inspect.web.graphql_endpoint import STATIC, GraphQLEndpoint
from openrl_inspect.web.guard import HttpSettings, RequestGuard
from openrl_inspect.web.health import HealthLog, HealthSettings, probe_all, watch
from openrl_inspect.web.identity import Identity
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

PREFIX = "/api/v1/inspect"
# The dashboard: static/ui/ served as is (ES modules, no build step).
UI = f"{PREFIX}/ui/"
BackendsFactory = Callable[[], AbstractAsyncContextManager[Backends]]


async def healthz(request: Request) -> Response:
    """Alive, and what is answering (``identity``): anyone gets the service, version,
    instance, mode and the backends' names; an operator also where each backend is
    (credentials removed). It never waits on a backend.
    """
    identity: Identity = request.app.state.identity
    principal = request.scope.get(SCOPE_KEY)
    operator = isinstance(principal, Principal) and principal.operator
    return JSONResponse(identity.answer(endpoints=operator))


async def readyz(request: Request) -> Response:
    """Whether Redis answers (only Redis decides readiness: without Kubernetes,
    Prometheus or Cloud Logging the API still answers everything else).

    Probes (kubelet, a load balancer's health check) carry no credential and get the
    answer alone; a viewer also gets each backend's name, state and error code; an
    operator the full probe (latencies, the Kubernetes watch caches). No answer holds
    a host, URL or password: a failed probe says only its code.
    """
    checks = await probe_all(request.app.state.backends)
    request.app.state.health.observe(checks)
    ready = bool(checks[0]["ok"])
    body: dict[str, object] = {"ready": ready}
    principal = request.scope.get(SCOPE_KEY)
    if isinstance(principal, Principal):
        body["backends"] = checks if principal.operator else [_brief(c) for c in checks]
    return JSONResponse(body, status_code=200 if ready else 503)


def _brief(check: dict[str, object]) -> dict[str, object]:
    return {k: check[k] for k in ("name", "ok", "code", "reason") if k in check}


GRAPHIQL_FILES = ("graphiql.html", "graphiql-init.js")


async def graphiql(request: Request) -> Response:
    return FileResponse(STATIC / "graphiql.html", media_type="text/html")


async def root(request: Request) -> Response:
    return RedirectResponse(UI)


async def ui_slash(request: Request) -> Response:
    # The dashboard's modules are fetched relative to its page: it needs the slash.
    return RedirectResponse(UI)


async def not_found(request: Request) -> Response:
    return refused(NotFound("page", request.url.path))


async def http_refusal(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, a method the route does not answer) in the
    API's JSON error shape, never its plain text."""
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        return refused(NotFound("page", request.url.path), headers)
    if exc.status_code == 405:
        return refused(MethodNotAllowed(f"{request.method} is not answered here."), headers)
    refusal = BadRequest(str(exc.detail))
    return JSONResponse(body(refusal), status_code=exc.status_code, headers=headers)


def _middleware(
    http: HttpSettings, authenticator: Authenticator, metrics: InspectorMetrics
) -> list[Middleware]:
    # Outermost first: every request is counted, refusals too; CORS headers go on
    # refusals too; the guard sees every request.
    return [
        Middleware(RequestMetrics, metrics=metrics, prefix=PREFIX),
        Middleware(
            CORSMiddleware,
            allow_origins=list(http.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type", "x-request-id"],
            expose_headers=["x-request-id", "retry-after"],
            max_age=600,
        ),
        Middleware(RequestGuard, settings=http),
        Middleware(GZipMiddleware, minimum_size=1024),
        # Inside the guard: a refusal gets the request's id and log line.
        Middleware(
            AuthGate,
            authenticator=authenticator,
            # The pages are static: their GraphQL requests carry the credential (behind
            # IAP the proxy adds it), so the assets themselves need none.
            open_paths=(
                "/",
                f"{PREFIX}/graphiql",
                f"{PREFIX}/ui",
                f"{PREFIX}/openapi.json",
                *([f"{PREFIX}/metrics"] if metrics.settings.access == "open" else []),
            ),
            open_prefixes=(f"{PREFIX}/static/", UI),
            # Answered without a credential; a principal's sees more.
            optional_paths=(f"{PREFIX}/healthz", f"{PREFIX}/readyz"),
        ),
    ]


def _lifespan(
    open_backends: BackendsFactory,
    metrics: InspectorMetrics,
    agents: Agents,
    health: HealthSettings,
    authenticator: Authenticator,
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """Open the backends (observed by the metrics) and the agents' sessions, probe the
    backends' health in the background, and close it all in reverse."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with metrics.observing(open_backends()) as backends, agents.running():
            app.state.backends = backends
            app.state.health = HealthLog(metrics.backends_probed)
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
                await authenticator.aclose()

    return lifespan


# size: the app's whole wiring in one place (routes, middleware), read top to bottom
def create_app(
    open_backends: BackendsFactory,
    settings: Settings | None = None,
    http: HttpSettings | None = None,
    health: HealthSettings | None = None,
    authenticator: Authenticator | None = None,
    graphiql_on: bool = True,
    identity: Identity | None = None,
    metrics_settings: MetricsSettings | None = None,
) -> Starlette:
    """An app whose lifespan opens the backends with ``open_backends`` and closes them.

    Without an ``authenticator`` every request is the anonymous operator (the demo,
    tests); ``serve`` passes the one its settings build (``auth.for_serve``).
    ``identity`` is what ``/healthz`` says is answering (made here when not given).
    ``metrics_settings`` says who may read ``/metrics`` (``telemetry``).
    """
    settings = settings or Settings()
    http = http or HttpSettings()
    health = health or HealthSettings()
    authenticator = authenticator or Anonymous()
    identity = replace(identity or Identity("serve"), fresh_for_s=settings.switches.fresh_for_s)
    # One runner under /graphql, REST, OpenAPI and MCP: the same schema and limits.
    cursors = Sealer(settings.secrets.cursor_key)
    runner = Runner(build_schema(settings.switches), settings, cursors=cursors)
    graphql = GraphQLEndpoint(runner, http.max_json_depth, graphiql_on)
    metrics = InspectorMetrics.for_app(metrics_settings, DASHBOARD, ROUTES)
    agents = Agents(runner, http.cors_origins)

    lifespan = _lifespan(open_backends, metrics, agents, health, authenticator)

    app = Starlette(
        routes=[
            Route("/", root),
            Route(f"{PREFIX}/graphql", graphql, methods=["GET", "POST"]),
            Route(f"{PREFIX}/graphiql", graphiql if graphiql_on else not_found),
            Route(f"{PREFIX}/ui", ui_slash),
            Mount(f"{PREFIX}/ui", StaticFiles(directory=STATIC / "ui", html=True), name="ui"),
            Route(f"{PREFIX}/healthz", healthz),
            Route(f"{PREFIX}/readyz", readyz),
            Route(f"{PREFIX}/metrics", metrics_endpoint),
            # GraphiQL off: its page is not served from the static files either.
            *(
                []
                if graphiql_on
                else [Route(f"{PREFIX}/static/{name}", not_found) for name in GRAPHIQL_FILES]
            ),
            Mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="static"),
            *agents.routes(PREFIX),
        ],
        middleware=_middleware(http, authenticator, metrics),
        exception_handlers={HTTPException: http_refusal},
        lifespan=lifespan,
    )
    app.state.identity = identity
    app.state.runner = runner
    app.state.metrics = metrics
    return app

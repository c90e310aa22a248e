"""REST routes under ``/api/v1/inspect``: named GraphQL documents behind plain GETs.

Every route runs its document through the runner (``openrl_inspect.execution``): the same
schema, limits, authentication and scoping as ``/graphql``. ``openapi.json`` describes
them, made from the same declarations.
"""

from __future__ import annotations

from typing import Any

from openrl_inspect.agents.rest.openapi import document
from openrl_inspect.agents.rest.routes import SPECS, RouteSpec, routes
from openrl_inspect.execution import Runner
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["SPECS", "RouteSpec", "mount", "openapi_route"]


def openapi_route(runner: Runner, prefix: str) -> Route:
    built: dict[str, Any] = {}

    async def openapi(request: Request) -> Response:
        if not built:
            built.update(document(runner.types, runner.documents, prefix, runner.settings.bounds))
        return JSONResponse(built)

    return Route(f"{prefix}/openapi.json", openapi, methods=["GET"])


def mount(runner: Runner, prefix: str) -> list[Route]:
    """The routes and their OpenAPI document, for the app's route list."""
    return [openapi_route(runner, prefix), *routes(runner, prefix)]

"""The one JSON error response every refusal before GraphQL execution is sent as."""

from __future__ import annotations

from openrl_inspect.core.errors import RequestRefused
from starlette.responses import JSONResponse


def refused(exc: RequestRefused, headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"errors": [{"message": exc.message, "extensions": {"code": exc.code}}]}
    return JSONResponse(body, status_code=exc.http_status, headers=headers)

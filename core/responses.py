"""The one JSON response every refusal outside a GraphQL answer is sent as (the guard's,
the authentication gate's, a GraphQL request that cannot run at all)."""

from __future__ import annotations

from openrl_inspect.core.errors import InspectorError, body
from starlette.responses import JSONResponse


def refused(exc: InspectorError, headers: dict[str, str] | None = None) -> JSONResponse:
    """``exc`` as an answer with only errors, its HTTP status from the code table."""
    return JSONResponse(body(exc), status_code=exc.status, headers=headers)

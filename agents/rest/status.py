"""An answer's HTTP status: the codes of ``errors.py`` as a plain HTTP client reads them.

Only an answer that has nothing to show (``data`` null, or the route's root field null)
takes an error's status; an answer with a part missing is a 200 with ``errors``, as in
GraphQL. When several errors have nothing to show, the caller's problem wins over the
server's (a 400 before a 503).
"""

from __future__ import annotations

from typing import Any

_BY_CODE = {
    "UNAUTHENTICATED": 401,
    "FORBIDDEN": 403,
    "RAW_QUERY_DISABLED": 403,
    "NOT_FOUND": 404,
    "BAD_INPUT": 400,
    "BAD_REQUEST": 400,
    "GRAPHQL_VALIDATION_FAILED": 400,
    "QUERY_TOO_COSTLY": 400,
    "PERSISTED_QUERY_NOT_IN_LIST": 403,
    "BUSY": 429,
    # Redis answers, but every pooled connection stayed in use: retry, as for BUSY.
    "BACKEND_BUSY": 429,
    "BAD_RECORD": 502,
    "DEADLINE_EXCEEDED": 504,
}
# A code not listed is the server's (backend errors: 503; INTERNAL: 500).
_ORDER = (401, 403, 404, 400, 429, 502, 503, 504, 500)


def code_status(code: str) -> int:
    if code in _BY_CODE:
        return _BY_CODE[code]
    if code.startswith("BACKEND_") or code in ("SCHEMA_VERSION_UNSUPPORTED", "AUTH_UNAVAILABLE"):
        return 503
    return 500


def status(data: dict[str, Any] | None, root: str, codes: list[str]) -> int:
    if not codes or (data is not None and data.get(root) is not None):
        return 200
    found = {code_status(c) for c in codes}
    return next(s for s in _ORDER if s in found)

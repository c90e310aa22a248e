"""The one table from an error code to what it means on the wire.

``CODES`` is the one table from a code to what it means on each wire: the GraphQL
``extensions.code`` is the code itself; ``status`` is the HTTP status of an answer that
has nothing else to show (REST, and ``/graphql`` answering
``application/graphql-response+json``); ``transport`` marks a refusal of the HTTP request
itself, sent with its status whatever the media type (a legacy ``application/json``
answer of ``/graphql`` is otherwise a 200, as GraphQL over HTTP asks); an MCP tool answer
sets ``isError`` when it has nothing else to show, as REST answers a non-200; ``error``
formats one error (``errors.body`` every body of errors alone).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Code:
    """What one error code means on the wire."""

    name: str
    status: int
    transport: bool = False
    # Seconds a client should wait before retrying (``Retry-After``), when it should.
    retry_after_s: int | None = None


# size: the one table of codes, a row each
_TABLE = (
    # The request itself, refused before GraphQL runs anything.
    Code("UNSUPPORTED_MEDIA_TYPE", 415, transport=True),
    Code("METHOD_NOT_ALLOWED", 405, transport=True),
    # Not a well-formed GraphQL request (not JSON, a parameter of the wrong type, no
    # query): a 400 whatever the media type, as graphql-http's audits ask.
    Code("BAD_REQUEST", 400, transport=True),
    Code("BODY_TOO_LARGE", 413, transport=True),
    Code("REQUEST_TIMEOUT", 408, transport=True),
    Code("UNAUTHENTICATED", 401, transport=True),
    Code("AUTH_UNAVAILABLE", 503, transport=True),
    Code("BUSY", 429, transport=True, retry_after_s=1),
    Code("PERSISTED_QUERY_NOT_IN_LIST", 403, transport=True),
    # Apollo's clients read this code from a 200 and retry with the text.
    Code("PERSISTED_QUERY_NOT_FOUND", 200, transport=True),
    # The document: it does not parse, validate, or fit the limits (a request error:
    # a 200 as application/json, a 400 as application/graphql-response+json).
    Code("GRAPHQL_PARSE_FAILED", 400),
    Code("GRAPHQL_VALIDATION_FAILED", 400),
    Code("QUERY_TOO_COSTLY", 400),
    # A field or the whole answer.
    Code("BAD_INPUT", 400),
    Code("NOT_FOUND", 404),
    Code("FORBIDDEN", 403),
    Code("RAW_QUERY_DISABLED", 403),
    Code("BAD_RECORD", 502),
    Code("BACKEND_UNAVAILABLE", 503),
    # Redis answers, but every pooled connection stayed in use: retry, as for BUSY.
    Code("BACKEND_BUSY", 429, retry_after_s=1),
    Code("BACKEND_TIMEOUT", 503),
    Code("BACKEND_PROTOCOL_ERROR", 503),
    Code("BACKEND_NOT_CONFIGURED", 503),
    Code("SCHEMA_VERSION_UNSUPPORTED", 503),
    # The model indexes are not known complete: `openrl-inspect reindex` builds them.
    Code("INDEXES_NOT_BUILT", 503),
    Code("API_VERSION_UNSUPPORTED", 503),
    Code("DEADLINE_EXCEEDED", 504),
    Code("INTERNAL", 500),
    # nginx's "client closed request": nobody is left to read the answer.
    Code("CLIENT_DISCONNECTED", 499),
    Code("BAD_SETTING", 500),
    # The terminal summary could not reach the inspector it was pointed at.
    Code("UNREACHABLE", 503),
)
CODES: dict[str, Code] = {code.name: code for code in _TABLE}
_INTERNAL = CODES["INTERNAL"]
# When several errors leave nothing to show, the caller's problem wins over the server's.
_PRECEDENCE = (401, 403, 404, 400, 413, 408, 429, 502, 503, 504, 500)


def code_of(name: object) -> Code:
    """The row of ``name``; an unknown name (or none) is the server's fault."""
    return CODES.get(name, _INTERNAL) if isinstance(name, str) else _INTERNAL


def status_of(codes: Iterable[str]) -> int:
    """The HTTP status of an answer with nothing to show and these errors' codes."""
    found = {code_of(c).status for c in codes}
    return next((s for s in _PRECEDENCE if s in found), max(found, default=500))


def error(message: str, code: str, **extensions: Any) -> dict[str, Any]:
    """One GraphQL error as the API formats it."""
    return {"message": message, "extensions": {"code": code, **extensions}}

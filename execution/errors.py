"""How errors leave a GraphQL answer.

Expected failures (``InspectorError``) keep their safe message and gain
``extensions.code`` with what the error adds (``backend``, ``retryAfterSeconds``,
``parameter``: ``InspectorError.extensions``); the field they happened in goes null and
the rest of the answer stands. GraphQL's own errors (validation, bad variables) pass
through with code ``GRAPHQL_VALIDATION_FAILED``. Anything else is masked: a fixed message
and code INTERNAL, no trace, key or host name; the original is logged server-side.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from graphql import GraphQLError
from openrl_inspect.core.errors import InspectorError
from strawberry.extensions import SchemaExtension

log = logging.getLogger("openrl_inspect.errors")


def coded(error: GraphQLError) -> GraphQLError:
    """``error`` with its code, masked unless it is expected."""
    original = error.original_error
    if original is None or isinstance(original, GraphQLError):
        # Validation and variable errors: about the query, safe to show; coded so a
        # client can tell them from a failure (errors at a path keep graphql-core's form).
        if error.path is not None or (error.extensions or {}).get("code"):
            return error
        return _with(error, error.message, {"code": "GRAPHQL_VALIDATION_FAILED"})
    if isinstance(original, InspectorError):
        return _with(error, original.message, {"code": original.code, **original.extensions()})
    log.error("unexpected error at %s", error.path, exc_info=original)
    return _with(error, "Internal error.", {"code": "INTERNAL"})


def _with(error: GraphQLError, message: str, extensions: dict[str, Any]) -> GraphQLError:
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=None,
        extensions={**(error.extensions or {}), **extensions},
    )


def formatted(error: GraphQLError, code: str) -> dict[str, Any]:
    """A GraphQL error raised before execution (a syntax error), formatted with ``code``."""
    return dict(_with(error, error.message, {"code": code}).formatted)


class CodedErrors(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [coded(e) for e in result.errors]

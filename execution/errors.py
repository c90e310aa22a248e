"""How errors leave the API.

Expected failures (``InspectorError``) keep their safe message and gain
``extensions.code`` (and ``extensions.backend`` for backend errors); the field they
happened in goes null and the rest of the answer stands. GraphQL's own errors
(validation, bad variables) pass through with code ``GRAPHQL_VALIDATION_FAILED``.
Anything else is masked: a fixed message and code INTERNAL, no trace, key or host
name; the original is logged server-side.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from graphql import GraphQLError
from openrl_inspect.core.errors import BackendBusy, BackendError, Busy, InspectorError
from strawberry.extensions import SchemaExtension

log = logging.getLogger("openrl_inspect.core.errors")


def coded(error: GraphQLError) -> GraphQLError:
    original = error.original_error
    if original is None or isinstance(original, GraphQLError):
        # Parse, validation and variable errors: about the query, safe to show; coded so
        # a client can tell them from a failure (errors at a path keep graphql-core's form).
        if error.path is not None or (error.extensions or {}).get("code"):
            return error
        return GraphQLError(
            error.message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            extensions={**(error.extensions or {}), "code": "GRAPHQL_VALIDATION_FAILED"},
        )
    extensions: dict[str, Any]
    if isinstance(original, InspectorError):
        message = original.message
        extensions = {"code": original.code}
        if isinstance(original, BackendError):
            extensions["backend"] = original.backend
        if isinstance(original, Busy):
            extensions["retryAfterSeconds"] = original.retry_after_s
        elif isinstance(original, BackendBusy):
            # The pool's wait ran out: load here, not an outage; worth a retry soon.
            extensions["retryAfterSeconds"] = 1
    else:
        log.error("unexpected error at %s", error.path, exc_info=original)
        message = "Internal error."
        extensions = {"code": "INTERNAL"}
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=None,
        extensions=extensions,
    )


class CodedErrors(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [coded(e) for e in result.errors]

"""What the schema says about itself to a caller: introspection, and suggestions.

With introspection off, graphql-core would still answer a misspelt field with "Did you
mean 'sessions'?", which reveals the schema one guess at a time. ``HideSuggestions``
takes the suggestions out of every message of an answer (validation's, and those
variable coercion adds during execution).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

_SUGGESTION = re.compile(r"\s*Did you mean [^?]*\?")


def without_suggestions(error: GraphQLError) -> GraphQLError:
    message = _SUGGESTION.sub("", error.message)
    if message == error.message:
        return error
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions=error.extensions,
    )


class HideSuggestions(SchemaExtension):
    """Validation and errors without "Did you mean ...": for when introspection is off."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [without_suggestions(e) for e in result.errors]

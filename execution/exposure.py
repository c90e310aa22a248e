"""What the schema says about itself to a caller: introspection, and suggestions.

With introspection off, graphql-core would still answer a misspelt field with "Did you
mean 'sessions'?", which reveals the schema one guess at a time. ``HideSuggestions``
runs validation with graphql-core's ``hide_suggestions`` flag, and takes the
suggestions out of any later message (variable coercion adds them during execution).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from graphql import GraphQLError, validate
from strawberry.extensions import SchemaExtension
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule

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

    def on_validate(self) -> Iterator[None]:
        ctx = self.execution_context
        # Strawberry skips its own validation when an extension has already run it.
        if ctx.graphql_document is not None and ctx.pre_execution_errors is None:
            rules = (*ctx.validation_rules, MaybeNullValidationRule, OneOfInputValidationRule)
            ctx.pre_execution_errors = validate(
                ctx.schema._schema, ctx.graphql_document, rules, hide_suggestions=True
            )
        yield

"""The schema documents run on: the root ``Query`` with the execution's extensions.

``Runner`` (``execution.run``) parses each document once and hands the parsed document
to the execution through ``parsed_once``: ``ParsedOnce`` gives it to Strawberry in place
of a second parse. Validation and execution are Strawberry's and graphql-core's (through
the inspector's own executor with ``Switches.execution = "fast"``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import strawberry
from graphql import DocumentNode, GraphQLError
from openrl_inspect.core.settings import Switches
from openrl_inspect.execution.errors import CodedErrors
from openrl_inspect.execution.exposure import HideSuggestions
from openrl_inspect.execution.fast import ExecutionStats, executor_class
from openrl_inspect.schema.root import Query
from strawberry.extensions import DisableIntrospection, SchemaExtension

log = logging.getLogger("openrl_inspect.graphql")

# The document the current run parsed, with its text (a context variable: concurrent
# runs each see their own).
_PARSED: ContextVar[tuple[str, DocumentNode] | None] = ContextVar(
    "openrl_inspect_parsed", default=None
)


@contextlib.contextmanager
def parsed_once(text: str, document: DocumentNode) -> Iterator[None]:
    """Within: an execution of ``text`` takes ``document`` instead of parsing it again."""
    token = _PARSED.set((text, document))
    try:
        yield
    finally:
        _PARSED.reset(token)


class ParsedOnce(SchemaExtension):
    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        parsed = _PARSED.get()
        # Strawberry parses only when no document is set (as its own ParserCache does).
        if parsed is not None and parsed[0] == context.query:
            context.graphql_document = parsed[1]
        yield


class InspectorSchema(strawberry.Schema):
    """The schema, with what the fast executor answered and left to the stock path
    (``execution.fast``; None on the stock path)."""

    execution_stats: ExecutionStats | None = None

    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        # Coded errors are answers, not server faults: CodedErrors logs the unexpected
        # ones with their traceback; Strawberry's default would log every one at ERROR.
        for error in errors:
            log.debug("graphql error at %s: %s", error.path, error.message)


def build_schema(switches: Switches | None = None) -> InspectorSchema:
    switches = switches or Switches()
    extensions: list[type[SchemaExtension] | Callable[[], SchemaExtension]] = [
        CodedErrors,
        ParsedOnce,
    ]
    if not switches.introspection:
        extensions += [DisableIntrospection, HideSuggestions]
    schema = InspectorSchema(query=Query, extensions=extensions)
    if switches.execution == "fast":
        # Set after construction: the executor needs to know whether the schema has
        # exception handlers, and Strawberry reads the class at each execution.
        schema.execution_stats = ExecutionStats()
        schema.execution_context_class = executor_class(
            schema.execution_stats, bool(schema.exception_handlers), schema.config
        )
    return schema

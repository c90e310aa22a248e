"""The schema documents run on: the root ``Query`` with the execution's extensions.

``Runner`` (``execution.run``) compiles each document once (``execution.documents``) and
hands it to the execution through ``parsed_once``: ``ParsedOnce`` gives Strawberry the
parsed document in place of a second parse, and a document that validated cleanly before
is not validated again. Validation and execution are Strawberry's and graphql-core's (through
the inspector's plan executor with ``Switches.execution = "plan"``, the default).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import strawberry
from graphql import GraphQLError
from openrl_inspect.core.settings import Switches
from openrl_inspect.execution.documents import Compiled
from openrl_inspect.execution.errors import CodedErrors
from openrl_inspect.execution.exposure import HideSuggestions
from openrl_inspect.execution.plan import PlanStats, executor_class
from openrl_inspect.schema.root import Query
from strawberry.extensions import DisableIntrospection, SchemaExtension

log = logging.getLogger("openrl_inspect.graphql")

# The document the current run compiled (a context variable: concurrent runs each see
# their own).
_COMPILED: ContextVar[Compiled | None] = ContextVar("openrl_inspect_compiled", default=None)


@contextlib.contextmanager
def parsed_once(compiled: Compiled) -> Iterator[None]:
    """Within: an execution of ``compiled.text`` takes its parsed document instead of
    parsing it again, and skips validation once it has validated cleanly."""
    token = _COMPILED.set(compiled)
    try:
        yield
    finally:
        _COMPILED.reset(token)


class ParsedOnce(SchemaExtension):
    def _compiled(self) -> Compiled | None:
        compiled = _COMPILED.get()
        if compiled is not None and compiled.text == self.execution_context.query:
            return compiled
        return None

    def on_parse(self) -> Iterator[None]:
        compiled = self._compiled()
        # Strawberry parses only when no document is set (as its own ParserCache does).
        if compiled is not None:
            self.execution_context.graphql_document = compiled.document
        yield

    def on_validate(self) -> Iterator[None]:
        compiled = self._compiled()
        context = self.execution_context
        # Strawberry validates only when no errors are set (as its ValidationCache does).
        if compiled is not None and compiled.valid:
            context.pre_execution_errors = []
        yield
        if compiled is not None and context.pre_execution_errors == []:
            compiled.valid = True


class InspectorSchema(strawberry.Schema):
    """The schema, with what the plan executor did and left to the stock path
    (``execution.plan``; None on the stock path)."""

    execution_stats: PlanStats | None = None

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
    if switches.execution == "plan":
        # Set after construction: the executor needs to know whether the schema has
        # exception handlers, and Strawberry reads the class at each execution.
        schema.execution_stats = PlanStats()
        schema.execution_context_class = executor_class(
            schema.execution_stats, bool(schema.exception_handlers), schema.config
        )
    return schema

"""The schema object that runs documents: the root ``Query`` with the execution's
extensions (codes, cost, exposure), a deadline and shared executions."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any

import strawberry
from graphql import GraphQLError
from openrl_inspect.core.errors import DeadlineExceeded
from openrl_inspect.core.settings import Limits
from openrl_inspect.execution.admission import admission, refusal
from openrl_inspect.execution.errors import CodedErrors, coded
from openrl_inspect.execution.exposure import HideSuggestions
from openrl_inspect.execution.fast import ExecutionStats, executor_class
from openrl_inspect.execution.sharing import flight_key
from openrl_inspect.execution.single_flight import Flights
from openrl_inspect.schema.root import Query
from strawberry.extensions import (
    DisableIntrospection,
    MaxTokensLimiter,
    SchemaExtension,
)
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

log = logging.getLogger("openrl_inspect.graphql")


class InspectorSchema(strawberry.Schema):
    """The schema, with a deadline on every operation (``Limits.request_deadline_s``)
    and, when ``flights`` is set, identical concurrent queries sharing one execution
    (``single_flight``, ``schema.sharing``): each caller still waits under its own
    deadline and gets its own answer object from the view."""

    deadline_s: float = 0.0
    flights: Flights[Hashable, ExecutionResult] | None = None
    # What the fast executor answered and left to the stock path (``schema.fast``);
    # None on the stock path.
    execution_stats: ExecutionStats | None = None

    async def execute(  # Strawberry's signature, passed on whole
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        def start() -> Awaitable[ExecutionResult]:
            return super(InspectorSchema, self).execute(
                query,
                variable_values,
                context_value,
                root_value,
                operation_name,
                allowed_operation_types,
                operation_extensions,
            )

        key = None
        if self.flights is not None:
            key = flight_key(
                query,
                variable_values,
                context_value,
                root_value,
                operation_name,
                allowed_operation_types,
                operation_extensions,
            )
        work = start() if key is None or self.flights is None else self.flights.join(key, start)
        if self.deadline_s <= 0:
            return await work
        try:
            async with asyncio.timeout(self.deadline_s):
                return await work
        except TimeoutError:
            # The executor's tasks were cancelled at their next await (a shared execution
            # only when no other caller still waits for it), and with them the batches
            # nobody else waits for (``BatchLoader``), round trips included.
            late = DeadlineExceeded(
                f"The request ran past its {self.deadline_s:g} s deadline and was cancelled. "
                "Ask for smaller pages or fewer nested lists."
            )
            errors = [coded(e) for e in refusal(late).errors or ()]
            return ExecutionResult(data=None, errors=errors)

    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        # Coded errors are answers, not server faults: CodedErrors logs the unexpected
        # ones with their traceback; Strawberry's default would log every one at ERROR.
        for error in errors:
            log.debug("graphql error at %s: %s", error.path, error.message)


def _answered(result: ExecutionResult) -> bool:
    return result.data is not None


def build_schema(limits: Limits | None = None) -> InspectorSchema:
    limits = limits or Limits()
    extensions: list[type[SchemaExtension] | Callable[[], SchemaExtension]] = [
        CodedErrors,
        lambda: MaxTokensLimiter(max_token_count=limits.max_tokens),
        # Depth and aliases are limited there too, through fragments, in linear time.
        admission(limits),
    ]
    if not limits.introspection:
        # After the rule-adding extensions: HideSuggestions validates with all the rules.
        extensions += [DisableIntrospection, HideSuggestions]
    schema = InspectorSchema(query=Query, extensions=extensions)
    if limits.execution == "fast":
        # Set after construction: the executor needs to know whether the schema has
        # exception handlers, and Strawberry reads the class at each execution.
        schema.execution_stats = ExecutionStats()
        schema.execution_context_class = executor_class(
            schema.execution_stats, bool(schema.exception_handlers), schema.config
        )
    elif limits.execution != "stock":
        raise ValueError(f"execution must be 'stock' or 'fast', got {limits.execution!r}")
    schema.deadline_s = limits.request_deadline_s
    if limits.single_flight:
        # A refusal (BUSY, over the cost limit...) is no answer to hand the next poller.
        schema.flights = Flights(
            fresh_for_s=limits.fresh_for_s,
            keep=_answered,
            refresh_deadline_s=limits.request_deadline_s or 30.0,
        )
    return schema

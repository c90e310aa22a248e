"""Admitting an operation: its cost checked, and a slot held while an expensive one runs.

The cost is computed once the document is parsed and before graphql-core validates it
(the variables are known by then). A query past a limit (nodes, aliases, field
selections, depth) is answered ``QUERY_TOO_COSTLY`` without validation or any backend.
A query whose node cost reaches ``Limits.expensive_nodes`` needs one of
``Limits.max_expensive_requests`` slots; it waits for one up to ``Limits.busy_wait_s``
and is then answered ``BUSY`` (HTTP 429 with ``Retry-After``), so a burst of large
queries queues briefly instead of piling up memory.
Cheap queries never wait.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterator

from graphql import ExecutionResult, GraphQLError
from openrl_inspect.core.errors import Busy, InspectorError, QueryTooCostly
from openrl_inspect.core.settings import Limits
from openrl_inspect.execution.cost import Cost, CostLimits, query_cost
from strawberry.extensions import SchemaExtension

_LIMIT_TEXT = {
    "nodes": "nodes",
    "aliases": "aliases",
    "fields": "field selections (with fragments expanded)",
    "depth": "levels of nested fields",
}


class Slots:
    """At most ``size`` holders at once; a newcomer waits up to ``wait_s``, then ``Busy``."""

    def __init__(self, size: int, wait_s: float) -> None:
        self._free = asyncio.Semaphore(max(1, size))
        self.wait_s = wait_s

    async def acquire(self) -> None:
        try:
            async with asyncio.timeout(self.wait_s):
                await self._free.acquire()
        except TimeoutError:
            raise Busy(
                "The inspector is answering as many large queries as it allows; retry "
                "shortly, or ask for smaller pages.",
                retry_after_s=max(1, math.ceil(self.wait_s)),
            ) from None

    def release(self) -> None:
        self._free.release()


def refusal(error: InspectorError) -> ExecutionResult:
    """A whole-operation refusal; ``CodedErrors`` gives it its code."""
    return ExecutionResult(data=None, errors=[GraphQLError(error.message, original_error=error)])


def cost_limits(limits: Limits) -> CostLimits:
    return CostLimits(
        max_nodes=limits.max_nodes,
        max_aliases=limits.max_aliases,
        max_depth=limits.max_depth,
        max_fields=limits.max_fields,
        default_page=limits.default_page_size,
        max_page=limits.max_page_size,
    )


def admission(limits: Limits) -> type[SchemaExtension]:
    """The extension class for one schema; its slots are shared by all its operations."""
    bounds = cost_limits(limits)
    slots = Slots(limits.max_expensive_requests, limits.busy_wait_s)

    class Admission(SchemaExtension):
        cost = Cost()

        def on_validate(self) -> Iterator[None]:
            ctx = self.execution_context
            document = ctx.graphql_document
            if document is not None and ctx.pre_execution_errors is None:
                schema = ctx.schema._schema
                self.cost = query_cost(schema, document, ctx.operation_name, ctx.variables, bounds)
                if self.cost.exceeded is not None:
                    limit = getattr(bounds, f"max_{self.cost.exceeded}")
                    refused = QueryTooCostly(
                        f"This query asks for more than {limit} "
                        f"{_LIMIT_TEXT[self.cost.exceeded]}. Ask for smaller pages (first), "
                        "fewer nested lists or fewer aliases."
                    )
                    # Strawberry skips validation when an extension has set these.
                    ctx.pre_execution_errors = refusal(refused).errors
            yield

        async def on_execute(self) -> AsyncIterator[None]:
            if self.execution_context.result is not None or (
                self.cost.nodes < limits.expensive_nodes
            ):
                yield
                return
            try:
                await slots.acquire()
            except Busy as exc:
                self.execution_context.result = refusal(exc)
                yield
                return
            try:
                yield
            finally:
                slots.release()

    return Admission

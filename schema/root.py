"""The schema, assembled from per-area root pieces."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import strawberry
from graphql import GraphQLError
from openrl_inspect.context import Limits
from openrl_inspect.errors import DeadlineExceeded
from openrl_inspect.schema.admission import admission, refusal
from openrl_inspect.schema.cluster.query import ClusterQuery
from openrl_inspect.schema.errors import CodedErrors, coded
from openrl_inspect.schema.exposure import HideSuggestions
from openrl_inspect.schema.metrics.query import MetricsQuery
from openrl_inspect.schema.state.query import StateQuery
from openrl_inspect.schema.summary.rollup import SummaryQuery
from strawberry.extensions import (
    DisableIntrospection,
    MaxTokensLimiter,
    SchemaExtension,
)
from strawberry.tools import merge_types
from strawberry.types import ExecutionResult

log = logging.getLogger("openrl_inspect.graphql")

Query = merge_types("Query", (StateQuery, ClusterQuery, MetricsQuery, SummaryQuery))


class InspectorSchema(strawberry.Schema):
    """The schema, with a deadline on every operation (``Limits.request_deadline_s``)."""

    deadline_s: float = 0.0

    async def execute(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        if self.deadline_s <= 0:
            return await super().execute(*args, **kwargs)
        try:
            async with asyncio.timeout(self.deadline_s):
                return await super().execute(*args, **kwargs)
        except TimeoutError:
            # The executor's tasks were cancelled at their next await; what a DataLoader
            # had already sent to a backend finishes within that backend's own timeout.
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


def build_schema(limits: Limits | None = None) -> strawberry.Schema:
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
    schema.deadline_s = limits.request_deadline_s
    return schema

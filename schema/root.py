"""The schema, assembled from per-area root pieces."""

from __future__ import annotations

import logging
from typing import Any

import strawberry
from graphql import GraphQLError
from openrl_inspect.context import Limits
from openrl_inspect.schema.cluster.query import ClusterQuery
from openrl_inspect.schema.cost import node_cost_limiter
from openrl_inspect.schema.errors import CodedErrors
from openrl_inspect.schema.metrics.query import MetricsQuery
from openrl_inspect.schema.state.query import StateQuery
from strawberry.extensions import (
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
)
from strawberry.tools import merge_types

log = logging.getLogger("openrl_inspect.graphql")

Query = merge_types("Query", (StateQuery, ClusterQuery, MetricsQuery))


class InspectorSchema(strawberry.Schema):
    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        # Coded errors are answers, not server faults: CodedErrors logs the unexpected
        # ones with their traceback; Strawberry's default would log every one at ERROR.
        for error in errors:
            log.debug("graphql error at %s: %s", error.path, error.message)


def build_schema(limits: Limits | None = None) -> strawberry.Schema:
    limits = limits or Limits()
    cost = node_cost_limiter(limits.max_nodes, limits.default_page_size, limits.max_page_size)
    return InspectorSchema(
        query=Query,
        extensions=[
            CodedErrors,
            lambda: QueryDepthLimiter(max_depth=limits.max_depth),
            lambda: MaxAliasesLimiter(max_alias_count=limits.max_aliases),
            lambda: MaxTokensLimiter(max_token_count=limits.max_tokens),
            cost,
        ],
    )

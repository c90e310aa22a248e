"""The schema, assembled from per-area root pieces."""

from __future__ import annotations

import strawberry
from openrl_inspect.context import Limits
from openrl_inspect.schema.cost import node_cost_rule
from openrl_inspect.schema.errors import CodedErrors
from openrl_inspect.schema.state_query import StateQuery
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
)
from strawberry.tools import merge_types

Query = merge_types("Query", (StateQuery,))


def build_schema(limits: Limits | None = None) -> strawberry.Schema:
    limits = limits or Limits()
    cost = node_cost_rule(limits.max_nodes, limits.default_page_size, limits.max_page_size)
    return strawberry.Schema(
        query=Query,
        extensions=[
            CodedErrors,
            lambda: QueryDepthLimiter(max_depth=limits.max_depth),
            lambda: MaxAliasesLimiter(max_alias_count=limits.max_aliases),
            lambda: MaxTokensLimiter(max_token_count=limits.max_tokens),
            lambda: AddValidationRules([cost]),
        ],
    )

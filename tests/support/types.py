"""The API's types as graphql-core builds them from its SDL (what ``Runner.types``
holds): for tests that walk or validate against the schema without executing."""

from __future__ import annotations

import functools

import graphql
from openrl_inspect.execution import build_schema


@functools.cache
def api_types() -> graphql.GraphQLSchema:
    return graphql.build_schema(build_schema().as_str())

"""Which executions identical concurrent requests may share (``single_flight``).

Two requests share one execution only when nothing that shapes the answer differs: the
principal (name, role and owners, so a viewer never sees an answer scoped for another),
the document text, the operation name, the variables, the operation types allowed and
the request's extensions. Only a query is shared; a document that does not parse, or
whose operation is not a query, runs on its own (and is answered as it would be alone).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Hashable, Iterable
from typing import Any

from graphql import GraphQLError, OperationType, get_operation_ast, parse
from openrl_inspect.resolvers.context import Context

# Documents longer than this are parsed each time rather than remembered: the cache
# holds at most its size times this many characters.
_CACHED_TEXT = 16_384


@functools.lru_cache(maxsize=256)
def _cached_is_query(text: str, operation_name: str | None) -> bool:
    return _is_query(text, operation_name)


def _is_query(text: str, operation_name: str | None) -> bool:
    try:
        operation = get_operation_ast(parse(text), operation_name)
    except GraphQLError:
        return False
    return operation is not None and operation.operation == OperationType.QUERY


def is_query(text: str, operation_name: str | None) -> bool:
    """Whether ``text`` parses and the operation that would run is a query."""
    if len(text) > _CACHED_TEXT:
        return _is_query(text, operation_name)
    return _cached_is_query(text, operation_name)


def _canonical(value: object) -> str:
    # sort_keys: the same variables in another order are the same request; JSON keeps
    # 1, 1.0 and true apart.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def flight_key(
    query: str | None,
    variables: dict[str, Any] | None,
    context: object,
    root_value: object,
    operation_name: str | None,
    allowed: Iterable[object] | None,
    extensions: dict[str, Any] | None,
) -> Hashable | None:
    """The key identical requests share, or ``None`` for a request that runs alone."""
    if not isinstance(context, Context) or root_value is not None or not query:
        return None
    if not is_query(query, operation_name):
        return None
    try:
        shape = _canonical([variables or {}, extensions or {}])
    except (TypeError, ValueError):
        return None  # not plain JSON: nothing to compare it by safely
    kinds = None if allowed is None else frozenset(allowed)
    return (context.principal, query, operation_name, shape, kinds)

"""What a GraphQL request body must be, checked before GraphQL sees it.

A POST body is JSON (strict UTF-8, no NaN, no byte-order mark, nested at most
``max_depth`` deep) holding one object whose ``query`` is a string, ``variables`` and
``extensions`` objects and ``operationName`` a string (each may be null or absent).
Anything else is ``BadRequest``: HTTP 400 with a JSON error, never a 500.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from openrl_inspect.core.errors import BadRequest

_TYPES: dict[str, tuple[type, ...]] = {
    "query": (str,),
    "variables": (dict,),
    "operationName": (str,),
    "extensions": (dict,),
}
_OPERATION = re.compile(r"\s*(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")
_TYPE_NAMES = {"query": "a string", "variables": "an object", "operationName": "a string"}


def nesting(value: Any, limit: int) -> int:
    """How deep ``value`` nests, counted up to ``limit + 1`` (no recursion)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return depth
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def decode(data: str | bytes, max_depth: int) -> Any:
    """JSON from ``data``, or ``BadRequest``: invalid UTF-8, NaN and deep nesting included."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        # orjson's message quotes the input; say what is wrong without echoing it.
        raise BadRequest("Not valid JSON (UTF-8, no NaN, nested at most 1024 deep).") from None
    if nesting(value, max_depth) > max_depth:
        raise BadRequest(f"The JSON body nests deeper than {max_depth} levels.")
    return value


def graphql_request(data: bytes, max_depth: int) -> dict[str, Any]:
    """The body as a GraphQL request object, checked field by field."""
    value = decode(data, max_depth)
    if not isinstance(value, dict):
        raise BadRequest(
            "The body must be a JSON object with a `query` string (batches are not accepted)."
        )
    for name, types in _TYPES.items():
        field = value.get(name)
        if field is not None and not isinstance(field, types):
            kind = _TYPE_NAMES.get(name, "an object")
            raise BadRequest(f"`{name}` must be {kind} or null.")
    return value


def operation_of(request: dict[str, Any]) -> str | None:
    name = request.get("operationName")
    if isinstance(name, str):
        return name[:100]
    match = _OPERATION.match(request.get("query") or "")
    return match.group(1) if match else None

"""The tools' published schemas, made from what they run.

Output: a tool's ``data`` is typed by the GraphQL documents it runs (``agents.shapes``
walks each document's selection against the schema's types), inside the ``ToolAnswer``
envelope; a tool that runs any document (``graphql``) says only that ``data`` is an
object. Which documents a tool runs: the one named like the tool, unless ``DOCUMENTS``
says otherwise, so a new tool with its own document is typed without a word here.

Input: a numeric argument marked ``Bound("name")`` publishes the limit of that name
(``agents.limits``), read from where the API enforces it under the server's settings;
the GraphQL layer refuses past it with BAD_INPUT, which the tool answers as an error.
Composition keywords (``oneOf``, ``anyOf``, ``allOf``) stay off an input schema's root:
several model APIs refuse a tool whose schema has one there, and with it the whole
request (a tool with alternatives is two tools).
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLSchema
from openrl_inspect.agents.limits import Limit
from openrl_inspect.agents.mcp.answer import ToolAnswer
from openrl_inspect.agents.shapes import data_schema
from openrl_inspect.execution import Registry

#: Tools whose documents are not named after them; an empty tuple: any document.
DOCUMENTS: dict[str, tuple[str, ...]] = {
    "list_models": ("models_by_state", "inventory"),
    "model_logs": ("logs",),
    "gpu_activity": ("activity_model",),
    "node_activity": ("activity_node",),
    "step_timeline": ("model_steps",),
    "graphql": (),
}
_DATA = "What the API answered: its GraphQL data (camelCase fields), null when nothing was."
_ANY: dict[str, Any] = {
    "type": ["object", "null"],
    "description": _DATA + " Shaped by the query asked.",
}


@dataclass(frozen=True)
class Bound:
    """Marks a tool's argument with the name of its limit (``agents.limits``)."""

    name: str


def documents_of(tool: str, documents: Registry) -> tuple[str, ...]:
    if tool in DOCUMENTS:
        return DOCUMENTS[tool]
    # Untyped (any object) until DOCUMENTS names them; a test holds every tool but
    # ``graphql`` to a typed ``data``.
    return (tool,) if tool in {d.name for d in documents} else ()


def output_schema(tool: str, types: GraphQLSchema, documents: Registry) -> dict[str, Any]:
    """The ``ToolAnswer`` schema with ``data`` typed by the tool's documents."""
    schema = ToolAnswer.model_json_schema()
    names = documents_of(tool, documents)
    data: dict[str, Any]
    if not names:
        data = dict(_ANY)
    else:
        # Each document's object, or null: one level of alternatives.
        shapes = [data_schema(types, documents[name].text) for name in names]
        objects = [b for s in shapes for b in s["anyOf"] if b.get("type") == "object"]
        data = {"anyOf": [*objects, {"type": "null"}], "description": _DATA}
    schema["properties"]["data"] = data
    return schema


def bounds_of(fn: Callable[..., Any]) -> dict[str, str]:
    """Each argument of ``fn`` marked ``Bound``, with the name of its limit."""
    found: dict[str, str] = {}
    for name, hint in typing.get_type_hints(fn, include_extras=True).items():
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, Bound):
                found[name] = meta.name
    return found


def input_schema(
    parameters: dict[str, Any], bounds: dict[str, str], limits: dict[str, Limit]
) -> dict[str, Any]:
    """``parameters`` (the SDK's schema of the signature) with each bounded argument's
    limit; a nullable argument's bound goes on its number branch."""
    out = copy.deepcopy(parameters)
    for arg, name in bounds.items():
        prop = out["properties"][arg]
        branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") in ("integer", "number")]
        for branch in branches:
            branch.update(limits[name].schema())
    return out

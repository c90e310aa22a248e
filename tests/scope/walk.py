"""A generated walk of the schema: every root field and every path below it to a depth,
as one principal, over a world that holds other owners' work too.

``queries(schema, values)`` writes one query per root field (per argument set), with
every field that needs no argument selected down to ``depth`` object levels; list
fields take their default page. ``values`` supplies the required arguments (ids of
both owners, so lookups out of scope are tried too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
)


def unwrap(t: Any) -> Any:
    while isinstance(t, GraphQLNonNull | GraphQLList):
        t = t.of_type
    return t


def selection(t: GraphQLObjectType, depth: int, skip: frozenset[str]) -> str:
    parts = ["__typename"]
    for name, f in t.fields.items():
        if name in skip or any(isinstance(a.type, GraphQLNonNull) for a in f.args.values()):
            continue
        inner = unwrap(f.type)
        if isinstance(inner, GraphQLObjectType):
            if depth > 1:
                parts.append(f"{name} {{ {selection(inner, depth - 1, skip)} }}")
        else:
            parts.append(name)
    return " ".join(parts)


def literal(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, Enum):
        return value.name
    return str(value)


@dataclass(frozen=True)
class Enum:
    name: str


def _arg_sets(f: GraphQLField, values: Mapping[str, Sequence[Any]]) -> Iterable[str]:
    required = [n for n, a in f.args.items() if isinstance(a.type, GraphQLNonNull)]
    enums = {
        n: [Enum(v) for v in unwrap(a.type).values]
        for n, a in f.args.items()
        if isinstance(unwrap(a.type), GraphQLEnumType) and n not in values
    }
    if any(n not in values and n not in enums for n in required):
        return
    names = [n for n in f.args if n in values or (n in enums and n in required)]
    if not names:
        yield ""
        return
    # One argument set per value of the first varying argument; the others first value.
    lead = names[0]
    options = values.get(lead) or enums[lead]
    for option in options:
        parts = [f"{lead}: {literal(option)}"]
        for other in names[1:]:
            parts.append(f"{other}: {literal((values.get(other) or enums[other])[0])}")
        yield "(" + ", ".join(parts) + ")"


def queries(
    schema: GraphQLSchema,
    values: Mapping[str, Sequence[Any]],
    depth: int,
    skip: frozenset[str] = frozenset(),
) -> list[str]:
    root = schema.query_type
    assert root is not None
    out: list[str] = []
    for name, f in root.fields.items():
        if name in skip:
            continue
        inner = unwrap(f.type)
        body = (
            f" {{ {selection(inner, depth, skip)} }}"
            if isinstance(inner, GraphQLObjectType)
            else ""
        )
        out.extend(f"{{ {name}{args}{body} }}" for args in _arg_sets(f, values))
    return out


def leaks(text: str, markers: Iterable[str]) -> list[str]:
    """The markers found in ``text`` as whole tokens (ids, names, hosts)."""
    found = []
    for marker in markers:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(marker)}(?![A-Za-z0-9])", text):
            found.append(marker)
    return found

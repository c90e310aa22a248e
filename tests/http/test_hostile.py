"""A hostile-input suite generated from the schema, over the demo's backends.

Every argument of every root field gets injection strings, huge and negative numbers,
control characters and over-long values; then deep, aliased, fragment-heavy and
variable-default shapes. The answer is never a 5xx, every error is coded, nothing is
masked as INTERNAL, and a refused document costs no backend call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    get_named_type,
)
from openrl_inspect.cli.demo import DemoSettings, demo_backends
from openrl_inspect.web.app import create_app
from openrl_inspect.web.health import HealthSettings
from support.harness import GRAPHQL
from support.types import api_types

pytestmark = pytest.mark.anyio

SCHEMA = api_types()


def _query_type() -> GraphQLObjectType:
    query = SCHEMA.query_type
    assert query is not None
    return query


QUERY = _query_type()

STRINGS = [
    "' OR 1=1 --",
    '"}) { __typename } #',
    "*",
    "oi:{m:x}:model",
    "\r\nFLUSHALL\r\n",
    'labels.x="a" OR severity>=DEBUG',
    '{__name__=~".+"}',
    "../../../../etc/passwd",
    "\x00\x01\x1b[31m",
    "\ud7ff\ue000\U0010ffff",
    "a" * 100_000,
    "",
]
INTS = [-1, 0, 2**31 - 1, -(2**31)]
FLOATS = [-1.0, 0.0, 1e308, -1e308]


def _leaf(typ: Any, depth: int = 0) -> str:
    """A small selection for ``typ``: its scalar fields, one level of objects."""
    named = get_named_type(typ)
    if not isinstance(named, GraphQLObjectType):
        return ""
    scalars = [
        name
        for name, f in named.fields.items()
        if not isinstance(get_named_type(f.type), GraphQLObjectType) and not _required(f)
    ]
    if scalars:
        return "{ " + " ".join(scalars[:4]) + " }"
    for name, f in named.fields.items():
        if depth < 2 and not _required(f):
            inner = _leaf(f.type, depth + 1)
            if inner:
                return f"{{ {name} {inner} }}"
    return "{ __typename }"


def _required(field: GraphQLField) -> bool:
    return any(isinstance(a.type, GraphQLNonNull) for a in field.args.values())


def _sample(typ: Any) -> Any:
    """A well-formed value for an argument of type ``typ`` (for the ones not under test)."""
    inner = typ.of_type if isinstance(typ, GraphQLNonNull) else typ
    if isinstance(inner, GraphQLList):
        return [_sample(inner.of_type)]
    if isinstance(inner, GraphQLEnumType):
        return next(iter(inner.values))
    if isinstance(inner, GraphQLInputObjectType):
        return {
            k: _sample(f.type)
            for k, f in inner.fields.items()
            if isinstance(f.type, GraphQLNonNull)
        }
    return {"Int": 1, "Float": 1.0, "Boolean": True}.get(inner.name, "x")


def _hostile(typ: Any) -> list[Any]:
    inner = typ.of_type if isinstance(typ, GraphQLNonNull) else typ
    if isinstance(inner, GraphQLList):
        return [[v] for v in _hostile(inner.of_type)] + [[_sample(inner.of_type)] * 5000]
    named = get_named_type(inner)
    if isinstance(named, GraphQLScalarType) and named.name == "Int":
        return INTS
    if isinstance(named, GraphQLScalarType) and named.name == "Float":
        return FLOATS
    if isinstance(named, GraphQLScalarType) and named.name in ("String", "ID", "JSON", "DateTime"):
        return STRINGS
    return []


def _type_ref(typ: Any) -> str:
    if isinstance(typ, GraphQLNonNull):
        return f"{_type_ref(typ.of_type)}!"
    if isinstance(typ, GraphQLList):
        return f"[{_type_ref(typ.of_type)}]"
    return str(typ.name)


def cases() -> list[tuple[str, str, dict[str, Any]]]:
    """(label, query, variables) for every value of every argument of every root field."""
    out = []
    for name, field in QUERY.fields.items():
        selection = _leaf(field.type)
        for target, arg in field.args.items():
            for value in _hostile(arg.type):
                decls, uses, variables = [], [], {}
                for other, other_arg in field.args.items():
                    if other == target:
                        variables[other] = value
                    elif isinstance(other_arg.type, GraphQLNonNull):
                        variables[other] = _sample(other_arg.type)
                    else:
                        continue
                    decls.append(f"${other}: {_type_ref(other_arg.type)}")
                    uses.append(f"{other}: ${other}")
                query = f"query({', '.join(decls)}) {{ {name}({', '.join(uses)}) {selection} }}"
                out.append((f"{name}.{target}={str(value)[:20]!r}", query, variables))
    return out


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def client() -> AsyncIterator[httpx.AsyncClient]:
    demo = DemoSettings(tick_s=3600, sessions=2, models_per_session=2, steps_per_model=3)
    app = create_app(lambda: demo_backends(demo), health=HealthSettings(interval_s=0))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://i", timeout=60) as c,
    ):
        yield c


def _problems(label: str, resp: httpx.Response) -> list[str]:
    if resp.status_code >= 500:
        return [f"{label}: HTTP {resp.status_code}"]
    body = resp.json()
    problems = []
    for error in body.get("errors") or ():
        code = (error.get("extensions") or {}).get("code")
        if code is None or code == "INTERNAL":
            problems.append(f"{label}: {code} {error['message'][:120]}")
    return problems


async def test_every_argument_of_every_root_field_survives_hostile_values(
    client: httpx.AsyncClient,
) -> None:
    generated = cases()
    assert len(generated) > 200, "the generator found the schema's arguments"
    problems: list[str] = []
    for label, query, variables in generated:
        resp = await client.post(GRAPHQL, json={"query": query, "variables": variables})
        problems += _problems(label, resp)
        # the same value written into the document, not passed as a variable
        if isinstance(variables.get(label.split("=")[0].split(".")[1]), str):
            literal = query
            for key, value in variables.items():
                literal = literal.replace(f"${key}", _literal(value))
            literal = (
                literal.split(") {", 1)[1].rsplit("}", 1)[0]
                if literal.startswith("query(")
                else literal
            )
            resp = await client.post(GRAPHQL, json={"query": "{" + literal + "}"})
            problems += _problems(label + " (literal)", resp)
    assert not problems, "\n".join(problems[:40])


def _literal(value: Any) -> str:
    import json

    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.isupper() and value.isidentifier():
        return value  # an enum value
    return json.dumps(value)


SHAPES = [
    # deep
    "{ sessions { nodes { models { nodes { session { models { nodes { session { models { nodes { session { models { nodes { session { id } } } } } } } } } } } } } } }",
    # many aliases
    "{ " + " ".join(f"a{i}: sessions(first: 1) {{ totalCount }}" for i in range(40)) + " }",
    # aliases hidden in a fragment spread many times
    "{ " + " ".join(f"s{i}: sessions(first: 1) {{ ...F }}" for i in range(8)) + " }"
    " fragment F on SessionConnection { " + " ".join(f"t{i}: totalCount" for i in range(8)) + " }",
    # a defaulted variable that multiplies
    "query($n: Int = 100) { sessions(first: $n) { nodes { models(first: $n) { nodes { steps(first: $n) { nodes { ops(first: $n) { nodes { id } } } } } } } } }",
    # a fragment cycle
    "{ sessions { ...A } } fragment A on SessionConnection { nodes { models { ...B } } } fragment B on ModelConnection { nodes { session { models { ...B } } } }",
    # a huge document
    "{ " + "sessions { totalCount } " * 3000 + "}",
    # a long argument list and directives
    "{ sessions(first: 1, first: 2) { totalCount } }",
    "{ sessions @skip(if: true) @include(if: false) @skip(if: false) { totalCount } }",
    # introspection deep
    "{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } }",
    # syntax errors
    "{ sessions { totalCount }",
    "{ sessions(first: $missing) { totalCount } }",
    "query($x: Nope) { sessions { totalCount } }",
    "subscription { sessions { totalCount } }",
    "mutation { x }",
    "",
]


@pytest.mark.parametrize("query", SHAPES)
async def test_hostile_shapes_are_refused_or_answered_with_codes(
    client: httpx.AsyncClient, query: str
) -> None:
    resp = await client.post(GRAPHQL, json={"query": query})
    assert not _problems(query[:60], resp), resp.text[:400]


# Computed-field fan-out (issue 25): each looked cheap to a cost that counted pages only.
FAN_OUTS = [
    "{ sessions(first: 8) { nodes { models(first: 100) { nodes { id session { summary(worst: 1) { models } } } } } } }",
    "{ " + " ".join(f"a{i}: sessions(first: 100) {{ nodes {{ summary(worst: 20) {{ models }} }} }}" for i in range(30)) + " }",
    "{ " + " ".join(f"t{i}: __typename" for i in range(1300)) + " }",
]  # fmt: skip


@pytest.mark.parametrize("query", FAN_OUTS)
async def test_computed_field_fan_out_is_refused_by_its_cost(
    client: httpx.AsyncClient, query: str
) -> None:
    resp = await client.post(GRAPHQL, json={"query": query})
    assert resp.json()["errors"][0]["extensions"]["code"] == "QUERY_TOO_COSTLY", resp.text[:300]

"""The cost check counts work, not only pages: for a document generated for every field
of the schema, reached through a fan-out of lists, the work measured while it runs
(records read from Redis, models judged) stays within a fixed factor of the cost
``execution.cost`` computed for it before it ran. A field that computes over more than
its own record and forgets its weight in ``execution.cost.WEIGHTS`` fails here.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest
from graphql import GraphQLNonNull, GraphQLObjectType, GraphQLSchema, parse
from openrl_inspect.core.principal import Principal, Role
from openrl_inspect.execution.admission import cost_limits
from openrl_inspect.execution.cost import query_cost
from openrl_inspect.execution.schema import build_schema
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.resolvers.summary import model as summary_model
from scope.test_scope_walk import OPEN, World, world
from scope.walk import unwrap
from support.counting import CountingStore
from support.types import api_types

pytestmark = pytest.mark.anyio

__all__ = ["world"]  # the module's world, shared with the leak walk

# Measured work (records read plus models judged) per node of computed cost, at most,
# and what a document that costs nothing may still read (its root record and scope).
FACTOR = 4
BASE = 25
SKIP = frozenset({"prometheusQuery"})  # off unless an operator enables it


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _free(field: Any) -> bool:
    # Built from the SDL, an argument's default is on its AST node only.
    return not any(
        isinstance(a.type, GraphQLNonNull)
        and (a.ast_node is None or a.ast_node.default_value is None)
        for a in field.args.values()
    )


def _paths(schema: GraphQLSchema) -> dict[str, tuple[str, str]]:
    """Each object type's shortest way in from the root, through fields that need no
    argument: (opening of the document, its closing)."""
    root = schema.query_type
    assert root is not None
    found: dict[str, tuple[str, str]] = {root.name: ("{", "}")}
    frontier = [root]
    while frontier:
        later: list[GraphQLObjectType] = []
        for parent in frontier:
            head, tail = found[parent.name]
            for name, field in parent.fields.items():
                inner = unwrap(field.type)
                if name in SKIP or not _free(field) or not isinstance(inner, GraphQLObjectType):
                    continue
                if inner.name not in found:
                    found[inner.name] = (f"{head} {name} {{", f"}} {tail}")
                    later.append(inner)
        frontier = later
    return found


def documents(schema: GraphQLSchema) -> Iterator[str]:
    """Below each type's way in: its plain fields together in one document, and each
    field of an object type in one of its own (a field that needs an argument is left
    out: its required value is the leak walk's concern)."""
    for type_name, (head, tail) in _paths(schema).items():
        parent = schema.get_type(type_name)
        assert isinstance(parent, GraphQLObjectType)
        plain = []
        for name, field in parent.fields.items():
            if name in SKIP or not _free(field):
                continue
            if isinstance(unwrap(field.type), GraphQLObjectType):
                yield f"{head} {name} {{ __typename }} {tail}"
            else:
                plain.append(name)
        if plain:
            yield f"{head} {' '.join(plain)} {tail}"


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many models the diagnosis judged (one count a judgement)."""
    count = [0]
    real = summary_model.diagnose  # type: ignore[attr-defined]

    def counting(evidence: Any) -> Any:
        count[0] += 1
        return real(evidence)

    monkeypatch.setattr(summary_model, "diagnose", counting)
    return count


@functools.cache
def executable() -> Any:
    return build_schema(OPEN.switches)


async def measured(world: World, query: str, judged: list[int]) -> tuple[int, list[str]]:
    store = CountingStore(world.backends.state)  # type: ignore[arg-type]
    backends = Backends(**{**vars(world.backends), "state": store})
    ctx = Context.build(backends, Principal("ops", Role.OPERATOR), OPEN)
    before = judged[0]
    result = await executable().execute(query, context_value=ctx)
    codes = [str((e.extensions or {}).get("code")) for e in result.errors or ()]
    return store.records + judged[0] - before, codes


def cost(query: str) -> int:
    limits = cost_limits(OPEN.bounds)
    return query_cost(api_types(), parse(query), None, None, limits).nodes


async def test_measured_work_stays_within_a_factor_of_the_computed_cost(
    world: World, judged: list[int]
) -> None:
    generated = list(documents(api_types()))
    assert len(generated) > 100
    over = []
    for query in generated:
        work, codes = await measured(world, query, judged)
        assert "INTERNAL" not in codes, (query, codes)
        if work > FACTOR * cost(query) + BASE:
            over.append((query, work, cost(query)))
    assert not over, over[:5]
    # Not vacuous: the generated documents reach the rollups, which judge models.
    assert judged[0] > 0


async def test_the_fan_out_of_the_issue_is_refused_by_its_cost(world: World) -> None:
    fan_out = (
        "{ sessions(first: 8) { nodes { models(first: 100) { nodes { id "
        "session { summary(worst: 1) { models } } } } } } }"
    )
    limits = cost_limits(OPEN.bounds.__class__())
    assert query_cost(api_types(), parse(fan_out), None, None, limits).exceeded == "nodes"
    typenames = "{ " + " ".join(f"a{i}: __typename" for i in range(1300)) + " }"
    assert query_cost(api_types(), parse(typenames), None, None, limits).exceeded == "aliases"

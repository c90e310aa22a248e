"""The fast execution path against the stock one: byte-identical answers.

Documents are generated from the schema itself (random selections of fields at random
depth, aliases, named and inline fragments, ``@skip``/``@include`` on variables, page
arguments and ids from the world), run over the demo's simulated world in fakeredis with
its Kubernetes, Prometheus and logs twins, with some records spoiled (BAD_RECORD items)
and, per example, a backend failing or missing. Both paths must give the same JSON:
data byte for byte, and the same errors (paths, messages, locations, extensions), in
any order: the stock path alone orders concurrently failing fields differently from run
to run. Also: the nested query costs
the same Redis round trips on both paths, and what the fast path leaves to the stock
one is counted.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import fakeredis
import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLType,
    Undefined,
    get_named_type,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.context import Backends, Context, Limits
from openrl_inspect.demo import DemoTwins
from openrl_inspect.errors import BackendUnavailable
from openrl_inspect.schema.root import InspectorSchema, build_schema
from openrl_inspect.simulator import SimConfig
from openrl_inspect.state import keys
from support.harness import populate

# A small node budget keeps a generated document's run short (larger ones are refused,
# alike on both paths).
LIMITS = Limits(single_flight=False, max_nodes=1500)
STOCK = build_schema(replace(LIMITS, execution="stock"))
FAST = build_schema(replace(LIMITS, execution="fast"))
TYPES: GraphQLSchema = STOCK._schema
MAX_DEPTH = 4
FAULTS = ("none", "none", "kubernetes", "redis", "metrics")


@dataclass
class World:
    loop: asyncio.AbstractEventLoop
    server: fakeredis.FakeServer
    backends: Backends
    pool: list[str]  # ids and names of the world, for id and string arguments
    now: float


async def _build() -> World:
    server = fakeredis.FakeServer()
    writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    now = time.time()
    sim = await populate(writer, SimConfig(seed=5, sessions=2, models_per_session=3), now)
    # Spoiled records, in every other model's latest step: metrics that are no JSON, an
    # op whose start is no time.
    ops: list[str] = []
    for mid in list(sim.models)[::2]:
        latest = await writer.zrange(keys.steps(mid), -1, -1)
        if not latest:
            continue
        step = int(str(latest[0]))
        await writer.hset(keys.step(mid, step), "metrics", "{not json")
        for oid in await writer.zrange(keys.step_ops(mid, step), 0, 0):
            await writer.hset(keys.op(mid, str(oid)), "started_at", "soon")
            ops.append(str(oid))
    store = RedisStateStore.in_memory(server)
    backends = Backends(state=store)
    twins = await DemoTwins.build(sim, store, now)
    twins.install(backends)
    pool = [*sim.sessions, *sim.models, "gke-openrl-h100-pool-000", "nobody", "bad id!"]
    pool += ops[:2]
    return World(asyncio.get_event_loop(), server, backends, pool, now + 5.0)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop.run_until_complete(_build())
    finally:
        # The recorder's flusher task of ``populate``, still waiting for records.
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
        asyncio.set_event_loop(None)


# -- documents ---------------------------------------------------------------------------


class Doc:
    def __init__(self) -> None:
        self.fragments: list[str] = []
        self.variables: set[str] = set()
        self.aliases = 0


def _literal(draw: Any, name: str, type_: GraphQLType, pool: list[str]) -> str | None:
    inner = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    if isinstance(inner, GraphQLList):
        item = _literal(draw, name, inner.of_type, pool)
        return None if item is None else f"[{item}]"
    if isinstance(inner, GraphQLEnumType):
        return str(draw(st.sampled_from(sorted(inner.values))))
    if isinstance(inner, GraphQLInputObjectType) or not isinstance(inner, GraphQLScalarType):
        return None
    kind = inner.name
    if kind == "Int":
        return str(draw(st.sampled_from([0, 1, 2, 3, 20, -1, 101])))
    if kind == "Float":
        return str(draw(st.sampled_from([60.0, 900.0, 1800.0, -1.0])))
    if kind == "Boolean":
        return str(draw(st.sampled_from(["true", "false"])))
    if kind in ("ID", "String"):
        if name == "after":
            return str(draw(st.sampled_from(['"bogus"', '"WyJzdGVwcyIsMS4wLCIxIl0"'])))
        return json.dumps(draw(st.sampled_from(pool)))
    return None  # custom scalars (times, JSON) are left out


def _arguments(draw: Any, field: GraphQLField, pool: list[str]) -> str | None:
    parts = []
    for name, arg in field.args.items():
        required = isinstance(arg.type, GraphQLNonNull) and arg.default_value is Undefined
        if not required and not draw(st.booleans()):
            continue
        value = _literal(draw, name, arg.type, pool)
        if value is None:
            if required:
                return None  # a field whose arguments cannot be made is left out
            continue
        parts.append(f"{name}: {value}")
    return f"({', '.join(parts)})" if parts else ""


# The roots into the state graph, one of which every document asks for: the rest of the
# schema is reached through them too, and at random from the root.
RICH = ("sessions", "models", "model", "session", "attention", "nodes", "capacity", "workers")


def _selection(draw: Any, doc: Doc, type_: GraphQLObjectType, depth: int, pool: list[str]) -> str:
    names = sorted(type_.fields)
    wide = depth <= 2
    chosen = draw(
        st.lists(st.sampled_from(names), min_size=2 if wide else 1, max_size=5, unique=True)
    )
    if depth == 1:
        rich = draw(st.sampled_from(RICH))
        chosen = [rich, *(n for n in chosen if n != rich)]
    parts = []
    for name in chosen:
        field = type_.fields[name]
        args = _arguments(draw, field, pool)
        if args is None:
            continue
        named = get_named_type(field.type)
        sub = ""
        if isinstance(named, GraphQLObjectType):
            if depth >= MAX_DEPTH:
                continue
            sub = " { " + _selection(draw, doc, named, depth + 1, pool) + " }"
        alias = ""
        if draw(st.integers(0, 4)) == 0:
            doc.aliases += 1
            alias = f"a{doc.aliases}: "
        directive = draw(st.sampled_from(["", "", "", "skip:yes", "skip:no", "include:yes"]))
        if directive:
            which, var = directive.split(":")
            doc.variables.add(var)
            directive = f" @{which}(if: ${var})"
        part = f"{alias}{name}{args}{directive}{sub}"
        wrap = draw(st.sampled_from(["", "", "inline", "fragment"]))
        if wrap == "inline":
            part = f"... on {type_.name} {{ {part} }}"
        elif wrap == "fragment":
            fragment = f"F{len(doc.fragments)}"
            doc.fragments.append(f"fragment {fragment} on {type_.name} {{ {part} }}")
            part = f"...{fragment}"
        parts.append(part)
    if draw(st.integers(0, 5)) == 0:
        parts.append("__typename")
    return " ".join(parts) or "__typename"


@st.composite
def documents(draw: Any, pool: list[str]) -> str:
    doc = Doc()
    root = TYPES.query_type
    assert root is not None
    body = _selection(draw, doc, root, 1, pool)
    decls = ", ".join(f"${v}: Boolean!" for v in sorted(doc.variables))
    head = f"query Q({decls})" if decls else "query Q"
    return "\n".join([f"{head} {{ {body} }}", *doc.fragments])


# -- running -----------------------------------------------------------------------------


async def _answer(schema: InspectorSchema, world: World, text: str) -> str:
    context = Context.build(world.backends, LIMITS)
    context.now = world.now  # one "now" for both paths: ages must agree
    result = await schema.execute(
        text, variable_values={"yes": True, "no": False}, context_value=context
    )
    # Errors of fields that fail concurrently (two root fields while Redis is down)
    # arrive in the order their tasks run, which differs run to run on the stock path
    # alone: they are compared as a sorted list, each byte for byte.
    errors = sorted(json.dumps(e.formatted) for e in result.errors or ())
    return json.dumps({"data": result.data, "errors": [json.loads(e) for e in errors]})


def _both(world: World, text: str, fault: str) -> tuple[str, str]:
    backends = world.backends
    kube, gpu, prom = backends.kubernetes, backends.gpu_metrics, backends.prometheus
    try:
        if fault == "kubernetes":
            kube.failure = BackendUnavailable("kubernetes", "the API server cannot be reached")  # type: ignore[union-attr]
        elif fault == "redis":
            world.server.connected = False
        elif fault == "metrics":
            backends.gpu_metrics = backends.prometheus = None
        run = world.loop.run_until_complete
        return run(_answer(STOCK, world, text)), run(_answer(FAST, world, text))
    finally:
        kube.failure = None  # type: ignore[union-attr]
        world.server.connected = True
        backends.gpu_metrics, backends.prometheus = gpu, prom


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    # A failure is reported as drawn: shrinking reruns documents for minutes.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_fast_and_stock_answer_byte_for_byte_alike(world: World, data: st.DataObject) -> None:
    text = data.draw(documents(world.pool), label="document")
    fault = data.draw(st.sampled_from(FAULTS), label="fault")
    stock, fast = _both(world, text, fault)
    assert fast == stock


NESTED = """query($yes: Boolean!) {
  sessions(first: 5) { totalCount pageInfo { endCursor hasNextPage } nodes { id owner state
    models(first: 10) { edges { cursor node { id state stepCount lora settings
      steps(first: 3) { nodes { number startedAt metrics opCount
        ops(first: 4) { nodes { id kind status startedAt metrics health __typename } } } } } } } } }
  models(state: ACTIVE, first: 3) { nodes { ...M } }
}
fragment M on Model { id ... on Model { failureReason @include(if: $yes) kept: keptSteps }
  workers { nodes { id alive heartbeatAgeSeconds } } }
"""


@pytest.mark.parametrize("fault", sorted(set(FAULTS)))
def test_the_nested_query_with_bad_records_and_faults(world: World, fault: str) -> None:
    stock, fast = _both(world, NESTED, fault)
    assert fast == stock
    codes = {(e.get("extensions") or {}).get("code") for e in json.loads(stock)["errors"]}
    expected = {
        "none": {"BAD_RECORD"},
        "kubernetes": {"BAD_RECORD"},
        "metrics": {"BAD_RECORD"},
        "redis": {"BACKEND_UNAVAILABLE"},
    }[fault]
    assert expected <= codes


ROUND_TRIPS = """query($s: Int!, $m: Int!) {
  sessions(first: $s) { totalCount nodes { id owner createdAt
    models(first: $m) { totalCount nodes { id state baseModel stepCount
      steps(first: 5) { nodes { number startedAt finishedAt metrics
        ops(first: 4) { nodes { id kind status startedAt queueWaitSeconds workerId } } } } } } } }
}"""


STOCK_FULL = build_schema(Limits(execution="stock", single_flight=False))
FAST_FULL = build_schema(Limits(execution="fast", single_flight=False))


async def _trips(sessions: int, models: int) -> dict[str, int]:
    server = fakeredis.FakeServer()
    writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    config = SimConfig(
        seed=3,
        sessions=sessions,
        models_per_session=models,
        steps_per_model=5,
        scenarios=False,
        nodes_per_pool=(("h100", sessions * models),),
    )
    await populate(writer, config)
    # A clock that stands still: the schema-version check runs once, in the warm-up.
    store = RedisStateStore(writer, clock=lambda: 0.0)
    backends = Backends(state=store)
    await store.check_schema()
    trips = {}
    for name, schema in (("stock", STOCK_FULL), ("fast", FAST_FULL)):
        before = store.trips.count
        result = await schema.execute(
            ROUND_TRIPS,
            variable_values={"s": sessions, "m": models},
            context_value=Context.build(backends, Limits()),
        )
        assert result.errors is None
        trips[name] = store.trips.count - before
    return trips


def test_round_trips_of_the_nested_query_are_fixed_on_both_paths() -> None:
    small = asyncio.run(_trips(2, 2))
    large = asyncio.run(_trips(5, 12))
    # One batch per level however many items, on either path.
    assert small == large
    assert small["stock"] == small["fast"]


def test_what_the_fast_path_leaves_to_the_stock_one_is_counted(world: World) -> None:
    before = FAST.execution_stats
    assert before is not None and STOCK.execution_stats is None
    fast, calls, fallbacks = before.fast_fields, before.direct_calls, dict(before.fallbacks)
    _both(world, NESTED, "none")
    stats = FAST.execution_stats
    assert stats is not None
    assert stats.fast_fields > fast
    # Resolvers taking self, info and scalar arguments are called directly (Step.ops,
    # Op.health); one with an enum argument (Query.sessions(state:)) is Strawberry's.
    assert stats.direct_calls > calls
    assert stats.fallbacks["Query.sessions"] > fallbacks.get("Query.sessions", 0)
    for plain in ("Op.id", "Step.ops", "Op.health", "StepConnection.nodes"):
        assert plain not in stats.fallbacks


def test_the_execution_and_gc_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from openrl_inspect import cli, jsonlog, server
    from openrl_inspect.app import create_app

    calls: list[Any] = []
    built: list[Limits] = []

    def app(backends: Any, limits: Limits, *rest: Any, **named: Any) -> Any:
        built.append(limits)
        return create_app(backends, limits, *rest, **named)

    monkeypatch.setattr(server, "serve", lambda *a: calls.append(a[-1]))
    monkeypatch.setattr(jsonlog, "configure", lambda level: None)
    monkeypatch.setattr("openrl_inspect.app.create_app", app)
    port = ["--port", "1"]  # never bound: serve is replaced
    quiet = {"OPENRL_INSPECT_OPEN_BROWSER": "false"}
    assert cli.main(["demo", *port], quiet) == 0
    assert built[-1].execution == "fast" and calls[-1] == server.GcSettings()
    env = {**quiet, "OPENRL_INSPECT_EXECUTION": "stock", "OPENRL_INSPECT_GC_FREEZE": "false"}
    env["OPENRL_INSPECT_GC_THRESHOLD"] = "0"
    assert cli.main(["demo", *port], env) == 0
    assert built[-1].execution == "stock"
    assert calls[-1] == server.GcSettings(freeze=False, threshold=0)
    assert cli.main(["demo", *port], {**quiet, "OPENRL_INSPECT_EXECUTION": "quick"}) == 2
    with pytest.raises(ValueError, match="stock' or 'fast"):
        build_schema(Limits(execution="quick"))


def test_tune_gc_freezes_and_sets_the_first_threshold() -> None:
    import gc

    from openrl_inspect.server import GcSettings, tune_gc

    before = gc.get_threshold()
    try:
        tune_gc(GcSettings(freeze=True, threshold=12_345))
        assert gc.get_threshold() == (12_345, *before[1:]) and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_schema_middleware_sends_a_whole_operation_to_the_stock_path() -> None:
    from openrl_inspect.schema.fast.executor import MIDDLEWARE
    from strawberry.extensions import SchemaExtension

    class Upper(SchemaExtension):
        def resolve(self, _next: Any, root: Any, info: Any, *args: Any, **kwargs: Any) -> Any:
            value = _next(root, info, *args, **kwargs)
            return value.upper() if isinstance(value, str) else value

    schema = build_schema(Limits(single_flight=False))
    schema.extensions = (*schema.extensions, Upper)
    stats = schema.execution_stats
    assert stats is not None
    result = asyncio.run(schema.execute("{ __typename }"))
    assert result.data == {"__typename": "QUERY"} and stats.fallbacks[MIDDLEWARE] == 1
    assert stats.fast_fields == 0

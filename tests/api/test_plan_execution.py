"""The plan executor against the stock one: byte-identical answers.

Documents are generated from the schema itself (random selections of fields at random
depth, aliases, named and inline fragments, ``@skip``/``@include`` on variables, page
arguments and ids from the world), run over the demo's simulated world in fakeredis with
its Kubernetes, Prometheus and logs twins, with some records spoiled (BAD_RECORD items)
and, per example, a backend failing or missing. Both paths must give the same JSON:
data byte for byte, and the same errors (paths, messages, locations, extensions), in
any order: the stock path alone orders concurrently failing fields differently from run
to run. Also: the nested query costs
the same Redis round trips on both paths, and what the plan leaves to resolvers or to
the stock path is counted. The same property over a real redis-server runs in a process
of its own (tests/api/test_plan_execution_redis.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
from hypothesis import given, strategies
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.core.settings import Settings, Switches
from openrl_inspect.execution.schema import build_schema
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.simulator import SimConfig
from support.equivalence import (
    FAULTS,
    NESTED,
    PLAN,
    STOCK,
    World,
    both,
    build_world,
    check_generated,
    check_nested,
    check_siblings,
    generated,
    spoil,
)
from support.harness import populate


async def _build() -> World:
    server = fakeredis.FakeServer()
    writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    now = time.time()
    sim = await populate(writer, SimConfig(seed=5, sessions=2, models_per_session=3), now)
    ops = await spoil(writer, sim)

    def redis_down(_backends: Backends, down: bool) -> None:
        server.connected = not down

    return await build_world(sim, RedisStateStore.in_memory(server), now, ops, redis_down)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop.run_until_complete(_build())
    finally:
        # Whatever task a test left on this loop.
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
        asyncio.set_event_loop(None)


@generated(80)
@given(data=strategies.data())
def test_plan_and_stock_answer_byte_for_byte_alike(
    world: World, data: strategies.DataObject
) -> None:
    check_generated(world, data)


@pytest.mark.parametrize("fault", sorted(set(FAULTS)))
def test_the_nested_query_with_bad_records_and_faults(world: World, fault: str) -> None:
    check_nested(world, fault)


ROUND_TRIPS = """query($s: Int!, $m: Int!) {
  sessions(first: $s) { totalCount nodes { id owner createdAt
    models(first: $m) { totalCount nodes { id state baseModel stepCount
      steps(first: 5) { nodes { number startedAt finishedAt metrics
        ops(first: 4) { nodes { id kind status startedAt queueWaitSeconds workerId } } } } } } } }
}"""


STOCK_FULL = build_schema(Switches(execution="stock", single_flight=False))
PLAN_FULL = build_schema(Switches(execution="plan", single_flight=False))


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
    for name, schema in (("stock", STOCK_FULL), ("plan", PLAN_FULL)):
        before = store.trips.count
        result = await schema.execute(
            ROUND_TRIPS,
            variable_values={"s": sessions, "m": models},
            context_value=Context.build(backends),
        )
        assert result.errors is None
        trips[name] = store.trips.count - before
    return trips


def test_round_trips_of_the_nested_query_are_fixed_on_both_paths() -> None:
    small = asyncio.run(_trips(2, 2))
    large = asyncio.run(_trips(5, 12))
    # One batch per level however many items, on either path.
    assert small == large
    assert small["stock"] == small["plan"]


def test_what_the_plan_leaves_to_resolvers_is_counted(world: World) -> None:
    before = PLAN.execution_stats
    assert before is not None and STOCK.execution_stats is None
    planned, read, called = before.planned, before.read, before.called
    resolved = dict(before.resolved)
    both(world, NESTED, "none")
    stats = PLAN.execution_stats
    assert stats is not None
    assert stats.planned == planned + 1 and stats.read > read
    # Resolvers taking self, info and scalar arguments are called directly (Step.ops,
    # Op.health); one with an enum argument (Query.models(state:)) runs Strawberry's.
    assert stats.called > called
    assert stats.resolved["Query.models"] > resolved.get("Query.models", 0)
    for plain in ("Op.id", "Step.ops", "Op.health", "StepConnection.nodes"):
        assert plain not in stats.resolved
    assert not stats.stock


def test_the_execution_and_gc_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from openrl_inspect.cli import main as cli
    from openrl_inspect.telemetry import jsonlog
    from openrl_inspect.web import collector, server
    from openrl_inspect.web.app import create_app

    calls: list[Any] = []
    built: list[Settings] = []

    def app(backends: Any, settings: Settings, *rest: Any, **named: Any) -> Any:
        built.append(settings)
        return create_app(backends, settings, *rest, **named)

    monkeypatch.setattr(server, "serve", lambda *a: calls.append(a[-1]))
    monkeypatch.setattr(jsonlog, "configure", lambda level: None)
    monkeypatch.setattr("openrl_inspect.cli.demo.create_app", app)
    port = ["--port", "1"]  # never bound: serve is replaced
    quiet = {"OPENRL_INSPECT_OPEN_BROWSER": "false"}
    assert cli.main(["demo", *port], quiet) == 0
    assert built[-1].switches.execution == "plan" and calls[-1] == collector.GcSettings()
    env = {**quiet, "OPENRL_INSPECT_EXECUTION": "stock", "OPENRL_INSPECT_GC_FREEZE": "false"}
    env["OPENRL_INSPECT_GC_THRESHOLD"] = "0"
    assert cli.main(["demo", *port], env) == 0
    assert built[-1].switches.execution == "stock"
    assert calls[-1] == collector.GcSettings(freeze=False, threshold=0)
    assert cli.main(["demo", *port], {**quiet, "OPENRL_INSPECT_EXECUTION": "quick"}) == 2
    with pytest.raises(SettingsError, match="'plan' or 'stock'"):
        Switches(execution="quick")


def test_tune_gc_freezes_and_sets_the_first_threshold() -> None:
    import gc

    from openrl_inspect.web.collector import GcSettings, tune_gc

    before = gc.get_threshold()
    try:
        tune_gc(GcSettings(freeze=True, threshold=12_345))
        assert gc.get_threshold() == (12_345, *before[1:]) and gc.get_freeze_count() > 0
        # Collections between requests only (web.collector.IdleCollector).
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*before)


def test_schema_middleware_sends_a_whole_operation_to_the_stock_path() -> None:
    from strawberry.extensions import SchemaExtension

    class Upper(SchemaExtension):
        def resolve(self, _next: Any, root: Any, info: Any, *args: Any, **kwargs: Any) -> Any:
            value = _next(root, info, *args, **kwargs)
            return value.upper() if isinstance(value, str) else value

    schema = build_schema(Switches(single_flight=False))
    schema.extensions = (*schema.extensions, Upper)
    stats = schema.execution_stats
    assert stats is not None
    result = asyncio.run(schema.execute("{ __typename }"))
    assert result.data == {"__typename": "QUERY"} and stats.stock["field middleware"] == 1
    assert stats.planned == 0


def test_siblings_cancelled_by_a_failed_field_leave_shared_keys_alone(world: World) -> None:
    check_siblings(world)


def test_a_plan_is_compiled_once_per_document_and_directive_values(world: World) -> None:
    from openrl_inspect.core.principal import ANONYMOUS_OPERATOR
    from openrl_inspect.execution.run import Request, Runner

    schema = build_schema(Switches(single_flight=False))
    stats = schema.execution_stats
    assert stats is not None
    # The Runner parses a text once: one plan per operation and directive values.
    runner = Runner(schema, Settings(switches=Switches(single_flight=False)))
    text = "query($yes: Boolean!) { sessions(first: 2) { totalCount @include(if: $yes) } }"
    answers = [
        world.loop.run_until_complete(
            runner.run(Request(text, {"yes": yes}), world.backends, ANONYMOUS_OPERATOR)
        )
        for yes in (True, True, False, False, True)
    ]
    assert stats.compiled == 2 and stats.planned == 5
    assert all(not a.errors for a in answers)
    assert "totalCount" in answers[0].data["sessions"]  # type: ignore[index]
    assert "totalCount" not in answers[2].data["sessions"]  # type: ignore[index]

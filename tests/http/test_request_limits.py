"""Refusing costly queries cheaply: cost on what will run, deadline, busy, suggestions."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.settings import Bounds, Settings, Switches
from openrl_inspect.simulator import SimConfig
from support.counting import CountingStore
from support.harness import GRAPHQL, app_client, gql, populate

pytestmark = pytest.mark.anyio

CHAIN = "models(state: ACTIVE, first: $n) { nodes { steps(first: $n) { nodes { ops(first: $n) { nodes { id } } } } } }"
BYPASS = "query($n: Int = 100) {" + " ".join(f"a{i}: {CHAIN}" for i in range(29)) + "}"


@pytest.fixture
async def store() -> CountingStore:
    server = fakeredis.FakeServer()
    await populate(
        fakeredis.FakeAsyncRedis(server=server, decode_responses=True), SimConfig(seed=3)
    )
    return CountingStore(RedisStateStore.in_memory(server))


def _code(body: dict[str, Any]) -> str:
    return str(body["errors"][0]["extensions"]["code"])


async def test_the_documents_default_counts_and_the_bypass_is_refused_before_any_call(
    store: CountingStore,
) -> None:
    # How fast the refusal is, is measured in bench/bench_refusal.py (about 20 ms here;
    # executing the query took 78 s before the cost counted the document's defaults).
    async with app_client(store) as client:
        await gql(client, "{ sessions(first: 1) { totalCount } }")  # warm up
        before = store.calls
        body = await gql(client, BYPASS)
    assert _code(body) == "QUERY_TOO_COSTLY" and "data" not in body
    assert store.calls == before, "a refused query made a backend call"


@pytest.mark.parametrize(
    "query",
    [
        # the default written in the document, with the variable left out
        "query($n: Int = 100) { sessions(first: $n) { nodes { models(first: $n) { nodes { steps(first: $n) { nodes { number } } } } } } }",
        # aliases inside a fragment count at every spread
        "query { a: sessions(first: 100) { nodes { ...M } } b: sessions(first: 100) { nodes { ...M } } }"
        " fragment M on Session { x: models(first: 100) { nodes { steps(first: 100) { nodes { number } } } } }",
        # a fragment with aliases spread under many aliased fields
        "{ " + " ".join(f"s{i}: sessions {{ ...F }}" for i in range(10)) + " }"
        " fragment F on SessionConnection { "
        + " ".join(f"n{i}: nodes {{ id }}" for i in range(5))
        + " }",
        # depth through a fragment cycle-free chain
        "{ sessions { nodes { models { nodes { session { models { nodes { session { models { nodes { session { models { nodes { id } } } } } } } } } } } } } }",
    ],
)
async def test_costly_shapes_are_refused_without_a_backend_call(
    store: CountingStore, query: str
) -> None:
    async with app_client(store) as client:
        body = await gql(client, query)
    assert _code(body) == "QUERY_TOO_COSTLY", body
    assert store.calls == 0


async def test_skipped_fields_cost_nothing_and_defaults_apply_to_small_pages(
    store: CountingStore,
) -> None:
    query = (
        "query($n: Int = 2, $big: Boolean = false) { sessions(first: $n) { nodes { id } }"
        " huge: sessions(first: 100) @include(if: $big) { nodes { models(first: 100) { nodes {"
        " steps(first: 100) { nodes { number } } } } } } }"
    )
    async with app_client(store) as client:
        body = await gql(client, query)
        refused = await gql(client, query, big=True)
    assert "errors" not in body and len(body["data"]["sessions"]["nodes"]) == 2
    assert _code(refused) == "QUERY_TOO_COSTLY"


async def test_a_fragment_bomb_is_refused_in_linear_time(store: CountingStore) -> None:
    levels = 40  # strawberry's depth and alias limiters took 13 s at 20
    frags = [
        f"fragment F{i} on Query {{ ...F{i + 1} ... on Query {{ ...F{i + 1} }} }}"
        for i in range(levels)
    ]
    frags.append(f"fragment F{levels} on Query {{ x: sessions {{ totalCount }} }}")
    started = time.perf_counter()
    async with app_client(store) as client:
        body = await gql(client, "{ ...F0 } " + " ".join(frags))
    assert time.perf_counter() - started < 5
    totals = body["data"] and body["data"]["x"]["totalCount"]
    assert (isinstance(totals, int) and totals > 0) or _code(body) == "QUERY_TOO_COSTLY"


async def test_the_deadline_cancels_the_work_with_a_coded_error(store: CountingStore) -> None:
    # A read of 30 s: answered well before it would end, the deadline cut it (a margin no
    # loaded host comes near, unlike a bound close to the deadline itself).
    store.delay_s = 30.0
    limits = Settings(bounds=Bounds(request_deadline_s=0.3))
    started = time.perf_counter()
    async with app_client(store, limits) as client:
        body = await gql(client, "{ sessions { nodes { id } } }")
    assert time.perf_counter() - started < 15
    assert _code(body) == "DEADLINE_EXCEEDED" and body["data"] is None


async def test_expensive_queries_queue_briefly_then_get_busy_with_429(
    store: CountingStore,
) -> None:
    store.delay_s = 1.0
    limits = Settings(bounds=Bounds(expensive_nodes=50, max_expensive_requests=1, busy_wait_s=0.2))
    big = "{ sessions(first: 60) { nodes { id } } }"
    async with app_client(store, limits) as client:
        first = asyncio.create_task(client.post(GRAPHQL, json={"query": big}))
        await asyncio.sleep(0.1)
        # Another document: the same one would share the first's execution (single flight).
        other = "{ sessions(first: 61) { nodes { id } } }"
        second = await client.post(GRAPHQL, json={"query": other})
        cheap = await client.post(GRAPHQL, json={"query": "{ sessions(first: 1) { totalCount } }"})
        done = await first
    assert done.status_code == 200 and "errors" not in done.json()
    assert second.status_code == 429 and second.headers["retry-after"] == "1"
    assert _code(second.json()) == "BUSY"
    assert cheap.status_code == 200 and "errors" not in cheap.json()


async def test_suggestions_are_hidden_when_introspection_is_off(store: CountingStore) -> None:
    typo = "{ sesions { totalCount } }"
    enum = "query($s: ModelState!) { models(state: $s) { totalCount } }"
    async with app_client(store) as client:
        open_body = await gql(client, typo)
    async with app_client(store, Settings(switches=Switches(introspection=False))) as client:
        closed = await gql(client, typo)
        closed_enum = await gql(client, enum, s="ACTIV")
        schema = await gql(client, "{ __schema { types { name } } }")
    assert "Did you mean" in open_body["errors"][0]["message"]
    for body in (closed, closed_enum, schema):
        assert "data" not in body
        assert "Did you mean" not in str(body) and "sessions" not in str(body)
        assert _code(body) == "GRAPHQL_VALIDATION_FAILED"

"""Identical concurrent queries share one execution; a client that leaves stops its work.

The store's reads wait at a gate the test opens, so "concurrent" is a fact of the test,
not a matter of timing: every request has joined (or started) its flight before any
read answers. Reads are counted, and a read cancelled at the gate is counted too.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fakeredis
import httpx
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.core.settings import Bounds, Settings, Switches
from openrl_inspect.execution import Runner
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.simulator import SimConfig
from openrl_inspect.web.app import PREFIX, create_app
from openrl_inspect.web.graphql_endpoint import GraphQLEndpoint
from openrl_inspect.web.health import HealthSettings
from starlette.applications import Starlette
from support.auth_harness import new_token, token_line, write_lines
from support.counting import CALLS
from support.gone_client import GoneClient
from support.harness import GRAPHQL, populate

pytestmark = pytest.mark.anyio

MODELS = "query Models($state: ModelState!) { models(state: $state, first: 100) { nodes { id session { owner } } } }"  # one document, as a poller sends it
WAIT_S = 10.0  # every wait below is bounded: a hang is a failure, not a stuck run


class GatedStore:
    """A state store whose reads wait for ``gate``; counts reads started and cancelled."""

    def __init__(self, store: RedisStateStore) -> None:
        self._store = store
        self.gate = asyncio.Event()
        self.gate.set()
        self.calls = 0
        self.waiting = 0
        self.cancelled = 0

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._store, name)
        if name not in CALLS:
            return target

        async def gated(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            self.waiting += 1
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            finally:
                self.waiting -= 1
            return await target(*args, **kwargs)

        return gated


@dataclass
class World:
    app: Starlette
    store: GatedStore
    client: httpx.AsyncClient
    tokens: dict[str, str]
    owners: list[str]

    @property
    def runner(self) -> Runner:
        for route in self.app.routes:
            endpoint = getattr(route, "endpoint", None)
            if isinstance(endpoint, GraphQLEndpoint):
                return endpoint.runner
        raise AssertionError("no GraphQL route")

    async def ask(self, who: str, variables: dict[str, Any]) -> httpx.Response:
        return await self.client.post(
            GRAPHQL,
            json={"query": MODELS, "variables": variables},
            headers={"authorization": f"Bearer {self.tokens[who]}"},
            timeout=WAIT_S,
        )


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT_S):
        while not condition():  # noqa: ASYNC110 # counters in the app: no event to wait on
            await asyncio.sleep(0.005)


@asynccontextmanager
async def world(tmp_path: Path, limits: Settings | None = None) -> AsyncIterator[World]:
    server = fakeredis.FakeServer()
    writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(writer, SimConfig(seed=5, sessions=4))
    inner = RedisStateStore.in_memory(server)
    sessions = await inner.sessions(list(sim.sessions))
    owners = sorted({s.owner for s in sessions if s is not None and not isinstance(s, Exception)})
    assert len(owners) >= 2, owners
    tokens = {"a": new_token(), "b": new_token(), "ops": new_token()}
    path = tmp_path / "tokens"
    write_lines(
        path,
        token_line(tokens["a"], "viewer-a", owners=[owners[0]]),
        token_line(tokens["b"], "viewer-b", owners=[owners[1]]),
        token_line(tokens["ops"], "ops", role="operator"),
    )
    store = GatedStore(inner)

    @asynccontextmanager
    async def backends() -> AsyncIterator[Backends]:
        yield Backends(state=store)

    app = create_app(
        backends, limits, health=HealthSettings(interval_s=0),
        authenticator=TokenAuthenticator(str(path)),
    )  # fmt: skip
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://inspector") as client,
    ):
        yield World(app, store, client, tokens, owners)


def models_of(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body
    nodes: list[dict[str, Any]] = body["data"]["models"]["nodes"]
    return nodes


async def gated(
    w: World, asks: Sequence[Awaitable[httpx.Response]], started: int, joined: int
) -> list[httpx.Response]:
    """Run ``asks`` with the gate shut until the flights stand as expected."""
    flights = w.runner.flights
    assert flights is not None
    base_started, base_joined = flights.started, flights.joined
    w.store.gate.clear()
    tasks = [asyncio.ensure_future(a) for a in asks]
    try:
        await until(
            lambda: (
                flights.started - base_started == started and flights.joined - base_joined == joined
            )
        )
    finally:
        w.store.gate.set()
    async with asyncio.timeout(WAIT_S):
        return list(await asyncio.gather(*tasks))


async def test_identical_concurrent_queries_run_once_and_each_gets_its_answer(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        alone = models_of(await w.ask("ops", {"state": "ACTIVE"}))
        reads_alone = w.store.calls
        assert alone and reads_alone > 0
        w.store.calls = 0
        n = 12
        answers = await gated(w, [w.ask("ops", {"state": "ACTIVE"}) for _ in range(n)], 1, n - 1)
        assert [models_of(a) for a in answers] == [alone] * n
        assert w.store.calls == reads_alone  # one execution's reads, not n
        assert len({a.headers["x-request-id"] for a in answers}) == n
        assert len(w.runner.flights or ()) == 0  # nothing kept once answered


async def test_a_query_after_the_answer_runs_again(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        models_of(await w.ask("ops", {"state": "ACTIVE"}))
        once = w.store.calls
        models_of(await w.ask("ops", {"state": "ACTIVE"}))
        assert w.store.calls == 2 * once  # no cache: a later poll reads again


async def test_different_principals_never_share(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        alone_a = models_of(await w.ask("a", {"state": "ACTIVE"}))
        alone_b = models_of(await w.ask("b", {"state": "ACTIVE"}))
        owners_a = {m["session"]["owner"] for m in alone_a}
        owners_b = {m["session"]["owner"] for m in alone_b}
        assert alone_a and alone_b and owners_a.isdisjoint(owners_b), (owners_a, owners_b)
        asks = [w.ask(who, {"state": "ACTIVE"}) for who in ("a", "b", "a", "b")]
        a1, b1, a2, b2 = await gated(w, asks, 2, 2)
        assert models_of(a1) == models_of(a2) == alone_a
        assert models_of(b1) == models_of(b2) == alone_b


async def test_different_variables_never_share(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        states = ("ACTIVE", "FAILED")
        alone = [models_of(await w.ask("ops", {"state": s})) for s in states]
        assert alone[0] != alone[1]
        answers = await gated(w, [w.ask("ops", {"state": s}) for s in states], 2, 0)
        assert [models_of(a) for a in answers] == alone


async def test_rest_routes_share_and_each_narrows_its_own_copy(tmp_path: Path) -> None:
    # One document and the same variables: the model-state filter (not an argument of a
    # session's models) is applied to the answer, in place, after the shared execution.
    # (An owner is the document's own variable: two owners are two executions.)
    async with world(tmp_path) as w:

        async def inventory(query: str) -> httpx.Response:
            return await w.client.get(
                f"{PREFIX}/inventory?first=20&models=20{query}",
                headers={"authorization": f"Bearer {w.tokens['ops']}"},
                timeout=WAIT_S,
            )

        whole, active = await gated(w, [inventory(""), inventory("&modelState=ACTIVE")], 1, 1)

        def states(answer: httpx.Response) -> set[str]:
            assert answer.status_code == 200, answer.text
            sessions = answer.json()["data"]["sessions"]["nodes"]
            return {m["state"] for s in sessions for m in s["models"]["nodes"]}

        assert states(active) == {"ACTIVE"}
        assert len(states(whole)) > 1  # the shared answer was not narrowed for it


async def test_a_caller_past_its_deadline_is_answered_and_the_work_goes_on(
    tmp_path: Path,
) -> None:
    async with world(tmp_path, Settings(bounds=Bounds(request_deadline_s=3.0))) as w:
        flights = w.runner.flights
        assert flights is not None
        w.store.gate.clear()
        try:
            first = asyncio.ensure_future(w.ask("ops", {"state": "ACTIVE"}))
            await until(lambda: w.store.waiting > 0)
            await asyncio.sleep(1.5)  # not a measure: the second's deadline falls later
            second = asyncio.ensure_future(w.ask("ops", {"state": "ACTIVE"}))
            await until(lambda: flights.joined == 1)
            async with asyncio.timeout(WAIT_S):
                late = (await first).json()
            assert late["errors"][0]["extensions"]["code"] == "DEADLINE_EXCEEDED"
            assert w.store.cancelled == 0  # the second still waits: the work goes on
        finally:
            w.store.gate.set()
        async with asyncio.timeout(WAIT_S):
            assert models_of(await second)


def _body(variables: dict[str, Any]) -> bytes:
    return json.dumps({"query": MODELS, "variables": variables}).encode()


async def test_a_leader_that_leaves_still_answers_its_followers(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        alone = models_of(await w.ask("ops", {"state": "ACTIVE"}))
        flights = w.runner.flights
        assert flights is not None
        w.store.gate.clear()
        leader = GoneClient(GRAPHQL, _body({"state": "ACTIVE"}), w.tokens["ops"])
        leading = asyncio.ensure_future(leader.call(w.app))
        try:
            await until(lambda: w.store.waiting > 0)
            following = asyncio.ensure_future(w.ask("ops", {"state": "ACTIVE"}))
            await until(lambda: flights.joined == 1)
            leader.gone.set()
            async with asyncio.timeout(WAIT_S):
                await leading
            assert leader.sent == []  # nobody to answer
            assert w.store.cancelled == 0  # the follower still waits: the work goes on
        finally:
            w.store.gate.set()
        async with asyncio.timeout(WAIT_S):
            assert models_of(await following) == alone


async def test_a_lone_client_that_leaves_cancels_its_execution_and_frees_its_slot(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Every query is expensive and there is one slot: a slot not given back leaves the
    # next query BUSY.
    limits = Settings(bounds=Bounds(expensive_nodes=1, max_expensive_requests=1, busy_wait_s=0.5))
    caplog.set_level(logging.INFO)
    async with world(tmp_path, limits) as w:
        w.store.gate.clear()
        client = GoneClient(GRAPHQL, _body({"state": "ACTIVE"}), w.tokens["ops"])
        calling = asyncio.ensure_future(client.call(w.app))
        try:
            await until(lambda: w.store.waiting > 0)
            client.gone.set()
            async with asyncio.timeout(WAIT_S):
                await calling
            await until(lambda: w.store.waiting == 0)
        finally:
            w.store.gate.set()
        assert client.sent == []
        assert w.store.cancelled >= 1
        assert len(w.runner.flights or ()) == 0
        assert models_of(await w.ask("ops", {"state": "ACTIVE"}))  # the slot came back
    gc.collect()  # a task whose exception nobody read is reported when collected
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    # The request's own log line: no response, because its client left.
    gone = [r for r in caplog.records if getattr(r, "codes", None) == ["CLIENT_DISCONNECTED"]]
    assert [getattr(r, "status", None) for r in gone] == [499]


async def test_a_rest_client_that_leaves_cancels_its_execution(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.store.gate.clear()
        client = GoneClient(f"{PREFIX}/inventory?first=20&models=20", token=w.tokens["ops"])
        calling = asyncio.ensure_future(client.call(w.app))
        try:
            await until(lambda: w.store.waiting > 0)
            client.gone.set()
            async with asyncio.timeout(WAIT_S):
                await calling
            await until(lambda: w.store.waiting == 0)
        finally:
            w.store.gate.set()
        assert w.store.cancelled >= 1
        assert [m["status"] for m in client.sent if m["type"] == "http.response.start"] == [499]


async def test_a_fresh_answer_serves_later_polls_of_the_same_principal_only(
    tmp_path: Path,
) -> None:
    async with world(tmp_path, Settings(switches=Switches(fresh_for_s=300.0))) as w:
        first = models_of(await w.ask("a", {"state": "ACTIVE"}))
        once = w.store.calls
        assert once > 0
        assert models_of(await w.ask("a", {"state": "ACTIVE"})) == first
        assert w.store.calls == once  # served from the window: no read
        models_of(await w.ask("b", {"state": "ACTIVE"}))
        assert w.store.calls == 2 * once  # another principal never gets a's answer
        models_of(await w.ask("a", {"state": "FAILED"}))
        assert w.store.calls > 2 * once  # other variables: another query, read anew

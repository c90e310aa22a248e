"""A viewer of one owner reaches nothing of another owner's, by any path.

The walk (``walk.queries``) covers every root field and every path below it to depth 4,
with the ids of both owners as arguments, over the demo world (OpenRL's state, and the
Kubernetes, Prometheus and Cloud Logging twins). Every answer, errors included, is
searched for the other owners' session, model, worker, op and pod ids, owner names and
client hosts. The world also holds one of alice's workers moved on to another owner's
model, and another owner's model that cannot be read (its stored value is a marker too).
Lookups out of scope answer exactly as unknown ids.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fakeredis
import httpx
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.cli.demo import DemoTwins
from openrl_inspect.core.principal import NOBODY, Principal, Role
from openrl_inspect.core.settings import Bounds, Settings
from openrl_inspect.execution.schema import build_schema
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.simulator import SimConfig, Simulation, populate
from openrl_inspect.state import keys
from openrl_inspect.web.app import PREFIX, create_app
from openrl_inspect.web.health import HealthSettings
from scope.walk import leaks, queries
from support.auth_harness import new_token, token_line, write_lines
from support.types import api_types

pytestmark = pytest.mark.anyio

OWNER = "alice"
OPEN = Settings(bounds=Bounds(max_nodes=10**9, max_depth=100, max_aliases=1000, max_tokens=10**6, max_fields=10**6, request_deadline_s=0, expensive_nodes=10**9))  # fmt: skip
# Too slow to walk below (a rollup of every model), or off unless an operator enables it.
SKIP = frozenset({"prometheusQuery"})


@dataclass
class World:
    sim: Simulation
    backends: Backends
    mine: dict[str, set[str]]
    theirs: dict[str, set[str]]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def world() -> World:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        client, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    now = time.time()
    sim = Simulation(SimConfig(seed=5, sessions=4), rec)
    populate(sim, now)
    await rec.flush()
    store = RedisStateStore.in_memory(server)
    backends = Backends(state=store)
    twins = await DemoTwins.build(sim, store, now)
    twins.install(backends)
    sessions = await store.sessions(sorted({m.session_id for m in sim.models.values()}))
    owner = {s.id: s.owner for s in sessions if s is not None and not isinstance(s, Exception)}
    mine = {sid for sid, o in owner.items() if o == OWNER}
    theirs = set(owner) - mine
    assert mine and theirs, owner
    world = World(sim, backends, _marks(sim, mine, owner), _marks(sim, theirs, owner))
    await _hostile(world, rec, client, now)
    return world


async def _hostile(world: World, rec: AsyncRecorder, client: Any, now: float) -> None:
    """What the plain world lacks: one of alice's workers moved on to another owner's
    model (its new pod and payload are theirs), and records of another owner that
    cannot be read, holding values that must not come back."""
    their_models = sorted(world.theirs["models"])
    moved = sorted(world.mine["workers"])[0]
    rec.heartbeat(moved, "trainer", "pod-moved-x", "node-moved-x", their_models[0],
                  ["GPU-moved-x"], {"note": "payload-moved-x"}, at=now)  # fmt: skip
    await rec.flush()
    world.theirs["pods"] |= {"pod-moved-x", "payload-moved-x"}
    await client.hset(keys.model(their_models[-1]), "state", "STORED-SECRET-STATE")
    world.theirs["stored"] = {"STORED-SECRET-STATE"}


def _marks(sim: Simulation, sessions: set[str], owner: dict[str, str]) -> dict[str, set[str]]:
    models = {mid for mid, m in sim.models.items() if m.session_id in sessions}
    workers = {w[0] for mid in models for w in sim.models[mid].workers}
    pods = {w[2] for mid in models for w in sim.models[mid].workers}
    owners = {owner[s] for s in sessions}
    return {
        "sessions": sessions,
        "models": models,
        "workers": workers,
        "pods": pods,
        "owners": owners,
        "hosts": {f"ws-{o}" for o in owners},
    }


async def run(world: World, principal: Principal, query: str) -> dict[str, Any]:
    schema = build_schema(OPEN.switches)
    ctx = Context.build(world.backends, principal, OPEN)
    result = await schema.execute(query, context_value=ctx)
    return {
        "data": result.data,
        "errors": [{"message": e.message, "extensions": e.extensions} for e in result.errors or ()],
    }


def values(world: World) -> dict[str, list[Any]]:
    mine, theirs = world.mine, world.theirs

    def one(ids: set[str]) -> list[Any]:
        return list(sorted(ids)[:2])

    models = one(mine["models"]) + one(theirs["models"])
    pods = one(mine["pods"]) + one(theirs["pods"])
    return {
        "id": one(mine["sessions"]) + one(theirs["sessions"]) + models
        + one(mine["workers"]) + one(theirs["workers"]),
        "namespace": ["openrl"],
        "name": pods,
        "model": models,
        "uuid": ["GPU-0"],
        "uuids": [["GPU-0"]],
        "nodes": [["gke-openrl-h100-pool-000"]],
    }  # fmt: skip


def viewer() -> Principal:
    return Principal(OWNER, Role.VIEWER, frozenset({OWNER}))


async def test_a_viewer_sees_nothing_of_other_owners_on_any_path(world: World) -> None:
    schema = api_types()
    walked = queries(schema, values(world), depth=4, skip=SKIP)
    assert len(walked) > 30
    markers = set().union(*world.theirs.values())
    seen_mine = set()
    for query in walked:
        answer = json.dumps(await run(world, viewer(), query))
        # An id the caller sent may come back in its NOT_FOUND message: it tells nothing.
        asked = set(leaks(query, markers))
        assert not leaks(answer, markers - asked), (query[:200], leaks(answer, markers - asked))
        seen_mine.update(leaks(answer, set().union(*world.mine.values())))
    # Not vacuous: the viewer's own sessions, models and pods came back.
    assert world.mine["sessions"] & seen_mine and world.mine["models"] & seen_mine


async def test_out_of_scope_ids_answer_exactly_as_unknown_ones(world: World) -> None:
    theirs = sorted(world.theirs["models"])[0]
    for field, ident in (("model", theirs), ("session", sorted(world.theirs["sessions"])[0])):
        hidden = await run(world, viewer(), f'{{ {field}(id: "{ident}") {{ id }} }}')
        unknown = await run(world, viewer(), f'{{ {field}(id: "nope-123") {{ id }} }}')
        assert hidden["data"] == unknown["data"] == {field: None}
        (h,), (u,) = hidden["errors"], unknown["errors"]
        assert h["extensions"] == u["extensions"] and h["extensions"]["code"] == "NOT_FOUND"
        assert h["message"].replace(ident, "X") == u["message"].replace("nope-123", "X")


async def test_the_operator_sees_everyone_and_nobody_sees_nothing(world: World) -> None:
    query = "{ sessions(first: 100) { totalCount nodes { id owner } } }"
    operator = await run(world, Principal("ops", Role.OPERATOR), query)
    ids = {s["id"] for s in operator["data"]["sessions"]["nodes"]}
    assert world.theirs["sessions"] <= ids and world.mine["sessions"] <= ids
    nobody = await run(world, NOBODY, query)
    assert nobody["data"]["sessions"] == {"totalCount": 0, "nodes": []}
    mine = await run(world, viewer(), query)
    assert {s["owner"] for s in mine["data"]["sessions"]["nodes"]} == {OWNER}
    assert mine["data"]["sessions"]["totalCount"] == len(world.mine["sessions"])


async def test_the_walk_would_catch_a_leak(world: World) -> None:
    """The same walk as an operator finds the other owners' ids: the check above can fail."""
    schema = api_types()
    markers = set().union(*world.theirs.values())
    found: set[str] = set()
    for query in queries(schema, values(world), depth=4, skip=SKIP):
        answer = json.dumps(await run(world, Principal("ops", Role.OPERATOR), query))
        found.update(leaks(answer, markers - set(leaks(query, markers))))
    for kind in ("sessions", "models", "workers", "pods", "owners", "hosts"):
        assert found & world.theirs[kind], kind


async def test_over_http_a_viewer_token_is_scoped_and_no_token_is_401(
    world: World, tmp_path: Path
) -> None:
    token, ops = new_token(), new_token()
    path = tmp_path / "tokens"
    write_lines(
        path,
        token_line(token, "alice", owners=[OWNER]),
        token_line(ops, "ops", role="operator"),
    )
    app = create_app(
        lambda: _given(world.backends),
        OPEN,
        None,
        HealthSettings(interval_s=0),
        TokenAuthenticator(str(path)),
    )
    query = {"query": "{ sessions(first: 100) { nodes { id owner } } }"}
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://inspector") as http,
    ):
        url = f"{PREFIX}/graphql"
        assert (await http.post(url, json=query)).status_code == 401
        mine = await http.post(url, json=query, headers={"authorization": f"Bearer {token}"})
        everyone = await http.post(url, json=query, headers={"authorization": f"Bearer {ops}"})
    owners = {s["owner"] for s in mine.json()["data"]["sessions"]["nodes"]}
    assert owners == {OWNER}
    assert len({s["owner"] for s in everyone.json()["data"]["sessions"]["nodes"]}) > 1


@asynccontextmanager
async def _given(backends: Backends) -> AsyncIterator[Backends]:
    yield backends


async def test_a_viewers_cursors_are_sealed_and_page_on(world: World) -> None:
    markers = set().union(*world.theirs.values())
    seen: list[str] = []
    after = ""
    for _ in range(len(world.mine["sessions"]) + 2):
        query = (
            "{ sessions(first: 1" + after + ") { nodes { id } "
            "edges { cursor } pageInfo { endCursor hasNextPage } } }"
        )
        page = (await run(world, viewer(), query))["data"]["sessions"]
        seen += [n["id"] for n in page["nodes"]]
        cursors = [e["cursor"] for e in page["edges"]] + [page["pageInfo"]["endCursor"]]
        for cursor in filter(None, cursors):
            padded = cursor[2:] + "=" * (-len(cursor[2:]) % 4)
            assert cursor.startswith("s.")
            assert not leaks(base64.urlsafe_b64decode(padded).decode("latin-1"), markers)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = f', after: "{page["pageInfo"]["endCursor"]}"'
    assert sorted(seen) == sorted(world.mine["sessions"])
    forged = await run(world, viewer(), '{ sessions(after: "WyJzZXNzaW9ucyJd") { nodes { id } } }')
    assert forged["errors"][0]["extensions"]["code"] == "BAD_INPUT"

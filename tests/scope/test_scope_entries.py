"""The scope walk, extended to the REST routes and the MCP tools: as a viewer of one
owner, over the world of ``test_scope_walk`` (several owners), every route and every
tool is asked with the ids of both owners, and no answer holds anything of another
owner's. The same walk as an operator finds them, so the check can fail."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openrl_inspect.agents.rest import SPECS
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.web.app import PREFIX, create_app
from openrl_inspect.web.health import HealthSettings
from scope.test_scope_walk import OPEN, OWNER, World, world
from scope.walk import leaks
from support.auth_harness import new_token, token_line, write_lines

pytestmark = pytest.mark.anyio
__all__ = ["world"]  # the module-scoped world fixture, shared with the GraphQL walk


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def _given(backends: Backends) -> AsyncIterator[Backends]:
    yield backends


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    viewer, operator = new_token(), new_token()
    path = tmp_path_factory.mktemp("scope") / "tokens"
    write_lines(
        path,
        token_line(viewer, OWNER, owners=[OWNER]),
        token_line(operator, "ops", role="operator"),
    )
    return path, viewer, operator


@asynccontextmanager
async def app_for(world: World, path: Path) -> AsyncIterator[Any]:
    app = create_app(
        lambda: _given(world.backends), OPEN, None, HealthSettings(interval_s=0),
        TokenAuthenticator(str(path)),
    )  # fmt: skip
    async with app.router.lifespan_context(app):
        yield app


def _ids(world: World) -> dict[str, list[str]]:
    def two(ids: set[str]) -> list[str]:
        return sorted(ids)[:2]

    mine, theirs = world.mine, world.theirs
    nodes = [n.name for n in world.sim.cluster.nodes][:3]
    # GPUs held by each owner's models: a GPU answer names its holder, if visible.
    held = {mid: [w[3] for w in world.sim.models[mid].workers] for mid in world.sim.models}
    gpus = [
        g for mid in two(mine["models"]) + two(theirs["models"]) for ws in held[mid] for g in ws
    ]
    return {
        "model": two(mine["models"]) + two(theirs["models"]),
        "session": two(mine["sessions"]) + two(theirs["sessions"]),
        "node": nodes,
        "gpu": gpus[:6],
    }


def rest_urls(world: World) -> list[str]:
    ids = _ids(world)
    urls = [
        "/inventory?first=50",
        "/inventory?state=CLOSED&first=50",
        "/attention?first=50&scan=100",
    ]
    for spec in SPECS:
        if "{id}" in spec.path:
            kind = "session" if spec.path.startswith("/sessions") else "model"
            urls += [spec.path.replace("{id}", i) for i in ids[kind]]
    urls += [f"/logs?model={m}" for m in ids["model"]]
    urls += [f"/activity?model={m}" for m in ids["model"]]
    urls += [f"/activity?node={n}" for n in ids["node"]]
    urls += [f"/activity?gpu={g}" for g in ids["gpu"]]
    return urls


async def rest_walk(world: World, path: Path, token: str) -> list[tuple[str, str]]:
    answers = []
    async with app_for(world, path) as app:
        transport = httpx.ASGITransport(app=app)
        headers = {"authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://inspector", headers=headers, timeout=60
        ) as client:
            for url in rest_urls(world):
                resp = await client.get(PREFIX + url)
                assert resp.status_code < 500, (url, resp.text[:300])
                answers.append((url, resp.text))
    return answers


def tool_calls(world: World) -> list[tuple[str, dict[str, Any]]]:
    ids = _ids(world)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("attention", {"first": 50}),
        ("list_models", {}),
        ("list_models", {"session_state": "CLOSED"}),
        ("graphql", {"query": "{ sessions(first: 100) { nodes { id owner client } } }"}),
        ("graphql", {"query": "{ workers(first: 100) { nodes { id pod model { id } } } }"}),
    ]
    calls += [
        ("list_models", {"state": s}) for s in ("WAITING", "PLACED", "ACTIVE", "FAILED", "ENDED")
    ]
    for m in ids["model"]:
        calls += [(t, {"model_id": m}) for t in ("model_summary", "why_waiting", "model_logs",
                                                   "gpu_activity", "step_timeline")]  # fmt: skip
        calls.append(("graphql", {"query": f'{{ model(id: "{m}") {{ id sessionId }} }}'}))
    calls += [("session_summary", {"session_id": s}) for s in ids["session"]]
    calls += [("node_activity", {"node": n}) for n in ids["node"]]
    return calls


async def mcp_walk(world: World, path: Path, token: str) -> list[tuple[str, str]]:
    answers = []
    async with app_for(world, path) as app:
        http = httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app),
            headers={"authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(60.0),
        )
        async with (
            http,
            streamable_http_client(f"http://inspector{PREFIX}/mcp", http_client=http) as (r, w, *_),
            ClientSession(r, w, read_timeout_seconds=60) as session,
        ):
            await session.initialize()
            for tool, args in tool_calls(world):
                result = await session.call_tool(tool, args)
                text = json.dumps([c.model_dump(mode="json") for c in result.content])
                answers.append((f"{tool} {args}", text + json.dumps(result.structured_content)))
    return answers


def check(world: World, answers: list[tuple[str, str]]) -> set[str]:
    """The other owners' marks found in answers (beyond the ids each request named)."""
    markers = set().union(*world.theirs.values())
    found: set[str] = set()
    for asked, answer in answers:
        found.update(leaks(answer, markers - set(leaks(asked, markers))))
    return found


async def test_a_viewer_sees_nothing_of_other_owners_over_rest(
    world: World, tokens: tuple[Path, str, str]
) -> None:
    path, viewer, operator = tokens
    answers = await rest_walk(world, path, viewer)
    assert len(answers) > 20
    assert check(world, answers) == set()
    mine = set().union(*world.mine.values())
    assert any(leaks(a, mine) for _, a in answers)  # not vacuous: its own work came back
    # The same walk as an operator finds the others' work: the check can fail.
    everyone = check(world, await rest_walk(world, path, operator))
    for kind in ("sessions", "models", "owners"):
        assert everyone & world.theirs[kind], kind


async def test_a_viewer_sees_nothing_of_other_owners_over_mcp(
    world: World, tokens: tuple[Path, str, str]
) -> None:
    path, viewer, operator = tokens
    answers = await mcp_walk(world, path, viewer)
    assert check(world, answers) == set()
    mine = set().union(*world.mine.values())
    assert any(leaks(a, mine) for _, a in answers)
    everyone = check(world, await mcp_walk(world, path, operator))
    for kind in ("sessions", "models", "owners", "hosts"):
        assert everyone & world.theirs[kind], kind

"""The MCP server through the SDK's own client: over stdio (``openrl-inspect mcp --demo``
in a subprocess) and over streamable HTTP against the app (the demo's world on a socket),
the HTTP one behind the app's authentication and scoping."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import StdioServerParameters, stdio_client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openrl_inspect.agents.mcp.budget import TOKENS
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.web.app import PREFIX
from support.auth_harness import new_token, token_line, write_lines
from support.live_server import serve_demo

pytestmark = pytest.mark.anyio
TOOLS = {
    "attention", "list_models", "model_summary", "session_summary", "why_waiting",
    "model_logs", "gpu_activity", "node_activity", "step_timeline", "model_timeline",
    "graphql",
}  # fmt: skip


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serve_demo() as url:
        yield url


@asynccontextmanager
async def over_http(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"authorization": f"Bearer {token}"} if token else None
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)) as http,
        streamable_http_client(f"{url}{PREFIX}/mcp", http_client=http) as (read, write, *_),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def over_stdio() -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "openrl_inspect.cli", "mcp", "--demo", "--seed", "11"],
        env={**os.environ, "OPENRL_INSPECT_DEMO_TICK_S": "3600"},
    )
    async with (
        stdio_client(params, errlog=sys.__stderr__ or sys.stderr) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        yield session


async def call(
    session: ClientSession, tool: str, failing: bool = False, **arguments: Any
) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    # A coded error with nothing to show is a tool error that keeps its answer.
    assert result.is_error is failing, result.content
    answer: dict[str, Any] = result.structured_content
    assert answer is not None
    # The text block carries the same answer, for clients that read text only.
    assert json.loads(result.content[0].text) == answer  # type: ignore[union-attr]
    assert answer["tokens"] <= answer["budget"], (tool, answer["tokens"])
    return answer


async def why_is_it_stuck(session: ClientSession) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.description and tool.output_schema and tool.input_schema
    needing = await call(session, "attention", first=5)
    models = needing["data"]["attention"]["models"]
    assert models and models[0]["topCause"]["kind"]
    mid = models[0]["model"]["id"]
    summary = await call(session, "model_summary", model_id=mid)
    diagnosis = summary["data"]["model"]["summary"]
    assert diagnosis["verdict"] == models[0]["verdict"] and diagnosis["causes"]
    assert diagnosis["causes"][0]["next"] is not None
    timeline = await call(session, "model_timeline", model_id=mid)
    entries = timeline["data"]["model"]["timeline"]["entries"]
    assert entries and [e["at"] for e in entries] == sorted(
        (e["at"] for e in entries), reverse=True
    )
    missing = await call(session, "model_summary", failing=True, model_id="no-such-model")
    assert missing["data"] == {"model": None}
    assert missing["errors"][0]["code"] == "NOT_FOUND"
    sdl = await session.read_resource("openrl-inspect://schema.graphql")
    assert "type Query" in sdl.contents[0].text  # type: ignore[union-attr]


async def test_over_stdio_an_agent_asks_why_a_model_is_stuck() -> None:
    async with over_stdio() as session:
        await why_is_it_stuck(session)


async def test_over_http_an_agent_asks_why_a_model_is_stuck(base: str) -> None:
    async with over_http(base) as session:
        await why_is_it_stuck(session)


async def test_every_tool_fits_its_budget_and_pages_on(base: str) -> None:
    async with over_http(base) as session:
        listed = await call(session, "list_models")
        sessions = listed["data"]["sessions"]["nodes"]
        mid = next(m["id"] for s in sessions for m in s["models"]["nodes"] if m["stepCount"] > 3)
        # Logs: a page cut to the budget, and a cursor that goes on without repeating.
        first = await call(session, "model_logs", model_id=mid, minutes=600)
        assert first["truncated"] and first["cursor"]
        lines = first["data"]["model"]["logs"]["nodes"]
        second = await call(
            session, "model_logs", model_id=mid, minutes=600, cursor=first["cursor"]
        )
        more = second["data"]["model"]["logs"]["nodes"]
        assert lines and more and lines[-1] != more[0]
        steps = await call(session, "step_timeline", model_id=mid, last=3)
        assert len(steps["data"]["model"]["steps"]["nodes"]) <= 3 and steps["cursor"]
        by_state = await call(session, "list_models", state="ACTIVE")
        assert by_state["data"]["models"]["nodes"]
        owners = {s["owner"] for s in sessions}
        assert len(owners) > 1
        bobs = await call(session, "list_models", owner="bob")
        assert {m["session"]["owner"] for m in bobs["data"]["models"]["nodes"]} == {"bob"}
        active = await call(session, "list_models", state="ACTIVE", owner="bob")
        assert {m["session"]["owner"] for m in active["data"]["models"]["nodes"]} == {"bob"}
        for tool, args in (
            ("session_summary", {"session_id": sessions[0]["id"]}),
            ("why_waiting", {"model_id": mid}),
            ("gpu_activity", {"model_id": mid}),
        ):
            answer = await call(session, tool, **args)
            assert answer["data"] is not None, (tool, answer)
        # A GraphQL answer past its budget is cut, and says where.
        big = await call(
            session,
            "graphql",
            query="{ sessions(first: 50) { nodes { id owner client models(first: 20) { nodes { id state lora settings steps(first: 20) { nodes { number durationSeconds metrics } } } } } } }",
        )
        assert big["truncated"] and big["cut"] and big["tokens"] <= big["budget"]
        assert big["budget"] > TOKENS


async def test_the_endpoint_takes_posts_only(base: str) -> None:
    # A GET would open an event stream the stateless server never writes to.
    async with httpx.AsyncClient(timeout=10) as http:
        got = await http.get(f"{base}{PREFIX}/mcp", headers={"accept": "text/event-stream"})
    assert got.status_code == 405


async def test_the_graphql_tool_has_a_tighter_cost_limit(base: str) -> None:
    query = "{ sessions(first: 100) { nodes { models(first: 100) { nodes { steps(first: 5) { nodes { number } } } } } } }"
    async with over_http(base) as session:
        refused = await call(session, "graphql", failing=True, query=query)
    # 50,000 nodes: inside /graphql's limit, past the tool's.
    assert refused["data"] is None and refused["errors"][0]["code"] == "QUERY_TOO_COSTLY"
    body = {"query": query}
    async with httpx.AsyncClient(timeout=30) as http:
        answered = (await http.post(f"{base}{PREFIX}/graphql", json=body)).json()
    assert "errors" not in answered


async def test_over_http_the_app_authenticates_and_scopes(tmp_path: Path) -> None:
    token = new_token()
    path = tmp_path / "tokens"
    write_lines(path, token_line(token, "bob", owners=["bob"]))
    with serve_demo(authenticator=TokenAuthenticator(str(path))) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            bare = await http.post(
                f"{url}{PREFIX}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
            )
        assert bare.status_code == 401
        async with over_http(url, token) as session:
            listed = await call(session, "list_models")
            owners = {s["owner"] for s in listed["data"]["sessions"]["nodes"]}
            assert owners == {"bob"}
            asked = await call(
                session, "graphql", query="{ sessions(first: 100) { nodes { owner } } }"
            )
            assert {s["owner"] for s in asked["data"]["sessions"]["nodes"]} == {"bob"}

"""The MCP server to its spec, driven in-process by the official SDK's client over the
demo's world: every tool's answer validates against the output schema it publishes (its
``data`` typed by the documents it runs), coded errors are tool errors that keep their
codes, bad arguments are tool errors with their message and no traceback, and each
published limit is the one the server holds."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import jsonschema
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent, Tool
from openrl_inspect.agents.mcp import build
from openrl_inspect.cli.demo import demo_backends
from openrl_inspect.core.principal import ANONYMOUS_OPERATOR
from openrl_inspect.core.settings import Bounds, Settings
from openrl_inspect.execution import Runner, build_schema
from openrl_inspect.web.app import PREFIX
from support.demo_app import demo_client
from support.live_server import FROZEN

pytestmark = pytest.mark.anyio
# Keywords several model APIs refuse at the root of a tool's input schema (and with it
# the whole request carrying the tool list).
COMPOSITION = {"oneOf", "anyOf", "allOf", "not", "if", "then", "else"}


@asynccontextmanager
async def connected(settings: Settings | None = None) -> AsyncIterator[Client]:
    settings = settings or Settings()
    runner = Runner(build_schema(settings.switches), settings)
    async with demo_backends(FROZEN) as backends:
        server = build(runner, lambda ctx: (backends, ANONYMOUS_OPERATOR))
        async with Client(server) as client:
            yield client


async def listed(client: Client) -> dict[str, Tool]:
    return {t.name: t for t in (await client.list_tools()).tools}


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def conforms(tool: Tool, result: CallToolResult) -> dict[str, Any]:
    answer = result.structured_content
    assert answer is not None, (tool.name, text_of(result))
    assert tool.output_schema is not None
    jsonschema.validate(answer, tool.output_schema, cls=jsonschema.Draft202012Validator)
    out: dict[str, Any] = answer
    return out


async def known(client: Client) -> dict[str, str]:
    """Real ids from the demo: a placed model, its session and node."""
    found = await client.call_tool(
        "graphql",
        {
            "query": "{ models(state: ACTIVE, first: 20) { nodes { id sessionId "
            "placements(first: 1) { nodes { node } } } } }"
        },
    )
    assert found.structured_content is not None
    models = found.structured_content["data"]["models"]["nodes"]
    placed = next(m for m in models if m["placements"]["nodes"])
    return {
        "model": placed["id"],
        "session": placed["sessionId"],
        "node": placed["placements"]["nodes"][0]["node"],
    }


def valid_arguments(ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each tool's arguments that ask for something the demo has."""
    return {
        "attention": {"first": 5},
        "list_models": {},
        "model_summary": {"model_id": ids["model"]},
        "session_summary": {"session_id": ids["session"]},
        "why_waiting": {"model_id": ids["model"]},
        "model_logs": {"model_id": ids["model"], "minutes": 600},
        "gpu_activity": {"model_id": ids["model"]},
        "node_activity": {"node": ids["node"]},
        "step_timeline": {"model_id": ids["model"], "last": 3},
        "model_timeline": {"model_id": ids["model"]},
        "graphql": {"query": "{ sessions(first: 2) { nodes { id owner } } }"},
    }


async def test_every_tool_answers_within_its_typed_output_schema() -> None:
    async with connected() as client:
        tools = await listed(client)
        calls = valid_arguments(await known(client))
        # A tool added without arguments here fails: each one is held to its schema.
        assert set(calls) <= set(tools)
        for name, tool in tools.items():
            assert tool.output_schema is not None
            data = tool.output_schema["properties"]["data"]
            if name != "graphql":
                # Typed from the document: a closed object per selection, not "any object".
                shapes = [s for s in data["anyOf"] if s.get("type") == "object"]
                assert shapes and all(s["additionalProperties"] is False for s in shapes), name
            result = await client.call_tool(name, calls[name])
            assert not result.is_error, (name, text_of(result))
            answer = conforms(tool, result)
            assert answer["data"] is not None and not answer["errors"], (name, answer)
        # The other document of list_models, typed too.
        by_state = await client.call_tool("list_models", {"state": "FAILED"})
        assert conforms(tools["list_models"], by_state)["data"]["models"]["nodes"]


async def test_a_schema_off_by_one_field_is_caught() -> None:
    # The check above can fail: an answer with a field the document did not select.
    async with connected() as client:
        tools = await listed(client)
        result = await client.call_tool("attention", {"first": 1})
    assert result.structured_content is not None
    result.structured_content["data"]["attention"]["extra"] = 1
    with pytest.raises(jsonschema.ValidationError):
        conforms(tools["attention"], result)


async def test_not_found_and_coded_errors_are_tool_errors_that_keep_their_codes() -> None:
    async with connected() as client:
        tools = await listed(client)
        ids = await known(client)
        for name, arguments, code in (
            ("model_summary", {"model_id": "no-such-model"}, "NOT_FOUND"),
            ("session_summary", {"session_id": "no-such-session"}, "NOT_FOUND"),
            ("gpu_activity", {"model_id": "no-such-model"}, "NOT_FOUND"),
            ("node_activity", {"node": "no-such-node"}, "NOT_FOUND"),
            ("step_timeline", {"model_id": ids["model"], "cursor": "garbage"}, "BAD_INPUT"),
            ("model_logs", {"model_id": ids["model"], "cursor": "garbage"}, "BAD_INPUT"),
            ("graphql", {"query": "{ nope }"}, "GRAPHQL_VALIDATION_FAILED"),
            (
                "graphql",
                {
                    "query": "{ sessions(first: 100) { nodes { models(first: 100) { nodes { "
                    "steps(first: 5) { nodes { number } } } } } } }"
                },
                "QUERY_TOO_COSTLY",
            ),
        ):
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, text_of(result))
            answer = conforms(tools[name], result)
            assert code in {e["code"] for e in answer["errors"]}, (name, answer)
        # A part missing deeper is no tool error: the answer stands, with what it lacks.
        partial = await client.call_tool(
            "graphql",
            {
                "query": '{ a: model(id: "no-such-model") { id } sessions(first: 1) { nodes { id } } }'
            },
        )
        assert partial.is_error, "a root field missing is nothing to show for it"
        fine = await client.call_tool(
            "graphql", {"query": "{ sessions(first: 1) { nodes { id } } }"}
        )
        assert not fine.is_error


async def test_bad_arguments_are_tool_errors_with_their_message_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with connected() as client:
        ids = await known(client)
        for name, arguments, named in (
            ("gpu_activity", {}, "model_id"),
            ("gpu_activity", {"node": ids["node"]}, "model_id"),
            ("node_activity", {}, "node"),
            ("model_summary", {"model_id": ids["model"], "steps": "many"}, "steps"),
            ("list_models", {"state": "SLEEPING"}, "state"),
            ("attention", {"first": 0}, "first"),
        ):
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, arguments)
            message = text_of(result)
            assert named in message and message != f"Error executing tool {name}", message
    crashes = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not crashes, [r.getMessage() for r in crashes]


async def test_no_input_schema_has_a_composition_keyword_at_its_root() -> None:
    async with connected() as client:
        for name, tool in (await listed(client)).items():
            schema = tool.input_schema
            assert schema["type"] == "object" and not COMPOSITION & set(schema), name


def _bounded(tool: Tool) -> dict[str, dict[str, Any]]:
    """Each numeric argument with a maximum, and its number branch."""
    out = {}
    for arg, prop in tool.input_schema["properties"].items():
        for branch in prop.get("anyOf", [prop]):
            if branch.get("type") in ("integer", "number") and "maximum" in branch:
                out[arg] = branch
    return out


async def _limits_hold(settings: Settings) -> dict[tuple[str, str], float]:
    """Each tool's published maxima, each checked against the server: the maximum is
    answered, one past it refused."""
    published = {}
    async with connected(settings) as client:
        calls = valid_arguments(await known(client))
        for name, tool in (await listed(client)).items():
            for arg, branch in _bounded(tool).items():
                top = branch["maximum"]
                published[name, arg] = top
                at = await client.call_tool(name, {**calls[name], arg: top})
                assert not at.is_error, (name, arg, top, text_of(at))
                past = top + 1 if branch["type"] == "integer" else top * 1.01
                over = await client.call_tool(name, {**calls[name], arg: past})
                assert over.is_error, (name, arg, past)
                low = branch.get("minimum", branch.get("exclusiveMinimum"))
                assert low is not None, (name, arg)
    return published


async def test_each_published_limit_is_the_one_the_server_holds() -> None:
    published = await _limits_hold(Settings())
    assert published[("attention", "first")] == 20
    assert published[("model_logs", "minutes")] == 168 * 60
    assert {arg for _, arg in published} >= {"first", "worst", "steps", "last", "minutes"}


async def test_a_page_limit_follows_the_servers_setting() -> None:
    # Above 100: attention reads pages of 100 inside, refused under a smaller setting.
    published = await _limits_hold(Settings(bounds=Bounds(max_page_size=150)))
    assert published[("step_timeline", "last")] == 150
    assert published[("model_summary", "steps")] == 150


async def test_the_http_endpoint_refuses_a_foreign_origin() -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"accept": "application/json, text/event-stream"}
    async with demo_client(http=None) as client:
        foreign = await client.post(
            f"{PREFIX}/mcp", json=ping, headers={**headers, "origin": "http://evil.example"}
        )
        agent = await client.post(f"{PREFIX}/mcp", json=ping, headers=headers)
    assert foreign.status_code == 403
    assert foreign.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert agent.status_code == 200, agent.text


async def test_an_origin_the_server_allows_may_call_it() -> None:
    from openrl_inspect.web.guard import HttpSettings

    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"accept": "application/json, text/event-stream", "origin": "http://ide.local"}
    async with demo_client(http=HttpSettings(cors_origins=("http://ide.local",))) as client:
        allowed = await client.post(f"{PREFIX}/mcp", json=ping, headers=headers)
    assert allowed.status_code == 200, allowed.text


# Each tool's argument beside the REST route's parameter that feeds the same GraphQL
# argument: one limit, published alike.
SAME_ARGUMENT = {
    ("attention", "first"): ("/attention", "first"),
    ("session_summary", "worst"): ("/sessions/{id}/summary", "worst"),
    ("model_summary", "steps"): ("/models/{id}/summary", "steps"),
    ("step_timeline", "last"): ("/models/{id}/steps", "first"),
    ("gpu_activity", "window_seconds"): ("/models/{id}/activity", "window"),
    ("node_activity", "window_seconds"): ("/nodes/{name}/activity", "window"),
}


@pytest.mark.parametrize("page", [100, 150])
async def test_mcp_and_openapi_publish_one_limit_per_argument(page: int) -> None:
    settings = Settings(bounds=Bounds(max_page_size=page))
    async with connected(settings) as client:
        tools = await listed(client)
        ids = await known(client)
    async with demo_client(settings=settings) as http:
        openapi = (await http.get(f"{PREFIX}/openapi.json")).json()
        # The route holds what it publishes: the page's maximum is answered.
        at = await http.get(f"{PREFIX}/models/{ids['model']}/summary", params={"steps": page})
        assert at.status_code == 200, at.text
    for (tool, arg), (path, name) in SAME_ARGUMENT.items():
        mcp = _bounded(tools[tool])[arg]
        (rest,) = [
            p["schema"] for p in openapi["paths"][path]["get"]["parameters"] if p["name"] == name
        ]
        keys = ("minimum", "exclusiveMinimum", "maximum")
        assert {k: mcp.get(k) for k in keys} == {k: rest.get(k) for k in keys}, (tool, arg)
    steps = openapi["paths"]["/models/{id}/summary"]["get"]["parameters"]
    assert [p["schema"]["maximum"] for p in steps if p["name"] == "steps"] == [page]

"""The REST routes over the demo's world: real ids answer what the OpenAPI document says,
errors keep their codes as HTTP statuses, pages go on by cursor, and each route's answer
is the GraphQL endpoint's answer to the same document (one engine)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from openrl_inspect.agents.rest.openapi import document
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.core.settings import Bounds, Settings
from openrl_inspect.execution import registry
from openrl_inspect.web.app import PREFIX
from support.auth_harness import new_token, token_line, write_lines
from support.demo_app import demo_client
from support.types import api_types

pytestmark = pytest.mark.anyio
OPENAPI = document(api_types(), registry(), PREFIX)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with demo_client() as c:
        yield c


def conforms(path: str, status: int, body: dict[str, Any]) -> None:
    schema = OPENAPI["paths"][path]["get"]["responses"][str(status)]["content"]
    whole = {**schema["application/json"]["schema"], "components": OPENAPI["components"]}
    jsonschema.validate(body, whole, cls=jsonschema.Draft202012Validator)


async def ids(client: httpx.AsyncClient) -> dict[str, str]:
    inv = (await client.get(f"{PREFIX}/inventory?first=20&models=20")).json()["data"]
    sessions = inv["sessions"]["nodes"]
    models = [m for s in sessions for m in s["models"]["nodes"]]
    placed = next(m for m in models if m["placements"]["nodes"])
    node = placed["placements"]["nodes"][0]["node"]
    gpu = placed["placements"]["nodes"][0]["gpuIds"][0]
    return {"session": sessions[0]["id"], "model": placed["id"], "node": node, "gpu": gpu}


async def test_every_route_answers_real_ids_as_documented(client: httpx.AsyncClient) -> None:
    known = await ids(client)
    m, s = known["model"], known["session"]
    asked = [
        ("/inventory", "/inventory?first=3&models=2"),
        ("/models/{id}", f"/models/{m}"),
        ("/models/{id}/steps", f"/models/{m}/steps?first=3&ops=2"),
        ("/models/{id}/summary", f"/models/{m}/summary?steps=10"),
        ("/sessions/{id}/summary", f"/sessions/{s}/summary?worst=2"),
        ("/attention", "/attention?first=5"),
        ("/logs", f"/logs?model={m}&first=5&severity=INFO"),
        ("/models/{id}/activity", f"/models/{m}/activity?window=1800"),
        ("/nodes/{name}/activity", f"/nodes/{known['node']}/activity"),
        ("/gpus/{uuid}/activity", f"/gpus/{known['gpu']}/activity"),
    ]
    for path, url in asked:
        resp = await client.get(PREFIX + url)
        assert resp.status_code == 200, (url, resp.text[:300])
        body = resp.json()
        assert "errors" not in body, (url, body["errors"])
        conforms(path, 200, body)
    summary = (await client.get(f"{PREFIX}/models/{m}/summary")).json()["data"]["model"]
    assert summary["id"] == m and summary["summary"]["verdict"]


async def test_a_route_answers_what_graphql_answers_to_its_document(
    client: httpx.AsyncClient,
) -> None:
    known = await ids(client)
    rest = (await client.get(f"{PREFIX}/models/{known['model']}")).json()
    text = registry()["model"].text
    body = {"query": text, "variables": {"id": known["model"]}}
    graphql = (await client.post(f"{PREFIX}/graphql", json=body)).json()
    assert _steady(rest["data"]) == _steady(graphql["data"])
    assert rest["data"]["model"]["workers"]["nodes"]


def _steady(value: Any) -> Any:
    """Without the ages measured from each request's own "now"."""
    if isinstance(value, dict):
        ages = ("heartbeatAgeSeconds", "waitingSeconds")
        return {k: _steady(v) for k, v in value.items() if k not in ages}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


async def test_errors_keep_their_codes_as_statuses(client: httpx.AsyncClient) -> None:
    cases = [
        ("/models/no-such-model", 404, "NOT_FOUND"),
        ("/models/no-such-model/summary", 404, "NOT_FOUND"),
        ("/sessions/no-such-session/summary", 404, "NOT_FOUND"),
        ("/nodes/no-such-node/activity", 404, "NOT_FOUND"),
        ("/no-such-route", 404, "NOT_FOUND"),
        ("/inventory?first=0", 400, "BAD_INPUT"),
        ("/inventory?first=abc", 400, "BAD_INPUT"),
        ("/inventory?state=OPEN", 400, "BAD_INPUT"),
        ("/inventory?frist=3", 400, "BAD_INPUT"),
        ("/inventory?first=1&first=2", 400, "BAD_INPUT"),
        ("/inventory?after=not-a-cursor", 400, "BAD_INPUT"),
        ("/logs", 400, "BAD_INPUT"),
        ("/logs?model=x&since=yesterday", 400, "BAD_INPUT"),
        ("/logs?model=x&since=2026-01-01T00:00:00", 400, "BAD_INPUT"),
        ("/nodes/n/activity?window=-5", 400, "BAD_INPUT"),
        ("/nodes/n/activity?window=nan", 400, "BAD_INPUT"),
        ("/nodes/Not_A_Node/activity", 400, "BAD_INPUT"),
        ("/models/bad%20id", 400, "BAD_INPUT"),
        # A slash or a newline in an id: refused by the published pattern, not unrouted.
        ("/models/a%2Fb/summary", 400, "BAD_INPUT"),
        ("/models/a%0Ab", 400, "BAD_INPUT"),
        ("/attention?first=21", 400, "BAD_INPUT"),
        ("/query?query=", 400, "BAD_INPUT"),
    ]
    for url, status, code in cases:
        resp = await client.get(PREFIX + url)
        body = resp.json()
        assert resp.status_code == status, (url, resp.status_code, body)
        assert body["errors"][0]["extensions"]["code"] == code, (url, body)
        assert body["errors"][0]["message"], url
    named = (await client.get(f"{PREFIX}/inventory?first=abc")).json()["errors"][0]
    assert named["extensions"]["parameter"] == "first" and "integer" in named["message"]


async def test_pages_go_on_by_cursor_to_the_end(client: httpx.AsyncClient) -> None:
    seen: list[str] = []
    url: str | None = f"{PREFIX}/inventory?first=2&models=1"
    total: int | None = None
    for _ in range(50):
        assert url is not None
        body = (await client.get(url)).json()
        conforms("/inventory", 200, body)
        page = body["data"]["sessions"]
        total = page["totalCount"]
        seen += [s["id"] for s in page["nodes"]]
        url = body["next"]
        if url is None:
            break
        assert "after=" in url and "first=2" in url
    assert url is None
    assert total is not None and len(seen) == len(set(seen)) == total > 2


async def test_raw_promql_is_off_by_default_as_in_graphql() -> None:
    # The demo turns it on for its own series; a plain serve does not.
    from openrl_inspect.adapters.redis import RedisStateStore
    from support.harness import app_client, fake_server

    async with app_client(RedisStateStore.in_memory(fake_server())) as client:
        resp = await client.get(f"{PREFIX}/query", params={"query": "up"})
    assert resp.status_code == 403
    assert resp.json()["errors"][0]["extensions"]["code"] == "RAW_QUERY_DISABLED"


async def test_the_limits_of_graphql_hold() -> None:
    async with demo_client(settings=Settings(bounds=Bounds(max_nodes=50))) as client:
        resp = await client.get(f"{PREFIX}/inventory?first=10&models=20")
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["extensions"]["code"] == "QUERY_TOO_COSTLY"


async def test_routes_need_a_principal_and_a_viewer_is_refused_raw_promql(
    tmp_path: Path,
) -> None:
    token = new_token()
    path = tmp_path / "tokens"
    write_lines(path, token_line(token, "alice", owners=["alice"]))
    async with demo_client(authenticator=TokenAuthenticator(str(path))) as client:
        assert (await client.get(f"{PREFIX}/attention")).status_code == 401
        assert (await client.get(f"{PREFIX}/openapi.json")).status_code == 200
        auth = {"authorization": f"Bearer {token}"}
        assert (await client.get(f"{PREFIX}/attention", headers=auth)).status_code == 200
        raw = await client.get(f"{PREFIX}/query", params={"query": "up"}, headers=auth)
    assert raw.status_code == 403
    assert raw.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_the_request_log_names_the_document_and_its_codes(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "openrl_inspect.request")
    await client.get(f"{PREFIX}/models/no-such-model/summary")
    await client.get(f"{PREFIX}/inventory?first=0")
    lines = [r for r in caplog.records if r.name == "openrl_inspect.request"]
    assert [(r.operation, r.codes) for r in lines] == [  # type: ignore[attr-defined]
        ("model_summary", ["NOT_FOUND"]),
        ("inventory", ["BAD_INPUT"]),
    ]


async def test_inventory_filters_its_page_by_owner_and_model_state(
    client: httpx.AsyncClient,
) -> None:
    whole = (await client.get(f"{PREFIX}/inventory?first=50")).json()["data"]["sessions"]["nodes"]
    owner = whole[0]["owner"]
    resp = await client.get(f"{PREFIX}/inventory?first=50&owner={owner}&modelState=ACTIVE")
    body = resp.json()
    conforms("/inventory", 200, body)
    sessions = body["data"]["sessions"]["nodes"]
    assert sessions and {s["owner"] for s in sessions} == {owner}
    assert len(sessions) < len(whole)  # another owner's sessions were there, and left out
    states = {m["state"] for s in sessions for m in s["models"]["nodes"]}
    assert states == {"ACTIVE"}


async def test_inventory_reads_an_owners_sessions_before_the_page_is_cut(
    client: httpx.AsyncClient,
) -> None:
    whole = (await client.get(f"{PREFIX}/inventory?first=50&models=1")).json()["data"]
    assert not whole["sessions"]["pageInfo"]["hasNextPage"]  # every live session
    nodes = whole["sessions"]["nodes"]
    # An owner other than the newest session's: a page of one read first and filtered
    # after would be empty for it.
    owner = next(s["owner"] for s in reversed(nodes) if s["owner"] != nodes[0]["owner"])
    mine = [s["id"] for s in nodes if s["owner"] == owner]
    seen: list[str] = []
    after = ""
    while True:
        resp = await client.get(f"{PREFIX}/inventory?first=1&models=1&owner={owner}{after}")
        conforms("/inventory", 200, resp.json())
        page = resp.json()["data"]["sessions"]
        assert page["totalCount"] == len(mine)  # exact, not the count of a page
        assert len(page["nodes"]) == 1  # every page full: filtered before the cap
        seen += [s["id"] for s in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = f"&after={page['pageInfo']['endCursor']}"
    assert seen == mine  # the same order as the whole list, each once


async def test_a_backend_down_is_503_and_a_part_missing_is_200_with_errors() -> None:
    from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
    from openrl_inspect.simulator import SimConfig
    from support.harness import app_client, fake_server, populate
    from support.ports import free_port

    # Nothing listens there: every Redis call fails.
    dead = RedisSettings(url=f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.5)
    async with app_client(RedisStateStore.from_settings(dead)) as client:
        down = await client.get(f"{PREFIX}/attention")
    assert down.status_code == 503
    error = down.json()["errors"][0]["extensions"]
    assert error["code"].startswith("BACKEND_") and error["backend"] == "redis"
    conforms("/attention", 503, down.json())

    # Redis alone: a model answers, its live pods (Kubernetes) cannot.
    import fakeredis

    server = fake_server()
    writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(writer, SimConfig(seed=3, sessions=1))
    model = sorted(sim.models)[0]
    async with app_client(RedisStateStore.in_memory(server)) as client:
        part = await client.get(f"{PREFIX}/models/{model}")
    body = part.json()
    assert part.status_code == 200 and body["data"]["model"]["id"] == model
    assert body["data"]["model"]["pods"] is None
    assert "BACKEND_NOT_CONFIGURED" in {e["extensions"]["code"] for e in body["errors"]}
    conforms("/models/{id}", 200, body)

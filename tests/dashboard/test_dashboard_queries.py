"""Each dashboard page's one GraphQL document: valid, within the default limits, cheap
enough to refresh every few seconds, and answered without errors by the demo."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import parse, validate
from openrl_inspect.cli.demo import DemoSettings, demo_backends
from openrl_inspect.core.settings import Bounds
from openrl_inspect.execution.admission import cost_limits
from openrl_inspect.execution.cost import query_cost
from openrl_inspect.web.app import create_app
from openrl_inspect.web.health import HealthSettings
from support.tree import ROOT
from support.types import api_types

QUERIES = ROOT / "static" / "ui" / "queries"
PAGES = ["overview", "model", "session", "cluster"]
ENDPOINT = "/api/v1/inspect/graphql"


def document(name: str) -> str:
    return (QUERIES / f"{name}.graphql").read_text(encoding="utf-8")


def test_every_page_has_its_document_and_no_other_is_there() -> None:
    assert sorted(p.stem for p in QUERIES.glob("*.graphql")) == sorted(PAGES)


@pytest.mark.parametrize("name", PAGES)
def test_document_is_valid_and_within_the_default_limits(name: str) -> None:
    limits = Bounds()
    schema = api_types()
    doc = parse(document(name))
    assert [e.message for e in validate(schema, doc)] == []
    # Variables left out take their defaults, as the page sends them (ids are required
    # and do not change the cost).
    variables = {"id": "x"} if name in ("model", "session") else {}
    cost = query_cost(schema, doc, None, variables, cost_limits(limits))
    assert cost.exceeded is None, cost
    # A page refreshes every few seconds: it must never queue behind expensive queries.
    assert cost.nodes < limits.expensive_nodes, cost
    assert cost.aliases <= limits.max_aliases


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def client() -> AsyncIterator[httpx.AsyncClient]:
    demo = DemoSettings(tick_s=3600)
    app = create_app(lambda: demo_backends(demo), health=HealthSettings(interval_s=0))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://i", timeout=60) as c,
    ):
        yield c


async def ask(client: httpx.AsyncClient, name: str, variables: dict[str, Any]) -> Any:
    resp = await client.post(ENDPOINT, json={"query": document(name), "variables": variables})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body.get("errors") is None, body["errors"]
    return body["data"]


@pytest.mark.anyio
async def test_the_demo_answers_every_page_in_full(client: httpx.AsyncClient) -> None:
    overview = await ask(client, "overview", {})
    assert overview["attention"]["models"], "the demo has models that need a person"
    sessions = overview["sessions"]["nodes"]
    # Every live model is on one of the overview's pages.
    models = [m for s in sessions for m in s["models"]["nodes"]]
    page = overview["sessions"]["pageInfo"]
    while page["hasNextPage"]:
        more = (await ask(client, "overview", {"after": page["endCursor"]}))["sessions"]
        models += [m for s in more["nodes"] for m in s["models"]["nodes"]]
        page = more["pageInfo"]
    assert len(models) == overview["attention"]["scanned"]
    cluster = await ask(client, "cluster", {})
    assert cluster["capacity"]["total"] > 0 and cluster["nodes"]["nodes"]
    session = await ask(client, "session", {"id": sessions[0]["id"]})
    assert session["session"]["id"] == sessions[0]["id"]
    for brief in overview["attention"]["models"]:
        mid = brief["model"]["id"]
        model = (await ask(client, "model", {"id": mid}))["model"]
        assert model["id"] == mid
        assert model["summary"]["verdict"] == brief["verdict"]


@pytest.mark.anyio
async def test_the_model_document_pages_and_filters_logs(client: httpx.AsyncClient) -> None:
    overview = await ask(client, "overview", {})
    busy = next(
        m["id"]
        for s in overview["sessions"]["nodes"]
        for m in s["models"]["nodes"]
        if m["state"] == "ACTIVE"
    )
    first = (await ask(client, "model", {"id": busy}))["model"]["logs"]
    assert first["nodes"]
    severe = await ask(client, "model", {"id": busy, "severity": "WARNING"})
    kept = {line["severity"] for line in severe["model"]["logs"]["nodes"]}
    assert kept <= {"WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"}
    if first["pageInfo"]["hasNextPage"]:
        after = first["pageInfo"]["endCursor"]
        older = (await ask(client, "model", {"id": busy, "logsAfter": after}))["model"]["logs"]
        assert older["nodes"] and older["nodes"][0] != first["nodes"][0]


def test_the_documents_are_shipped_with_the_package() -> None:
    # package-data ships static/**: the dashboard needs no file outside static/ui.
    assert Path(QUERIES).is_dir() and (ROOT / "static" / "ui" / "index.html").is_file()


@pytest.mark.anyio
@pytest.mark.parametrize(("page", "connection"), [("overview", "sessions"), ("cluster", "nodes")])
async def test_a_page_asks_for_one_page_and_the_next_on_demand(
    client: httpx.AsyncClient, page: str, connection: str
) -> None:
    """The overview and the cluster pages never ask for every row at once: a first page
    with its cursor, and the next page from it (the dashboard's pager)."""
    first = (await ask(client, page, {}))[connection]
    info = first["pageInfo"]
    assert len(first["nodes"]) <= {"sessions": 5, "nodes": 50}[connection]
    assert info["hasNextPage"] == (first["totalCount"] > len(first["nodes"]))
    if info["hasNextPage"]:
        after = (await ask(client, page, {"after": info["endCursor"]}))[connection]
        names = {"sessions": "id", "nodes": "name"}[connection]
        seen = {n[names] for n in first["nodes"]}
        assert after["nodes"] and not seen & {n[names] for n in after["nodes"]}

"""Persisted queries, Apollo-style: the dashboard's and the routes' documents by their
SHA-256, with or without the text; an unknown hash answered as Apollo answers it; and a
setting (flag > environment > default) that runs the registered documents only."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from openrl_inspect.cli import demo
from openrl_inspect.cli import main as cli
from openrl_inspect.cli.launch import AppFactory
from openrl_inspect.core.principal import ANONYMOUS_OPERATOR
from openrl_inspect.core.settings import Settings, Switches
from openrl_inspect.execution import Request, Runner, registry
from openrl_inspect.execution.registry import sha256
from openrl_inspect.execution.schema import build_schema
from openrl_inspect.web.app import PREFIX
from openrl_inspect.web.guard import HttpSettings
from openrl_inspect.web.health import HealthSettings
from support.demo_app import demo_client

pytestmark = pytest.mark.anyio
GRAPHQL = f"{PREFIX}/graphql"


def persisted(digest: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": digest}}


async def test_a_registered_document_runs_by_its_hash_alone() -> None:
    overview = registry()["ui/overview"]
    async with demo_client() as client:
        by_text = (await client.post(GRAPHQL, json={"query": overview.text})).json()
        by_hash = await client.post(GRAPHQL, json={"extensions": persisted(overview.sha256)})
        # Apollo's GET form: the extensions as a JSON query parameter.
        params = {"extensions": json.dumps(persisted(registry()["attention"].sha256)),
                  "variables": json.dumps({"first": 2})}  # fmt: skip
        by_get = await client.get(GRAPHQL, params=params)
        both = await client.post(
            GRAPHQL, json={"query": overview.text, "extensions": persisted(overview.sha256)}
        )
    assert by_hash.status_code == 200 and "errors" not in by_hash.json()
    assert by_hash.json()["data"].keys() == by_text["data"].keys()
    assert by_hash.json()["data"]["attention"]["scanned"] == by_text["data"]["attention"]["scanned"]
    assert by_get.status_code == 200 and len(by_get.json()["data"]["attention"]["models"]) <= 2
    assert both.status_code == 200 and "errors" not in both.json()


async def test_an_unknown_hash_is_answered_as_apollo_answers_it() -> None:
    async with demo_client() as client:
        resp = await client.post(GRAPHQL, json={"extensions": persisted("ab" * 32)})
        mismatch = await client.post(
            GRAPHQL, json={"query": "{ attention { needing } }", "extensions": persisted("ab" * 32)}
        )
        bad = await client.post(GRAPHQL, json={"extensions": {"persistedQuery": {"version": 1}}})
    assert resp.status_code == 200
    assert resp.json() == {
        "errors": [
            {
                "message": "PersistedQueryNotFound",
                "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"},
            }
        ]
    }
    assert mismatch.status_code == 400 and "data" not in mismatch.json()
    assert mismatch.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert bad.status_code == 400 and bad.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"


def test_the_registry_holds_the_dashboards_and_the_routes_documents() -> None:
    names = {d.name for d in registry()}
    assert {"ui/overview", "ui/model", "ui/session", "ui/cluster"} <= names
    assert {"inventory", "model_summary", "logs", "attention", "prometheus_query"} <= names
    for d in registry():
        assert registry().by_hash(d.sha256) == d and d.sha256 == sha256(d.text)


@asynccontextmanager
async def cli_app(argv: list[str], env: Mapping[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    """The demo app as ``openrl-inspect demo`` builds it from ``argv`` and ``env`` (its
    settings read by ``main``; the app served here instead of on a socket)."""
    env = {"OPENRL_INSPECT_DEMO_TICK_S": "3600", **env}
    built: list[Any] = []

    def launch(args: Any, env: Mapping[str, str], listen: Any, build: AppFactory) -> int:
        built.append(build(HttpSettings(), HealthSettings(0))[0])
        return 0

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(demo, "launch", launch)
        assert cli.main(["demo", *argv], env) == 0
    (app,) = built
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        # The demo on loopback answers loopback names only (the DNS rebinding guard).
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30) as client,
    ):
        yield client


async def runs_free_text(argv: list[str], env: Mapping[str, str]) -> bool:
    async with cli_app(argv, env) as client:
        free = await client.post(GRAPHQL, json={"query": "{ attention(first: 1) { needing } }"})
        if free.status_code == 200:
            return True
        assert free.status_code == 403
        assert free.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_IN_LIST"
        # The registered ones still run: the dashboard's text, a hash, the REST routes.
        page = await client.post(GRAPHQL, json={"query": registry()["ui/overview"].text})
        assert page.status_code == 200 and "errors" not in page.json()
        rest = await client.get(f"{PREFIX}/attention?first=1")
        assert rest.status_code == 200
        return False


async def test_registered_only_comes_from_the_flag_then_the_environment() -> None:
    on = {"OPENRL_INSPECT_REGISTERED_ONLY": "true"}
    assert await runs_free_text([], {}) is True
    assert await runs_free_text([], on) is False
    assert await runs_free_text(["--registered-only"], {}) is False
    assert await runs_free_text(["--no-registered-only"], on) is True


async def test_registered_only_holds_for_the_runner_too() -> None:
    from openrl_inspect.adapters.redis import RedisStateStore
    from openrl_inspect.resolvers.context import Backends
    from support.harness import fake_server

    settings = Settings(switches=Switches(registered_only=True))
    runner = Runner(build_schema(settings.switches), settings)
    backends = Backends(state=RedisStateStore.in_memory(fake_server()))
    free = Request("{ attention(first: 1) { needing } }")
    refused = await runner.run(free, backends, ANONYMOUS_OPERATOR)
    assert refused.data is None and refused.codes == ["PERSISTED_QUERY_NOT_IN_LIST"]
    assert not refused.ran and "data" not in refused.body()
    attention = Request(registry()["attention"].text, {"first": 1})
    shipped = await runner.run(attention, backends, ANONYMOUS_OPERATOR)
    assert shipped.codes == [] and shipped.data is not None


async def test_free_text_without_one_query_is_refused_not_raised() -> None:
    from openrl_inspect.adapters.redis import RedisStateStore
    from openrl_inspect.resolvers.context import Backends
    from support.harness import fake_server

    runner = Runner(build_schema(), Settings())
    backends = Backends(state=RedisStateStore.in_memory(fake_server()))
    empty = await runner.run(Request(""), backends, ANONYMOUS_OPERATOR)
    assert empty.data is None and empty.codes == ["BAD_REQUEST"]
    comment = await runner.run(Request("# no operation\n"), backends, ANONYMOUS_OPERATOR)
    assert comment.data is None and comment.codes == ["GRAPHQL_PARSE_FAILED"]
    deep = "{ sessions { nodes { models { nodes { steps { nodes { number } } } } } } }"
    costly = await runner.run(Request(deep), backends, ANONYMOUS_OPERATOR, max_nodes=100)
    assert costly.codes == ["QUERY_TOO_COSTLY"] and "100 nodes" in costly.errors[0]["message"]

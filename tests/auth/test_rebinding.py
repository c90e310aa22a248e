"""The DNS rebinding guard: without authentication on loopback, only requests addressed
to a loopback name are answered (a page that rebinds its own name to 127.0.0.1 still
sends that name as Host), on every path that needs a principal."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.auth import Anonymous
from openrl_inspect.auth._gate import loopback_host
from openrl_inspect.cli.main import main
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.web import server
from openrl_inspect.web.app import create_app
from openrl_inspect.web.health import HealthSettings
from support.harness import fake_server

pytestmark = pytest.mark.anyio

QUERY = {"query": "{ sessions(first: 1) { totalCount } }"}


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.0.1:8080", "localhost:8080", "LOCALHOST", "app.localhost:9",
     "[::1]:8080", "[::1]", "127.3.4.5:1"],
)  # fmt: skip
def test_loopback_names(host: str) -> None:
    assert loopback_host(host)


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example",
     "10.0.0.1:8080", "[::ffff:10.0.0.1]:80", "", "[::1", "0.0.0.0:8080"],
)  # fmt: skip
def test_other_names(host: str) -> None:
    assert not loopback_host(host)


@asynccontextmanager
async def memory_backends() -> AsyncIterator[Backends]:
    yield Backends(state=RedisStateStore.in_memory(fake_server()))


async def _status(base_url: str, path: str, authenticator: Anonymous) -> int:
    app = create_app(memory_backends, authenticator=authenticator,
                     health=HealthSettings(interval_s=0))  # fmt: skip
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url=base_url) as client,
    ):
        if path.endswith("graphql"):
            resp = await client.post(path, json=QUERY)
        else:
            resp = await client.get(path)
        if resp.status_code == 403:
            assert resp.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        return resp.status_code


@pytest.mark.parametrize(
    "path", ["/api/v1/inspect/graphql", "/api/v1/inspect/attention", "/api/v1/inspect/inventory"]
)
async def test_a_rebound_name_is_refused_and_loopback_answered(path: str) -> None:
    guarded = Anonymous(loopback_only=True)
    assert await _status("http://evil.example:8080", path, guarded) == 403
    assert await _status("http://127.0.0.1:8080", path, guarded) == 200
    assert await _status("http://localhost:8080", path, guarded) == 200
    # Off loopback (opted in) there is no name to check against: anyone is answered.
    assert await _status("http://evil.example:8080", path, Anonymous()) == 200


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    apps: list[Any] = []
    monkeypatch.setattr(server, "serve", lambda app, *rest: apps.append(app))
    monkeypatch.setattr("openrl_inspect.telemetry.jsonlog.configure", lambda level: None)
    return apps


@pytest.mark.parametrize(("command", "host"), [("serve", "127.0.0.1"), ("demo", "localhost")])
async def test_serve_and_demo_on_loopback_refuse_a_rebound_name(
    served: list[Any], command: str, host: str
) -> None:
    env = {"OPENRL_INSPECT_OPEN_BROWSER": "false"}
    assert main([command, "--host", host, "--port", "1"], env) == 0
    transport = httpx.ASGITransport(app=served[0])
    async with httpx.AsyncClient(transport=transport, base_url="http://evil.example") as client:
        # The gate answers before any backend is asked: no lifespan needed.
        resp = await client.post("/api/v1/inspect/graphql", json=QUERY)
    assert resp.status_code == 403

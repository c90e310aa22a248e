"""The smaller findings of issue 25: the JWKS URL never logged, GraphiQL's static page
off with GraphiQL, the MCP endpoint's Origin check, and cursors sealed to the principal
whole (its owners too, not only its name)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import fakeredis
import httpx
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.core.principal import Principal, Role
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.resolvers.scope import holder
from openrl_inspect.telemetry.jsonlog import configure
from openrl_inspect.web.app import PREFIX, create_app
from openrl_inspect.web.guard import HttpSettings
from openrl_inspect.web.health import HealthSettings

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_httpx_does_not_log_request_urls_at_info() -> None:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        configure("info")
        assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)
        assert logging.getLogger("httpx").isEnabledFor(logging.WARNING)
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
        logging.getLogger("httpx").setLevel(logging.NOTSET)
        logging.getLogger("httpcore").setLevel(logging.NOTSET)


@asynccontextmanager
async def client(
    graphiql_on: bool, http: HttpSettings | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    store = RedisStateStore.in_memory(fakeredis.FakeServer())

    @asynccontextmanager
    async def backends() -> AsyncIterator[Backends]:
        yield Backends(state=store)

    app = create_app(
        backends, http=http, health=HealthSettings(interval_s=0), graphiql_on=graphiql_on
    )
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://inspector") as http_client,
    ):
        yield http_client


async def test_graphiqls_static_page_is_off_with_graphiql() -> None:
    async with client(graphiql_on=False) as off:
        for name in ("graphiql.html", "graphiql-init.js"):
            assert (await off.get(f"{PREFIX}/static/{name}")).status_code == 404
    async with client(graphiql_on=True) as on:
        assert (await on.get(f"{PREFIX}/static/graphiql.html")).status_code == 200


MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


async def test_the_mcp_endpoint_checks_origin() -> None:
    http = HttpSettings(cors_origins=("https://dash.example",))
    async with client(graphiql_on=False, http=http) as c:
        url = f"{PREFIX}/mcp"

        async def status(origin: str | None) -> int:
            headers = dict(MCP_HEADERS) | ({"origin": origin} if origin else {})
            return (await c.post(url, json=MCP_INIT, headers=headers)).status_code

        assert await status("https://evil.example") == 403
        assert await status("http://attacker.localhost:8000") == 403
        assert await status(None) == 200
        # Its own name too: a page the rebinding made "same origin" says nothing more.
        assert await status("http://inspector") == 403
        assert await status("https://dash.example") == 200


def test_a_cursor_is_sealed_to_the_owners_too() -> None:
    backends = Backends(state=RedisStateStore.in_memory(fakeredis.FakeServer()))
    one = Context.build(backends, Principal("alice", Role.VIEWER, frozenset({"alice"})))
    wider = Context.build(backends, Principal("alice", Role.VIEWER, frozenset({"alice", "bob"})))
    sealed = one.cursors.seal('["sessions", 1.0, "s-1"]', holder(one))
    assert one.cursors.unseal(sealed, holder(one)) == '["sessions", 1.0, "s-1"]'
    with pytest.raises(InvalidInput):
        wider.cursors.unseal(sealed, holder(wider))

"""The HTTP front: malformed bodies, body size, slow bodies, CORS, request ids and logs."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import fakeredis
import httpx
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.errors import BackendUnavailable
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.telemetry.jsonlog import JsonLines
from openrl_inspect.web.app import PREFIX, create_app
from openrl_inspect.web.guard import HttpSettings
from openrl_inspect.web.health import HealthSettings
from support.counting import CountingStore
from support.harness import GRAPHQL

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def client_for(
    store: Any, http: HttpSettings | None = None, health: HealthSettings | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    @asynccontextmanager
    async def backends() -> AsyncIterator[Backends]:
        yield Backends(state=store)

    app = create_app(backends, None, http, health or HealthSettings(interval_s=0))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://i") as client,
    ):
        yield client


@pytest.fixture
def store() -> CountingStore:
    return CountingStore(RedisStateStore.in_memory(fakeredis.FakeServer()))


GRAPHQL_RESPONSE = "application/graphql-response+json"
MALFORMED = [
    b"\xff\xfe\x00",  # not UTF-8
    '{"query": "{ sessions { totalCount } }", "x": "é"}'.encode("latin-1"),
    b"[" * 5000 + b"]" * 5000,  # RecursionError in the json module
    b'{"query": "{ sessions { totalCount } }", "variables": {"a": '
    + b"[" * 900
    + b"]" * 900
    + b"}}",
    b"123",
    b"null",
    b"true",
    b'"s"',
    b"[]",
    b'[{"query": "{ sessions { totalCount } }"}]',
    b"",
    b"{",
    b'{"query": NaN}',
    b'{"query": 1}',
    b'{"query": ["{ x }"]}',
    b'{"query": "{ sessions { totalCount } }", "variables": [1]}',
    b'{"query": "{ sessions { totalCount } }", "variables": "{}"}',
    b'{"query": "{ sessions { totalCount } }", "operationName": 5}',
    b'{"query": "{ sessions { totalCount } }", "operationName": {}}',
    b'{"query": "{ sessions { totalCount } }", "extensions": 7}',
    b"\xef\xbb\xbf{}",  # a byte-order mark
]


@pytest.mark.parametrize("body", MALFORMED)
async def test_every_malformed_body_gets_a_coded_request_error(
    store: CountingStore, body: bytes
) -> None:
    # Not a well-formed GraphQL request: a 400 whatever the media type, and no data.
    async with client_for(store) as client:
        legacy = await client.post(
            GRAPHQL, content=body, headers={"content-type": "application/json"}
        )
        strict = await client.post(
            GRAPHQL,
            content=body,
            headers={"content-type": "application/json", "accept": GRAPHQL_RESPONSE},
        )
    assert legacy.status_code == strict.status_code == 400, legacy.text
    for resp in (legacy, strict):
        assert "data" not in resp.json()
        assert resp.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert store.calls == 0


@pytest.mark.parametrize(
    "params",
    [
        {"query": "{ sessions { totalCount } }", "variables": "[" * 3000},
        {"query": "{ sessions { totalCount } }", "variables": "5"},
        {"query": "{ sessions { totalCount } }", "variables": "%ff"},
    ],
)
async def test_malformed_get_parameters_get_a_coded_request_error(
    store: CountingStore, params: dict[str, str]
) -> None:
    async with client_for(store) as client:
        resp = await client.get(GRAPHQL, params=params, headers={"accept": GRAPHQL_RESPONSE})
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"


async def test_an_unsupported_content_type_is_a_json_415(store: CountingStore) -> None:
    async with client_for(store) as client:
        resp = await client.post(GRAPHQL, content=b"{}", headers={"content-type": "text/plain"})
    assert resp.status_code == 415
    assert resp.json()["errors"][0]["extensions"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


async def test_a_large_body_is_refused_while_it_streams(store: CountingStore) -> None:
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        for _ in range(1000):  # 64 MiB if it were all read
            sent += 1
            yield b" " * 65536

    async with client_for(store, HttpSettings(max_body_bytes=256 * 1024)) as client:
        declared = await client.post(
            GRAPHQL, content=b" " * 300_000, headers={"content-type": "application/json"}
        )
        streamed = await client.post(
            GRAPHQL, content=chunks(), headers={"content-type": "application/json"}
        )
    for resp in (declared, streamed):
        assert resp.status_code == 413
        assert resp.json()["errors"][0]["extensions"]["code"] == "BODY_TOO_LARGE"
    assert sent < 10, f"{sent} chunks were read before the refusal"


async def test_a_slow_body_times_out_with_408(store: CountingStore) -> None:
    async def trickle() -> AsyncIterator[bytes]:
        yield b'{"query": '
        await asyncio.sleep(2)
        yield b'"{ sessions { totalCount } }"}'

    async with client_for(store, HttpSettings(body_timeout_s=0.3)) as client:
        resp = await client.post(
            GRAPHQL, content=trickle(), headers={"content-type": "application/json"}
        )
    assert resp.status_code == 408
    assert resp.json()["errors"][0]["extensions"]["code"] == "REQUEST_TIMEOUT"


async def test_cors_is_closed_by_default_and_opens_to_named_origins(store: CountingStore) -> None:
    preflight = {
        "origin": "https://evil.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    query = {"query": "{ sessions { totalCount } }"}
    async with client_for(store) as client:
        closed = await client.options(GRAPHQL, headers=preflight)
        simple = await client.post(GRAPHQL, json=query, headers={"origin": "https://evil.example"})
    ok = HttpSettings(cors_origins=("https://ui.example",))
    async with client_for(store, ok) as client:
        opened = await client.options(
            GRAPHQL, headers={**preflight, "origin": "https://ui.example"}
        )
        other = await client.options(GRAPHQL, headers=preflight)
    assert "access-control-allow-origin" not in closed.headers and closed.status_code >= 400
    assert "access-control-allow-origin" not in simple.headers
    assert opened.status_code == 200
    assert opened.headers["access-control-allow-origin"] == "https://ui.example"
    assert "access-control-allow-origin" not in other.headers


def _lines(caplog: pytest.LogCaptureFixture, logger: str) -> list[dict[str, Any]]:
    formatter = JsonLines()
    return [json.loads(formatter.format(r)) for r in caplog.records if r.name == logger]


async def test_each_request_logs_one_json_line_with_id_operation_duration_and_codes(
    store: CountingStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="openrl_inspect.request")
    async with client_for(store) as client:
        ok = await client.post(
            GRAPHQL,
            json={"query": "query Mine { sessions { totalCount } }"},
            headers={"x-request-id": "abc-123"},
        )
        bad = await client.post(GRAPHQL, json={"query": '{ model(id: "nope") { id } }'})
        await client.post(
            GRAPHQL,
            content=b"null",
            headers={
                "content-type": "application/json",
                "accept": "application/graphql-response+json",
            },
        )
    assert ok.headers["x-request-id"] == "abc-123"
    assert len(bad.headers["x-request-id"]) == 32
    lines = _lines(caplog, "openrl_inspect.request")
    assert [line["status"] for line in lines] == [200, 200, 400]
    first, second, third = lines
    assert first["request_id"] == "abc-123" and first["operation"] == "Mine"
    assert first["codes"] == [] and first["duration_ms"] >= 0 and first["path"] == GRAPHQL
    assert second["codes"] == ["NOT_FOUND"]
    assert third["codes"] == ["BAD_REQUEST"]


async def test_a_backend_going_down_and_coming_back_is_logged_once_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="openrl_inspect.web.health")
    store = RedisStateStore.in_memory(fakeredis.FakeServer())
    healthy = store.ready

    async def down() -> None:
        raise BackendUnavailable("redis", "Redis is unreachable")

    async with client_for(store, health=HealthSettings(interval_s=0.05)) as client:
        await asyncio.sleep(0.2)
        store.ready = down  # type: ignore[method-assign]
        await asyncio.sleep(0.3)
        assert (await client.get(f"{PREFIX}/readyz")).status_code == 503
        store.ready = healthy  # type: ignore[method-assign]
        await asyncio.sleep(0.3)
    lines = _lines(caplog, "openrl_inspect.web.health")
    assert [(line["message"], line["backend"]) for line in lines] == [
        ("backend down", "redis"),
        ("backend up", "redis"),
    ]
    assert lines[0]["code"] == "BACKEND_UNAVAILABLE" and lines[0]["level"] == "warning"

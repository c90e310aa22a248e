"""The dashboard is served as is: its routes, its module graph, nothing from outside."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.web.app import create_app
from openrl_inspect.web.health import HealthSettings
from support.tree import ROOT

UI = ROOT / "static" / "ui"
STATIC = ROOT / "static"
_IMPORT = re.compile(r"""(?:import|export)\s[^;]*?from\s+["']([^"']+)["']""", re.S)
_URL = re.compile(r"""https?://""")


pytestmark = pytest.mark.anyio


@asynccontextmanager
async def _empty_redis() -> AsyncIterator[Backends]:
    store = RedisStateStore.in_memory()
    try:
        yield Backends(state=store)
    finally:
        await store.aclose()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(_empty_redis, health=HealthSettings(interval_s=0))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c,
    ):
        yield c


async def test_root_and_the_slashless_path_redirect_to_the_dashboard(
    client: httpx.AsyncClient,
) -> None:
    for path in ("/", "/api/v1/inspect/ui"):
        resp = await client.get(path)
        assert resp.status_code in (302, 307), path
        assert resp.headers["location"].endswith("/api/v1/inspect/ui/")


async def test_the_page_its_modules_and_documents_are_served(client: httpx.AsyncClient) -> None:
    page = await client.get("/api/v1/inspect/ui/")
    assert page.status_code == 200 and 'type="module"' in page.text
    for path in sorted(UI.rglob("*")):
        if path.is_file():
            rel = path.relative_to(UI).as_posix()
            resp = await client.get(f"/api/v1/inspect/ui/{rel}")
            assert resp.status_code == 200, rel
            if rel.endswith(".js"):
                assert "javascript" in resp.headers["content-type"], rel


async def test_graphiql_stays_where_it_was(client: httpx.AsyncClient) -> None:
    assert (await client.get("/api/v1/inspect/graphiql")).status_code == 200


def _modules() -> list[Path]:
    return sorted(UI.rglob("*.js"))


def test_every_import_resolves_to_a_served_file() -> None:
    seen = 0
    for module in _modules():
        for target in _IMPORT.findall(module.read_text(encoding="utf-8")):
            assert target.startswith("."), f"{module.name}: bare import {target!r} needs a bundler"
            resolved = (module.parent / target).resolve()
            if "static/vendor" in target:
                # ../static/vendor/... from /api/v1/inspect/ui/ is the static mount.
                rest = target.split("static/", 1)[1]
                resolved = STATIC / rest
            assert resolved.is_file(), f"{module.name}: {target}"
            seen += 1
    assert seen >= 10


def test_nothing_is_loaded_from_outside_the_server() -> None:
    for path in [*_modules(), UI / "index.html", UI / "style.css"]:
        text = path.read_text(encoding="utf-8")
        assert not _URL.search(text), f"{path.name} names an external URL"
        assert "@import" not in text

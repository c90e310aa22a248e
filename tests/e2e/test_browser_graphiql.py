"""GraphiQL in a real headless Chromium, against the demo over a real socket."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
from support.browser import chromium_page
from support.ports import free_port, wait_for_port

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "openrl_inspect.cli", "demo", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, timeout_s=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(15)


def test_graphiql_runs_a_query_with_nothing_loaded_from_outside(demo_url: str) -> None:
    requested: list[str] = []
    with chromium_page() as page:
        page.on("request", lambda req: requested.append(req.url))
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{demo_url}/api/v1/inspect/graphiql", wait_until="networkidle")
        page.wait_for_selector(".graphiql-container", timeout=15_000)
        with page.expect_response(
            lambda r: (
                r.url.endswith("/graphql")
                and r.request.method == "POST"
                and "sessions" in (r.request.post_data or "")
            )
        ) as resp_info:
            page.click(".graphiql-execute-button")
        body = json.loads(resp_info.value.text())
        page.wait_for_function(
            "() => document.querySelector('.result-window')?.innerText.includes('totalCount')",
            timeout=15_000,
        )
        result_text = page.inner_text(".result-window")
    assert errors == []
    assert "errors" not in body and body["data"]["sessions"]["totalCount"] > 0
    assert "totalCount" in result_text
    hosts = {urlparse(u).hostname for u in requested if not u.startswith("data:")}
    assert hosts == {"127.0.0.1"}, hosts

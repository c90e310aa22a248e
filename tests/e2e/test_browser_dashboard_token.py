"""The dashboard behind bearer tokens: a 401 shows a small token form; a wrong token is
said so; the right one (kept in sessionStorage for the tab) brings the data, and every
GraphQL request then carries it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.cli.demo import DemoSettings, demo_backends
from openrl_inspect.web.app import create_app
from openrl_inspect.web.health import HealthSettings
from support.auth_harness import new_token, token_line, write_lines
from support.dashboard import dashboard
from support.ports import free_port, wait_for_port

pytestmark = pytest.mark.browser

TOKEN = new_token()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo's world behind a tokens-file authenticator, on a real socket."""
    tokens: Path = tmp_path_factory.mktemp("auth") / "tokens.jsonl"
    write_lines(tokens, token_line(TOKEN, "alice", "operator"))
    auth = TokenAuthenticator(str(tokens), interval_s=0)
    auth.start()
    demo = DemoSettings(sessions=2, models_per_session=2)
    app = create_app(
        lambda: demo_backends(demo), None, None, HealthSettings(interval_s=0), auth, False
    )
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for_port(port, timeout_s=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


def only_refusals(problems: list[str]) -> list[str]:
    # Chromium logs each 401 answer as a console error; those are expected here.
    return [p for p in problems if "status of 401" not in p]


def test_a_token_form_on_401_then_the_data(base: str) -> None:
    graphql_auth: list[Any] = []
    with dashboard(base) as ui:
        ui.page.on(
            "request",
            lambda r: (
                graphql_auth.append(r.headers.get("authorization"))
                if r.url.endswith("/graphql")
                else None
            ),
        )
        ui.open("#/overview")
        ui.page.wait_for_selector("[data-token-form]")
        assert "needs a bearer token" in ui.page.inner_text("[data-token-form]")
        assert ui.page.query_selector("[data-model]") is None

        ui.page.fill("[data-token-input]", "not-" + TOKEN)
        ui.page.click("[data-token-form] button")
        ui.page.wait_for_selector("text=The token was not accepted")

        ui.page.fill("[data-token-input]", TOKEN)
        ui.page.click("[data-token-form] button")
        ui.page.wait_for_selector("[data-model]", timeout=30_000)
        assert ui.page.query_selector("[data-token-form]") is None
        stored = ui.page.evaluate("() => sessionStorage.getItem('openrl-inspect-token')")
        assert stored == TOKEN
        shown = ui.page.eval_on_selector_all("[data-model]", "els => els.map(e => e.dataset.model)")

        # A reload of the tab keeps the token: no form, straight to the data.
        ui.page.reload()
        ui.page.wait_for_selector("[data-model]", timeout=30_000)
        assert ui.page.query_selector("[data-token-form]") is None
        assert only_refusals(ui.problems) == []
        hosts_ok = {u.split("/")[2] for u in ui.requested if not u.startswith("data:")}
        assert hosts_ok == {base.split("/")[2]}
    assert graphql_auth[0] is None and f"Bearer {TOKEN}" in graphql_auth
    assert graphql_auth[-1] == f"Bearer {TOKEN}"
    models = {m["id"] for m in overview_models(base)}
    assert shown and set(shown) <= models


def overview_models(base: str) -> list[dict[str, Any]]:
    # The page's own document, asked with the token: what the page should show.
    import json
    import urllib.request

    from support.tree import ROOT

    query = (ROOT / "static" / "ui" / "queries" / "overview.graphql").read_text()
    req = urllib.request.Request(
        f"{base}/api/v1/inspect/graphql",
        json.dumps({"query": query, "variables": {}}).encode(),
        {"content-type": "application/json", "authorization": f"Bearer {TOKEN}"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        data = json.loads(resp.read())["data"]
    # The rows of the first page of sessions, and the attention list above them.
    rows = [m for s in data["sessions"]["nodes"] for m in s["models"]["nodes"]]
    return rows + [m["model"] for m in data["attention"]["models"]]

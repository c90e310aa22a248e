"""Bearer tokens from a file of digests: 401s, rotation without restart, bad lines, the
request log, and which paths stay open."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.web.app import PREFIX
from support.auth_harness import auth_client, new_token, token_line, write_lines
from support.harness import GRAPHQL

pytestmark = pytest.mark.anyio

QUERY = "{ sessions { totalCount } }"
RAW = '{ prometheusQuery(query: "up") { resultType } }'


@pytest.fixture
def tokens(tmp_path: Path) -> tuple[Path, str, str]:
    """A tokens file with a viewer and an operator; (path, viewer token, operator token)."""
    viewer, operator = new_token(), new_token()
    path = tmp_path / "tokens.jsonl"
    write_lines(
        path,
        "# issued by hash-token",
        token_line(viewer, "alice", owners=["alice", "rl-team"]),
        token_line(operator, "ops", "operator"),
    )
    return path, viewer, operator


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def authenticator(path: Path) -> TokenAuthenticator:
    auth = TokenAuthenticator(str(path), interval_s=0)
    auth.start()
    return auth


def assert_401(resp: Any, secret: str | None = None) -> None:
    assert resp.status_code == 401, resp.text
    assert resp.headers["www-authenticate"].startswith("Bearer")
    body = resp.json()
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert set(body) == {"errors"}
    if secret is not None:
        assert secret not in resp.text and secret not in str(resp.headers)


async def test_graphql_without_a_credential_is_401_on_get_and_post(
    tokens: tuple[Path, str, str],
) -> None:
    path, _, _ = tokens
    async with auth_client(authenticator(path)) as client:
        post = await client.post(GRAPHQL, json={"query": QUERY})
        get = await client.get(GRAPHQL, params={"query": QUERY})
        ide = await client.get(GRAPHQL, headers={"accept": "text/html"})
    for resp in (post, get, ide):
        assert_401(resp)
        assert "invalid_token" not in resp.headers["www-authenticate"]


async def test_a_valid_token_is_answered_and_a_wrong_one_refused(
    tokens: tuple[Path, str, str],
) -> None:
    path, viewer, _ = tokens
    wrong = new_token()
    async with auth_client(authenticator(path)) as client:
        ok = await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(viewer))
        refused = await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(wrong))
        basic = await client.get(
            GRAPHQL, params={"query": QUERY}, headers={"authorization": "Basic YTpi"}
        )
        junk = await client.get(
            GRAPHQL, params={"query": QUERY}, headers={"authorization": "Bearer a b\x7f"}
        )
    assert ok.status_code == 200 and ok.json() == {"data": {"sessions": {"totalCount": 0}}}
    assert_401(refused, wrong)
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert_401(basic)
    assert_401(junk)


async def test_the_role_reaches_the_resolvers(tokens: tuple[Path, str, str]) -> None:
    """The raw PromQL field is the operators': the principal went through the context."""
    path, viewer, operator = tokens
    async with auth_client(authenticator(path)) as client:
        as_viewer = (await client.post(GRAPHQL, json={"query": RAW}, headers=bearer(viewer))).json()
        as_operator = (
            await client.post(GRAPHQL, json={"query": RAW}, headers=bearer(operator))
        ).json()
    assert as_viewer["data"]["prometheusQuery"] is None
    assert as_viewer["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert as_viewer["errors"][0]["path"] == ["prometheusQuery"]
    assert "errors" not in as_operator
    assert as_operator["data"]["prometheusQuery"]["resultType"] == "vector"


async def test_a_rewritten_file_takes_effect_without_a_restart(
    tokens: tuple[Path, str, str],
) -> None:
    path, old, operator = tokens
    new = new_token()
    auth = authenticator(path)
    async with auth_client(auth) as client:
        before = await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(old))
        write_lines(path, token_line(new, "alice"), token_line(operator, "ops", "operator"))
        after_old = await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(old))
        after_new = await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(new))
        path.unlink()
        gone = await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(new))
    assert before.status_code == 200
    assert_401(after_old, old)
    assert after_new.status_code == 200
    # A deleted file admits nobody (fail closed).
    assert_401(gone, new)


async def test_a_malformed_line_spoils_only_itself(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good, pasted = new_token(), new_token()
    path = tmp_path / "tokens.jsonl"
    write_lines(
        path,
        "{not json",
        # An operator pasted the token itself where its digest belongs.
        f'{{"sha256": "{pasted}", "name": "bob"}}',
        '{"sha256": "' + "0" * 64 + '", "name": "carol", "role": "admin"}',
        '{"sha256": "' + "1" * 64 + '", "name": "dave", "owners": "dave"}',
        token_line(good, "alice"),
    )
    caplog.set_level(logging.INFO, "openrl_inspect")
    async with auth_client(authenticator(path)) as client:
        ok = await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(good))
        nope = await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(pasted))
    assert ok.status_code == 200
    assert_401(nope, pasted)
    bad = [r for r in caplog.records if r.getMessage() == "bad entry skipped"]
    assert [r.__dict__["line"] for r in bad] == [1, 2, 3, 4]
    assert pasted not in caplog.text
    assert all(pasted not in str(r.__dict__) for r in caplog.records)


async def test_an_expired_entry_is_refused(tmp_path: Path) -> None:
    token = new_token()
    path = tmp_path / "tokens.jsonl"
    write_lines(path, token_line(token, "alice", expires="2001-01-01T00:00:00Z"))
    async with auth_client(authenticator(path)) as client:
        resp = await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(token))
    assert_401(resp, token)


async def test_refusals_are_counted_in_the_request_log_without_the_secret(
    tokens: tuple[Path, str, str], caplog: pytest.LogCaptureFixture
) -> None:
    path, viewer, _ = tokens
    wrong = new_token()
    caplog.set_level(logging.INFO, "openrl_inspect.request")
    async with auth_client(authenticator(path)) as client:
        await client.post(GRAPHQL, json={"query": QUERY})
        await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(wrong))
        await client.post(GRAPHQL, json={"query": QUERY}, headers=bearer(viewer))
    lines = [r.__dict__ for r in caplog.records if r.name == "openrl_inspect.request"]
    assert [(line["status"], line["auth_failure"]) for line in lines] == [
        (401, "missing"),
        (401, "unknown_token"),
        (200, None),
    ]
    assert [line["codes"] for line in lines[:2]] == [["UNAUTHENTICATED"]] * 2
    assert lines[2]["principal"] == "alice"
    assert all(s not in caplog.text for s in (wrong, viewer))


async def test_liveness_and_static_assets_are_open_readiness_says_less(
    tokens: tuple[Path, str, str],
) -> None:
    path, viewer, operator = tokens
    async with auth_client(authenticator(path), graphiql_on=False) as client:
        live = await client.get(f"{PREFIX}/healthz")
        live_bad = await client.get(f"{PREFIX}/healthz", headers=bearer(new_token()))
        asset = await client.get(f"{PREFIX}/ui/app.js")
        graphiql_asset = await client.get(f"{PREFIX}/static/graphiql-init.js")
        probe = await client.get(f"{PREFIX}/readyz")
        as_viewer = await client.get(f"{PREFIX}/readyz", headers=bearer(viewer))
        as_operator = await client.get(f"{PREFIX}/readyz", headers=bearer(operator))
        bad = await client.get(f"{PREFIX}/readyz", headers=bearer(new_token()))
        page = await client.get(f"{PREFIX}/graphiql")
        other = await client.get("/elsewhere")
    assert live.status_code == 200 and live.json()["ok"] is True
    # Liveness answers without a credential; a wrong one is refused as anywhere else.
    assert_401(live_bad)
    assert asset.status_code == 200
    assert probe.status_code == 200 and probe.json() == {"ready": True}
    assert as_viewer.json()["backends"][0] == {"name": "redis", "ok": True}
    assert "latency_ms" in as_operator.json()["backends"][0]
    assert_401(bad)
    # GraphiQL off: its page and its own static files are not served.
    assert page.status_code == 404 and graphiql_asset.status_code == 404
    assert_401(other)


async def test_graphiql_when_turned_on_is_served_but_queries_still_need_a_token(
    tokens: tuple[Path, str, str],
) -> None:
    path, viewer, _ = tokens
    async with auth_client(authenticator(path), graphiql_on=True) as client:
        page = await client.get(f"{PREFIX}/graphiql")
        ide = await client.get(GRAPHQL, headers={"accept": "text/html", **bearer(viewer)})
        query = await client.get(GRAPHQL, params={"query": QUERY})
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    assert ide.status_code == 200
    assert_401(query)

"""Planted secrets (a Redis password, bearer tokens) appear in no log line, no answer and
no header, whatever the requests and whether Redis is reachable."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from openrl_inspect.adapters.redis import RedisSettings, connect
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.cli.serve import BackendSettings, for_serve, real_backends
from openrl_inspect.web.app import PREFIX, create_app
from openrl_inspect.web.health import HealthSettings
from redis.asyncio import Redis
from support.auth_harness import log_text, new_token, token_line, write_lines
from support.harness import GRAPHQL
from support.ports import free_port

pytestmark = pytest.mark.anyio

PASSWORD = "pw-PLANTED-7f3a9c"
QUERIES = [
    "{ sessions { totalCount } }",
    '{ session(id: "s-1") { id owner } }',
    '{ prometheusQuery(query: "up") { resultType } }',
]


@asynccontextmanager
async def client_for(redis: RedisSettings, tokens: Path) -> AsyncIterator[httpx.AsyncClient]:
    auth = TokenAuthenticator(str(tokens), interval_s=0)
    auth.start()
    config = BackendSettings(redis=redis)
    health = HealthSettings(interval_s=0)
    # /healthz names the Redis it reads: from the same settings that hold the password.
    who = for_serve(config, {})
    app = create_app(lambda: real_backends(config), None, None, health, auth, False, who)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://i") as client,
    ):
        yield client


def redis_settings(tmp_path: Path, in_url: bool) -> RedisSettings:
    port = free_port()  # nothing listens: every Redis call fails
    if in_url:
        return RedisSettings(url=f"redis://:{PASSWORD}@127.0.0.1:{port}/0", timeout_s=0.5)
    secret = tmp_path / "redis-password"
    secret.write_text(PASSWORD + "\n")
    return RedisSettings(
        url=f"redis://127.0.0.1:{port}/0", password_file=str(secret), timeout_s=0.5
    )


@pytest.mark.parametrize("in_url", [True, False], ids=["in-url", "in-file"])
async def test_no_secret_leaves_in_logs_or_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, in_url: bool
) -> None:
    viewer, operator, wrong = new_token(), new_token(), new_token()
    tokens = tmp_path / "tokens.jsonl"
    write_lines(tokens, token_line(viewer, "alice"), token_line(operator, "ops", "operator"))
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    async with client_for(redis_settings(tmp_path, in_url), tokens) as client:
        for token in (None, viewer, operator, wrong):
            headers = {"authorization": f"Bearer {token}"} if token else {}
            for path in ("/healthz", "/readyz", "/graphiql", "/nowhere"):
                resp = await client.get(f"{PREFIX}{path}", headers=headers)
                seen.append(f"{resp.status_code} {resp.headers} {resp.text}")
            for query in QUERIES:
                resp = await client.post(GRAPHQL, json={"query": query}, headers=headers)
                seen.append(f"{resp.status_code} {resp.headers} {resp.text}")
    answers, logs = "\n".join(seen), log_text(caplog.records)
    # The requests did reach a failing Redis and were logged: the checks below had
    # something to search.
    assert "BACKEND_UNAVAILABLE" in answers and "UNAUTHENTICATED" in answers
    assert '"principal":"ops"' in logs and '"auth_failure":"unknown_token"' in logs
    # /healthz told the operator which Redis it is (so the password was near at hand).
    assert '"endpoint":"redis://127.0.0.1:' in answers.replace(" ", "")
    for secret in (PASSWORD, viewer, operator, wrong):
        assert secret not in answers
        assert secret not in logs


def test_the_password_is_in_no_repr_and_reaches_the_client(tmp_path: Path) -> None:
    settings = redis_settings(tmp_path, in_url=False)
    assert PASSWORD not in repr(settings) and PASSWORD not in repr(BackendSettings(settings))
    assert settings.secret() == PASSWORD
    client = connect(settings)
    assert not settings.cluster and isinstance(client, Redis)
    assert client.connection_pool.connection_kwargs["password"] == PASSWORD
    env_only = RedisSettings(password=PASSWORD)
    assert PASSWORD not in repr(env_only) and env_only.secret() == PASSWORD

"""``openrl-inspect summary``: against a running inspector's URL (the token from the
environment or a file, never argv) and directly against Redis, as a table or JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.simulator import SimConfig
from support.auth_harness import new_token, token_line, write_lines
from support.harness import populate
from support.live_server import serve_demo


def summary(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openrl_inspect.cli", "summary", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    token = new_token()
    tokens = tmp_path_factory.mktemp("auth") / "tokens"
    write_lines(tokens, token_line(token, "ops", role="operator"))
    with serve_demo(authenticator=TokenAuthenticator(str(tokens))) as url:
        yield url, token, tokens


def test_attention_then_a_models_diagnosis_over_the_url(served: tuple[str, str, Path]) -> None:
    url, token, _ = served
    env = {"OPENRL_INSPECT_CLIENT_URL": url, "OPENRL_INSPECT_CLIENT_TOKEN": token}
    listed = summary("--attention", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    first = json.loads(listed.stdout)["data"]["attention"]["models"][0]
    table = summary(first["model"]["id"], env=env)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert f"model {first['model']['id']}" in lines[0] and f"verdict {first['verdict']}" in lines[0]
    assert any(first["topCause"]["kind"] in line for line in lines)
    assert "where to look next:" in lines
    attention = summary("--attention", env=env)
    assert first["model"]["id"] in attention.stdout and "need a person" in attention.stdout


def test_the_token_comes_from_a_file_and_a_missing_one_is_refused(
    served: tuple[str, str, Path], tmp_path: Path
) -> None:
    url, token, _ = served
    secret = tmp_path / "token"
    secret.write_text(token + "\n")
    ok = summary("--attention", "--url", url, "--token-file", str(secret))
    assert ok.returncode == 0, ok.stderr
    refused = summary("--attention", "--url", url)
    assert refused.returncode == 1
    assert "UNAUTHENTICATED" in refused.stdout
    missing = summary("no-such-model", "--url", url, env={"OPENRL_INSPECT_CLIENT_TOKEN": token})
    assert missing.returncode == 1 and "error NOT_FOUND" in missing.stdout


def test_exactly_one_question_is_asked() -> None:
    both = summary("model-1", "--attention")
    assert both.returncode == 2 and "give a MODEL_ID" in both.stderr


@pytest.mark.anyio
async def test_directly_against_redis(redis_server: Any) -> None:
    url = redis_server.url.rsplit("/", 1)[0] + "/7"
    client = aioredis.Redis.from_url(url, decode_responses=True)
    await client.flushdb()
    await populate(client, SimConfig(seed=3, sessions=2))
    await client.aclose()
    listed = summary("--attention", "--json", "--redis-url", url)
    assert listed.returncode == 0, listed.stderr
    worst = json.loads(listed.stdout)["data"]["attention"]["models"][0]
    table = summary(worst["model"]["id"], "--redis-url", url)
    assert table.returncode == 0, table.stderr
    assert f"verdict {worst['verdict']}" in table.stdout.splitlines()[0]
    session = summary("--session", worst["model"]["sessionId"], "--json", "--redis-url", url)
    assert json.loads(session.stdout)["data"]["session"]["summary"]["models"] >= 1

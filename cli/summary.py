"""``openrl-inspect summary``: a model's diagnosis, a session's summary or the attention
list, as a compact table or JSON.

``summary`` asks a running inspector (``--url``, or ``OPENRL_INSPECT_CLIENT_URL``) over
its REST routes with a bearer token from ``OPENRL_INSPECT_CLIENT_TOKEN`` or the file
``--token-file`` / ``OPENRL_INSPECT_CLIENT_TOKEN_FILE`` (never a token on the command
line), or, without a URL, reads Redis directly through the same documents.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from openrl_inspect.cli.serve import BackendSettings, backend_settings, real_backends
from openrl_inspect.cli.table import render
from openrl_inspect.core.codes import error
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.core.principal import ANONYMOUS_OPERATOR
from openrl_inspect.core.settings import Settings, check_url, load
from openrl_inspect.execution import Request, Runner, build_schema

TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ClientSettings:
    """A running inspector to ask. Env prefix ``OPENRL_INSPECT_CLIENT_``."""

    url: str | None = None
    token: str | None = None
    token_file: str | None = None

    def __post_init__(self) -> None:
        check_url("url", self.url, ("http", "https"))

    def bearer(self) -> str | None:
        if self.token_file:
            try:
                return Path(self.token_file).read_text(encoding="utf-8").strip() or None
            except OSError as exc:
                raise SettingsError(f"token file {self.token_file!r}: {exc.strerror}") from None
        return self.token or None

    def __repr__(self) -> str:  # never the token
        return f"ClientSettings(url={self.url!r}, token_file={self.token_file!r})"


def run(args: argparse.Namespace, env: Mapping[str, str], inspector: Settings) -> int:
    asked = [bool(args.model), bool(args.session), bool(args.attention)]
    if sum(asked) != 1:
        print(
            "openrl-inspect summary: give a MODEL_ID, --session ID or --attention", file=sys.stderr
        )
        return 2
    client = load(
        ClientSettings,
        "OPENRL_INSPECT_CLIENT_",
        env,
        {"url": args.url, "token_file": args.token_file},
    )
    if args.attention:
        first = 10 if args.first is None else args.first
        name, path, variables = "attention", f"/attention?first={first}", {"first": first}
    elif args.session:
        name, path, variables = (
            "session_summary",
            f"/sessions/{quote(args.session)}/summary",
            {"id": args.session},
        )
    else:
        name, path, variables = (
            "model_summary",
            f"/models/{quote(args.model)}/summary",
            {"id": args.model},
        )
    if client.url:
        status, body = _over_http(client, path)
    else:
        config = backend_settings(args, env)
        status, body = asyncio.run(_direct(config, inspector, name, variables))
    if args.json:
        print(json.dumps(body, indent=2))
    else:
        print(render(name, body))
    return 0 if status == 200 and not body.get("errors") else 1


def _over_http(client: ClientSettings, path: str) -> tuple[int, dict[str, Any]]:
    assert client.url is not None
    token = client.bearer()
    headers = {"authorization": f"Bearer {token}"} if token else {}
    url = client.url.rstrip("/") + "/api/v1/inspect" + path
    try:
        resp = httpx.get(url, headers=headers, timeout=TIMEOUT_S)
        body = resp.json()
    except (httpx.HTTPError, ValueError) as exc:
        problem = error(f"could not ask {client.url}: {type(exc).__name__}", "UNREACHABLE")
        return 0, {"data": None, "errors": [problem]}
    return resp.status_code, body


async def _direct(
    config: BackendSettings, inspector: Settings, name: str, variables: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    runner = Runner(build_schema(inspector.switches), inspector)
    async with real_backends(config) as backends:
        document = Request(runner.documents[name].text, variables)
        answer = await runner.run(document, backends, ANONYMOUS_OPERATOR)
    return 200, answer.body()

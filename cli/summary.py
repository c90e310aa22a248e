"""The commands for agents and scripts: ``mcp`` (the MCP server over stdio) and
``summary`` (a model's, a session's or the attention list, as a compact table or JSON).

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
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from openrl_inspect.core import settings

if TYPE_CHECKING:
    from openrl_inspect.core.settings import Limits
    from openrl_inspect.resolvers.context import Backends

COMMANDS = ("mcp", "summary")
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ClientSettings:
    """A running inspector to ask. Env prefix ``OPENRL_INSPECT_CLIENT_``."""

    url: str | None = None
    token: str | None = None
    token_file: str | None = None

    def bearer(self) -> str | None:
        if self.token_file:
            try:
                return Path(self.token_file).read_text(encoding="utf-8").strip() or None
            except OSError as exc:
                raise settings.SettingsError(f"token file: {exc.strerror}") from None
        return self.token or None

    def __repr__(self) -> str:  # never the token
        return f"ClientSettings(url={self.url!r}, token_file={self.token_file!r})"


def _backend_flags(p: argparse.ArgumentParser) -> None:
    """Where the backends are, as ``serve`` takes them (``cli.backend_settings``)."""
    p.add_argument("--redis-url", help="redis:// URL of OpenRL's Redis")
    p.add_argument("--redis-cluster", action="store_true", default=None)
    p.add_argument("--redis-timeout", type=float, help="seconds per Redis call (default 2)")
    p.add_argument("--redis-max-connections", type=int)
    p.add_argument("--in-cluster", action="store_true", default=None)
    p.add_argument("--kubeconfig")
    p.add_argument("--kube-context")
    p.add_argument("--prometheus-url")
    p.add_argument("--logging-project")


def add_commands(sub: Any) -> None:
    mcp = sub.add_parser("mcp", help="serve the MCP tools over stdio (for a local MCP client)")
    _backend_flags(mcp)
    mcp.add_argument("--demo", action="store_true", help="over the demo's simulated cluster")
    mcp.add_argument("--seed", type=int, help="the demo's seed (default 7)")

    summary = sub.add_parser(
        "summary", help="a model's diagnosis, a session's summary or the attention list"
    )
    summary.add_argument("model", nargs="?", help="the model's id")
    summary.add_argument("--session", help="a session's summary instead")
    summary.add_argument("--attention", action="store_true", help="the models needing a person")
    summary.add_argument("--json", action="store_true", help="the answer as JSON")
    summary.add_argument("--url", help="a running inspector (default: read Redis directly)")
    summary.add_argument("--token-file", help="a file holding the bearer token")
    _backend_flags(summary)


def run(args: argparse.Namespace, env: Mapping[str, str], limits: Limits) -> int:
    if args.command == "mcp":
        return _mcp(args, env, limits)
    return _summary(args, env, limits)


def _opener(
    args: argparse.Namespace, env: Mapping[str, str]
) -> Any:  # a factory of AbstractAsyncContextManager[Backends]
    from openrl_inspect.cli.main import backend_settings
    from openrl_inspect.cli.serve import real_backends

    config = backend_settings(args, env)
    return lambda: real_backends(config)


def _mcp(args: argparse.Namespace, env: Mapping[str, str], limits: Limits) -> int:
    import logging

    from openrl_inspect.agents.mcp import stdio

    # stdout carries JSON-RPC: every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if args.demo:
        from openrl_inspect.cli.demo import DemoSettings, demo_backends

        demo = settings.load(
            DemoSettings,
            "OPENRL_INSPECT_DEMO_",
            env,
            {"seed": args.seed, "redis_url": args.redis_url},
        )

        def opener() -> AbstractAsyncContextManager[Backends]:
            return demo_backends(demo)
    else:
        opener = _opener(args, env)
    asyncio.run(stdio.serve(opener, limits))
    return 0


def _summary(args: argparse.Namespace, env: Mapping[str, str], limits: Limits) -> int:
    from openrl_inspect.cli.table import render

    asked = [bool(args.model), bool(args.session), bool(args.attention)]
    if sum(asked) != 1:
        print(
            "openrl-inspect summary: give a MODEL_ID, --session ID or --attention", file=sys.stderr
        )
        return 2
    client = settings.load(
        ClientSettings,
        "OPENRL_INSPECT_CLIENT_",
        env,
        {"url": args.url, "token_file": args.token_file},
    )
    if args.attention:
        name, path, variables = "attention", "/attention", {"first": 10}
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
        status, body = asyncio.run(_direct(_opener(args, env), limits, name, variables))
    if args.json:
        print(json.dumps(body, indent=2))
    else:
        print(render(name, body))
    return 0 if status == 200 and not body.get("errors") else 1


def _over_http(client: ClientSettings, path: str) -> tuple[int, dict[str, Any]]:
    import httpx

    assert client.url is not None
    token = client.bearer()
    headers = {"authorization": f"Bearer {token}"} if token else {}
    url = client.url.rstrip("/") + "/api/v1/inspect" + path
    try:
        resp = httpx.get(url, headers=headers, timeout=TIMEOUT_S)
        body = resp.json()
    except (httpx.HTTPError, ValueError) as exc:
        problem = {
            "message": f"could not ask {client.url}: {type(exc).__name__}",
            "extensions": {"code": "UNREACHABLE"},
        }
        return 0, {"data": None, "errors": [problem]}
    return resp.status_code, body


async def _direct(
    opener: Any, limits: Limits, name: str, variables: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    from openrl_inspect.core.principal import ANONYMOUS_OPERATOR
    from openrl_inspect.execution import Engine
    from openrl_inspect.execution.schema import build_schema

    engine = Engine(build_schema(limits), limits)
    async with opener() as backends:
        answer = await engine.run(backends, ANONYMOUS_OPERATOR, name, variables)
    return 200, answer.body()

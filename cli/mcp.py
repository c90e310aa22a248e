"""``openrl-inspect mcp``: the MCP tools over stdio, for a local MCP client that starts
the inspector as a subprocess, over the real backends or the demo's."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager

from openrl_inspect.agents.mcp import stdio
from openrl_inspect.cli.demo import DemoSettings, demo_backends
from openrl_inspect.cli.serve import backend_settings, real_backends
from openrl_inspect.core import settings
from openrl_inspect.core.settings import Settings
from openrl_inspect.resolvers.context import Backends


def run(args: argparse.Namespace, env: Mapping[str, str], inspector: Settings) -> int:
    # stdout carries JSON-RPC: every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    opener: Callable[[], AbstractAsyncContextManager[Backends]]
    if args.demo:
        demo = settings.load(
            DemoSettings,
            "OPENRL_INSPECT_DEMO_",
            env,
            {"seed": args.seed, "redis_url": args.redis_url},
        )

        def opener() -> AbstractAsyncContextManager[Backends]:
            return demo_backends(demo)
    else:
        config = backend_settings(args, env)

        def opener() -> AbstractAsyncContextManager[Backends]:
            return real_backends(config)

    asyncio.run(stdio.serve(opener, inspector))
    return 0

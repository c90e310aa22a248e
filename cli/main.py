"""``openrl-inspect``: serve the API on real backends, run the demo, export the schema,
issue bearer tokens; for agents and scripts, the MCP tools over stdio and a summary.

This module is the command line (every command and flag) and its dispatch; each command
runs in a module of its own. Settings come from the command line, then the environment,
then defaults.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from openrl_inspect import auth
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.core.settings import SERVE_FRESH_FOR_S, Settings


def _listen_flags(p: argparse.ArgumentParser) -> None:
    """Where to listen, and the request limits most often tuned from the command line."""
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    # Checked in ``listen.parse_port``: a bad value is one line, not argparse's usage.
    p.add_argument("--port", help="listen port, 1-65535 (default 8080)")
    p.add_argument("--log-level", choices=["critical", "error", "warning", "info", "debug"])
    p.add_argument("--max-body-bytes", type=int, help="largest request body (default 1 MiB)")
    p.add_argument(
        "--request-deadline", type=float, help="seconds a GraphQL request may run (default 30)"
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        help="an origin browsers may call the API from (repeat; default none)",
    )
    p.add_argument(
        "--no-introspection",
        dest="introspection",
        action="store_false",
        default=None,
        help="refuse introspection and hide field suggestions",
    )
    p.add_argument(
        "--introspection",
        dest="introspection",
        action="store_true",
        default=None,
        help="allow introspection (default: on, off once authentication is on)",
    )
    p.add_argument(
        "--registered-only",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run only the registered documents (persisted queries; default off)",
    )


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openrl-inspect", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the API over real backends")
    _listen_flags(serve)
    serve.add_argument("--redis-url", help="redis:// or rediss:// URL of OpenRL's Redis")
    serve.add_argument(
        "--redis-cluster", action="store_true", default=None, help="the URL is a Redis Cluster"
    )
    serve.add_argument("--redis-timeout", type=float, help="seconds per Redis call (default 2)")
    serve.add_argument(
        "--redis-max-connections", type=int, help="Redis connection pool size (default 32)"
    )
    serve.add_argument(
        "--in-cluster",
        action="store_true",
        default=None,
        help="read Kubernetes with the pod's service account",
    )
    serve.add_argument("--kubeconfig", help="read Kubernetes through this kubeconfig")
    serve.add_argument("--kube-context", help="the kubeconfig context to use")
    serve.add_argument("--prometheus-url", help="Prometheus HTTP API root (Managed Prometheus too)")
    serve.add_argument("--logging-project", help="Google Cloud project whose Cloud Logging to read")
    auth.add_flags(serve)

    demo = sub.add_parser("demo", help="serve the API over a live simulated cluster")
    _listen_flags(demo)
    demo.add_argument("--redis-url", help="fill this Redis instead of an in-process fakeredis")
    demo.add_argument("--seed", type=int, help="simulation seed (default 7)")
    demo.add_argument(
        "--open-browser",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="open the dashboard in a browser (env OPENRL_INSPECT_OPEN_BROWSER; default: "
        "only when a graphical browser is usable: not in CI, over SSH or without a display)",
    )
    demo.add_argument(
        "--allow-unauthenticated-non-loopback",
        action="store_true",
        default=None,
        help="serve the demo on a non-loopback address: it has no authentication, so "
        "anyone who reaches it sees everything",
    )

    _track_command(sub)
    _reindex_command(sub)

    auth.add_hash_token_command(sub)
    _agent_commands(sub)  # mcp, summary

    export = sub.add_parser("export-schema", help="print or write the GraphQL SDL")
    export.add_argument("path", nargs="?", help="file to write (default: stdout)")
    return parser


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


def _agent_commands(sub: Any) -> None:
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
    summary.add_argument(
        "--first", type=int, help="with --attention: how many models to list (default 10)"
    )
    summary.add_argument("--json", action="store_true", help="the answer as JSON")
    summary.add_argument("--url", help="a running inspector (default: read Redis directly)")
    summary.add_argument("--token-file", help="a file holding the bearer token")
    _backend_flags(summary)


def _reindex_command(sub: Any) -> None:
    reindex = sub.add_parser(
        "reindex",
        help="build the model indexes for data written before them (the writing side, "
        "with the recorder's credentials)",
    )
    reindex.add_argument("--redis-url", help="redis:// URL of OpenRL's Redis")
    reindex.add_argument("--redis-cluster", action="store_true", default=None)


def _track_command(sub: Any) -> None:
    track = sub.add_parser(
        "track-placements",
        help="record placements from Kueue Workloads into Redis (the writing side)",
    )
    track.add_argument("--redis-url", help="redis:// URL of OpenRL's Redis")
    track.add_argument("--redis-cluster", action="store_true", default=None)
    track.add_argument("--in-cluster", action="store_true", default=None)
    track.add_argument("--kubeconfig")
    track.add_argument("--kube-context")
    track.add_argument("--namespace", help="only Workloads of this namespace")
    track.add_argument("--interval", type=float, help="seconds between passes (default 5)")
    track.add_argument(
        "--leader-elect",
        action="store_true",
        default=None,
        help="run as one of several replicas: write only while holding a Lease",
    )
    track.add_argument("--lease-name", help="the Lease (default openrl-inspect-tracker)")
    track.add_argument("--lease-namespace", help="the Lease's namespace (default openrl-inspect)")


#: The shell's statuses for a process ended by SIGINT (Ctrl+C) and by SIGPIPE.
INTERRUPTED = 130
BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    args = parser().parse_args(argv)
    env = os.environ if environ is None else environ
    try:
        status = _dispatch(args, env)
        sys.stdout.flush()  # inside the try: a reader that left is a broken pipe here
        return status
    except SettingsError as exc:
        print(f"openrl-inspect: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl+C: the server has shut down (uvicorn re-raises the signal after it).
        return INTERRUPTED
    except BrokenPipeError:
        # ``summary | head -1``: the reader has gone; stdout is pointed at /dev/null so
        # that the interpreter's own flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE


def inspector_settings(args: argparse.Namespace, env: Mapping[str, str]) -> Settings:
    """The inspector's settings: the environment, then these commands' flags; ``serve``
    with its own freshness window unless the environment sets one."""
    fresh = None
    if args.command == "serve" and "OPENRL_INSPECT_FRESH_FOR_S" not in env:
        fresh = SERVE_FRESH_FOR_S
    return Settings.from_environment(
        env,
        {
            "request_deadline_s": getattr(args, "request_deadline", None),
            "introspection": getattr(args, "introspection", None),
            "registered_only": getattr(args, "registered_only", None),
            "fresh_for_s": fresh,
        },
        {"request_deadline_s": "--request-deadline"},
    )


# lazy: a command's module loads when it runs (the web stack, the backends' SDKs and the
# simulator take seconds to import): ``--help`` and a settings error answer at once.
def _dispatch(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    if args.command == "hash-token":
        return auth.hash_token(args, env)
    settings = inspector_settings(args, env)
    if args.command == "export-schema":
        from openrl_inspect.execution import build_schema

        sdl = build_schema(settings.switches).as_str() + "\n"
        if args.path:
            Path(args.path).write_text(sdl, encoding="utf-8")
        else:
            sys.stdout.write(sdl)
        return 0
    if args.command == "track-placements":
        from openrl_inspect.cli import track

        return track.run(args, env)
    if args.command == "reindex":
        from openrl_inspect.cli import reindex

        return reindex.run(args, env)
    if args.command == "summary":
        from openrl_inspect.cli import summary

        return summary.run(args, env, settings)
    if args.command == "mcp":
        from openrl_inspect.cli import mcp

        return mcp.run(args, env, settings)
    if args.command == "serve":
        from openrl_inspect.cli import serve

        return serve.run(args, env, settings)
    from openrl_inspect.cli import demo

    return demo.run(args, env, settings)

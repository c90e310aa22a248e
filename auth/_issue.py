"""``openrl-inspect hash-token``: issue a bearer token, storing only its SHA-256.

A new token is drawn from ``secrets`` (256 bits) unless ``--stdin`` gives one. With a
tokens file (``--tokens-file`` or ``OPENRL_INSPECT_AUTH_TOKENS_FILE``) the entry is
added to it, atomically (a new file renamed over the old, mode 0600), and the token is
printed on stdout, once; ``--replace`` drops the name's earlier entries in the same
step (rotation). Without a file the entry is printed on stdout and the token on stderr.
The token is never written anywhere else, and never taken from the command line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import orjson
from openrl_inspect.auth._entries import entry_line, token_digest
from openrl_inspect.auth._settings import ENV_PREFIX
from openrl_inspect.auth._tokens import MAX_TOKEN, TOKEN_SYNTAX
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.core.principal import Role


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hash-token",
        help="issue a bearer token for the tokens file (only its SHA-256 is stored)",
    )
    p.add_argument("--name", required=True, help="the principal's name (shown in the logs)")
    p.add_argument("--role", choices=[r.value for r in Role], default=Role.VIEWER.value)
    p.add_argument(
        "--owner",
        action="append",
        default=[],
        help="an owner whose sessions a viewer sees (repeat; default the name itself)",
    )
    p.add_argument("--expires", help="when the token stops working, ISO 8601 with a zone")
    p.add_argument(
        "--stdin", action="store_true", help="hash the token read from stdin, not a new one"
    )
    p.add_argument("--tokens-file", help="add the entry to this file (else print it)")
    p.add_argument(
        "--replace", action="store_true", help="drop the name's earlier entries (rotation)"
    )


def run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    generated = not args.stdin
    token = secrets.token_urlsafe(32) if generated else sys.stdin.readline().strip()
    if not token or len(token) > MAX_TOKEN or not TOKEN_SYNTAX.fullmatch(token):
        raise SettingsError(
            "the token read from stdin is not a bearer token (RFC 6750 characters, "
            f"1 to {MAX_TOKEN} of them)"
        )
    try:
        line = entry_line(
            token_digest(token).hex(), args.name, Role(args.role), args.owner, args.expires
        )
    except ValueError as exc:
        raise SettingsError(f"hash-token: {exc}") from None
    path = args.tokens_file or env.get(f"{ENV_PREFIX}TOKENS_FILE")
    if not path:
        print(line)
        if generated:
            print(f"token for {args.name} (shown once, not stored): {token}", file=sys.stderr)
        return 0
    try:
        write_entry(Path(path), line, args.name if args.replace else None)
    except OSError as exc:
        raise SettingsError(f"hash-token: the tokens file {path!r}: {exc.strerror}") from None
    print(f"added an entry for {args.name} to {path}", file=sys.stderr)
    if generated:
        print(token)
    return 0


def write_entry(path: Path, line: str, replace: str | None) -> None:
    """Add ``line`` to the file; with ``replace``, drop that name's entries first."""
    kept: list[str] = []
    if path.exists():
        for old in path.read_text(encoding="utf-8").splitlines():
            if replace is None or _name_of(old) != replace:
                kept.append(old)
    kept.append(line)
    fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(kept) + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _name_of(line: str) -> str | None:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    name = obj.get("name") if isinstance(obj, dict) else None
    return name.strip() if isinstance(name, str) else None

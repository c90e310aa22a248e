"""Principal entries: the lines of a tokens file and of a principals file.

One JSON object per line; blank lines and lines starting with ``#`` are skipped::

    {"sha256": "<64 hex>", "name": "alice", "role": "viewer", "owners": ["alice", "rl-team"]}
    {"sha256": "<64 hex>", "name": "ops-bot", "role": "operator", "expires": "2026-01-01T00:00:00Z"}

A tokens file's lines need ``sha256`` (the SHA-256 of the token, never the token); a
principals file's lines leave it out. ``owners`` defaults to the name itself, ``role``
to viewer, ``expires`` (ISO 8601 or epoch seconds) to never. A bad line is skipped and
logged with its number and what is wrong, never with its content (it may hold a secret
pasted by mistake); the other lines stand.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.core.principal import Principal, Role

log = logging.getLogger("openrl_inspect.auth")

MAX_ENTRIES = 10_000
MAX_OWNERS = 1_000
MAX_NAME = 256
_HEX64 = re.compile(r"[0-9a-f]{64}")
_FIELDS = {"sha256", "name", "role", "owners", "expires", "note"}


class BadEntry(SettingsError):
    """What is wrong with one line; safe to log (it quotes no value)."""


@dataclass(frozen=True, slots=True)
class Entry:
    principal: Principal
    digest: bytes | None = None
    expires: float | None = None


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def parse_entries(data: bytes, what: str, *, hashed: bool) -> tuple[Entry, ...]:
    """The good entries of a file's ``data``; ``hashed``: each must carry ``sha256``."""
    found: list[Entry] = []
    seen: set[bytes | str] = set()
    bad = 0
    for number, line in _lines(data):
        if len(found) >= MAX_ENTRIES:
            log.warning(
                "entries past the limit ignored", extra={"file": what, "limit": MAX_ENTRIES}
            )
            break
        try:
            entry = parse_entry(line, hashed=hashed)
            key: bytes | str = entry.digest if entry.digest is not None else entry.principal.name
            if key in seen:
                raise BadEntry("the same token or name as an earlier line")
        except BadEntry as exc:
            bad += 1
            log.warning(
                "bad entry skipped", extra={"file": what, "line": number, "problem": str(exc)}
            )
            continue
        seen.add(key)
        found.append(entry)
    log.info("entries read", extra={"file": what, "entries": len(found), "bad_lines": bad})
    return tuple(found)


def _lines(data: bytes) -> Iterator[tuple[int, str]]:
    text = data.decode("utf-8", errors="replace")
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            yield number, line


def parse_entry(line: str, *, hashed: bool) -> Entry:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise BadEntry("not a JSON object") from None
    if not isinstance(obj, dict):
        raise BadEntry("not a JSON object")
    unknown = set(obj) - _FIELDS
    if unknown:
        raise BadEntry(f"unknown fields {sorted(unknown)}")
    name = _name(obj.get("name"))
    role = _role(obj.get("role", Role.VIEWER.value))
    owners = _owners(obj.get("owners"), name)
    digest = _digest(obj.get("sha256"), hashed)
    expires = _expires(obj.get("expires"))
    return Entry(Principal(name, role, owners), digest, expires)


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadEntry("name: a non-empty string is required")
    if len(value) > MAX_NAME or not value.isprintable():
        raise BadEntry(f"name: at most {MAX_NAME} printable characters")
    return value.strip()


def _role(value: Any) -> Role:
    try:
        return Role(value)
    except ValueError:
        raise BadEntry("role: viewer or operator") from None


def _owners(value: Any, name: str) -> frozenset[str]:
    if value is None:
        return frozenset({name})
    if not isinstance(value, list) or not all(isinstance(o, str) and o for o in value):
        raise BadEntry("owners: a list of non-empty strings")
    if len(value) > MAX_OWNERS:
        raise BadEntry(f"owners: at most {MAX_OWNERS}")
    return frozenset(value)


def _digest(value: Any, hashed: bool) -> bytes | None:
    if not hashed:
        if value is not None:
            raise BadEntry("sha256: not used in this file")
        return None
    if not isinstance(value, str) or not _HEX64.fullmatch(value.lower()):
        # Never echoed: an operator may have pasted the token itself here.
        raise BadEntry("sha256: 64 hexadecimal digits (the token's SHA-256) are required")
    return bytes.fromhex(value)


def _expires(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise BadEntry("expires: ISO 8601 or epoch seconds") from None
        if moment.tzinfo is None:
            raise BadEntry("expires: needs a time zone (Z or +00:00)")
        return moment.timestamp()
    raise BadEntry("expires: ISO 8601 or epoch seconds")


def entry_line(
    digest_hex: str, name: str, role: Role, owners: list[str], expires: str | None
) -> str:
    """One tokens-file line, as ``hash-token`` writes it (checked by the parser)."""
    obj: dict[str, Any] = {"sha256": digest_hex, "name": name, "role": role.value}
    if owners:
        obj["owners"] = owners
    if expires:
        obj["expires"] = expires
    line = orjson.dumps(obj).decode()
    parse_entry(line, hashed=True)
    return line

"""The one cursor codec: the cursor of every connection and of every log answer.

A cursor is opaque to clients: base64url (unpadded) of the compact JSON array
``[kind, *fields]``. ``kind`` names what the cursor was made for (a list such as
``steps``, the ``node`` pages, a log answer), so a cursor of one list is refused by
another. Each user gives its fields meaning and checks them; this module only refuses
what is not a cursor of that kind, always with ``InvalidInput`` and before any backend
call. ``fingerprint`` binds a cursor to the query that made it (its filters, order).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

from openrl_inspect.core.errors import InvalidInput

# Longer than any cursor this server makes (a logs cursor holds one position per side).
MAX_CHARS = 65_536


def encode(kind: str, *fields: Any) -> str:
    raw = json.dumps([kind, *fields], separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(kind: str, cursor: str, arity: int, refusal: str | None = None) -> list[Any]:
    """The ``arity`` fields of a cursor made by ``encode(kind, ...)``.

    Anything else (not a string, empty, too long, not base64url JSON, another kind,
    another number of fields) raises ``InvalidInput(refusal)``.
    """
    refused = InvalidInput(refusal or f"invalid cursor for a {kind} list")
    if not isinstance(cursor, str) or not 0 < len(cursor) <= MAX_CHARS:
        raise refused
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError, RecursionError):
        raise refused from None
    if not isinstance(value, list) or len(value) != arity + 1 or value[0] != kind:
        raise refused
    return value[1:]


def fingerprint(*parts: Any) -> str:
    """A short stable digest of what a cursor must be used with (filters, order)."""
    raw = json.dumps(parts, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:24]

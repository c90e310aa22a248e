"""The one cursor codec: the cursor of every connection and of every log answer.

A cursor is opaque to clients: base64url (unpadded) of the compact JSON array
``[kind, *fields]``. ``kind`` names what the cursor was made for (a list such as
``steps``, the ``node`` pages, a log answer), so a cursor of one list is refused by
another. Each user gives its fields meaning and checks them; this module only refuses
what is not a cursor of that kind, always with ``InvalidInput`` and before any backend
call. ``fingerprint`` binds a cursor to the query that made it (its filters, order).

``Sealer`` seals a cursor (AES-GCM) for a viewer whose lists are scanned and filtered:
a plain cursor would name the entry the scan stopped on, which may be another owner's.
A sealed cursor opens only for the principal it was made for.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import os
from typing import Any

from openrl_inspect.core.errors import InvalidInput

# Longer than any cursor this server makes (a logs cursor holds one position per side).
MAX_CHARS = 65_536


# One encoder for every cursor: ``json.dumps`` with options builds a new encoder per
# call, which cost as much as the encoding itself (a cluster view makes 9,000 cursors).
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def encode(kind: str, *fields: Any) -> str:
    raw = _COMPACT.encode([kind, *fields])
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


class Sealer:
    """Seals cursors with a key (from ``Secrets.cursor_key``, else a random one) and the
    principal's name as associated data, so a cursor is opaque and bound to its holder."""

    PREFIX = "s."

    def __init__(self, secret: str | None) -> None:
        # lazy: cryptography loads with the first sealer, not with every import of cursors.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key = hashlib.sha256(secret.encode()).digest() if secret else os.urandom(32)
        self._aead = AESGCM(key)

    def seal(self, cursor: str, holder: str) -> str:
        nonce = os.urandom(12)
        box = self._aead.encrypt(nonce, cursor.encode(), (self.PREFIX + holder).encode())
        return self.PREFIX + base64.urlsafe_b64encode(nonce + box).decode().rstrip("=")

    def unseal(self, cursor: str, holder: str) -> str:
        """The cursor sealed for ``holder``, or ``InvalidInput`` for anything else."""
        # lazy: as in __init__.
        from cryptography.exceptions import InvalidTag

        refused = InvalidInput("this cursor is not valid here: start again without `after`")
        if not cursor.startswith(self.PREFIX) or len(cursor) > 4096:
            raise refused
        try:
            body = cursor[len(self.PREFIX) :]
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            opened = self._aead.decrypt(raw[:12], raw[12:], (self.PREFIX + holder).encode())
            return opened.decode()
        except (ValueError, InvalidTag, UnicodeDecodeError):
            raise refused from None


@functools.cache
def process_sealer() -> Sealer:
    """A sealer with a key drawn for this process (a Context built without one: tests,
    tools); ``serve`` passes one keyed by ``Secrets.cursor_key``."""
    return Sealer(None)

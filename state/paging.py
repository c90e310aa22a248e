"""Pages over sorted sets, and the opaque cursors that name a position in one.

A cursor is the (score, member) of the last item a page returned. The next page starts
strictly after it in the set's order, so inserts and deletes elsewhere never shift it
(unlike an offset), and a cursor whose item has since been removed still works.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from openrl_inspect.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Position:
    score: float
    member: str


def encode_cursor(kind: str, pos: Position) -> str:
    raw = json.dumps([kind, pos.score, pos.member], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str) -> Position:
    """Decode a cursor made by ``encode_cursor(kind, ...)``; anything else is bad input."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
        got_kind, score, member = value
        if got_kind != kind or not isinstance(member, str):
            raise ValueError
        return Position(float(score), member)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput(f"invalid cursor for a {kind} list") from None


@dataclass(frozen=True, slots=True)
class ListRef:
    """A named, ordered list of ids in the state store, e.g. ``ListRef("steps", (model,))``.

    Kinds: ``sessions`` (owner: live|closed), ``models_in_state`` (state),
    ``session_models`` (session), ``steps`` (model), ``step_ops`` (model, step),
    ``open_ops`` (model), ``model_workers`` (model), ``placements`` (model), ``workers``.
    """

    kind: str
    owner: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PageRequest:
    """Up to ``first`` members of ``list`` strictly after ``after``."""

    list: ListRef
    first: int
    after: Position | None = None
    newest_first: bool = True


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Position]
    total: int
    has_next: bool

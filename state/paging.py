"""Pages over sorted sets, and the opaque cursors that name a position in one.

A cursor is the (score, member) of the last item a page returned. The next page starts
strictly after it in the set's order, so inserts and deletes elsewhere never shift it
(unlike an offset), and a cursor whose item has since been removed still works.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from openrl_inspect.core import cursor as codec
from openrl_inspect.core.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Position:
    score: float
    member: str


def encode_cursor(kind: str, pos: Position) -> str:
    return codec.encode(kind, pos.score, pos.member)


def decode_cursor(kind: str, cursor: str) -> Position:
    """Decode a cursor made by ``encode_cursor(kind, ...)``; anything else is bad input."""
    score, member = codec.decode(kind, cursor, 2)
    number = isinstance(score, int | float) and not isinstance(score, bool)
    if not number or math.isnan(score) or not isinstance(member, str):
        raise InvalidInput(f"invalid cursor for a {kind} list")
    return Position(float(score), member)


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

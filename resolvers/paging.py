"""Cursor pagination shared by every list field."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from openrl_inspect.core.errors import BadRecord, InvalidInput
from openrl_inspect.resolvers.context import Context
from openrl_inspect.state.paging import ListRef, PageRequest, Position, decode_cursor, encode_cursor

R = TypeVar("R")


class Cursor:
    """A page item's cursor, encoded only when it is read (``encode(*args)``): most
    queries select no edge's cursor, and encoding one per item cost about 3 % of a large
    nested query, and a tenth of the cluster view's 9,000 nodes and GPUs."""

    __slots__ = ("_args", "_encode")

    def __init__(self, encode: Callable[..., str], *args: Any) -> None:
        self._encode = encode
        self._args = args

    def __str__(self) -> str:
        return self._encode(*self._args)


@dataclass(frozen=True)
class Paged(Generic[R]):
    """One page of records, each with the cursor that resumes after it.

    An item is a ``BadRecord`` when its record cannot be read: it goes null with its own
    error and the rest of the page stands. ``end_cursor`` is the position of the last
    member scanned, kept or skipped, so a page of only gone records still moves on.
    """

    items: Sequence[tuple[str | Cursor, R | BadRecord]]
    total: int
    has_next: bool
    has_previous: bool
    end_cursor: str | None = None

    def readable(self) -> list[R]:
        """The records that could be read. Rollups skip a bad record as they skip a gone
        one; the list fields show it, null with its BAD_RECORD error."""
        return [rec for _, rec in self.items if not isinstance(rec, BadRecord)]


def page_size(ctx: Context, first: int | None) -> int:
    limits = ctx.bounds
    if first is None:
        return limits.default_page_size
    if not 0 <= first <= limits.max_page_size:
        raise InvalidInput(f"first must be between 0 and {limits.max_page_size}, got {first}")
    return first


async def paged(
    ctx: Context,
    ref: ListRef,
    first: int | None,
    after: str | None,
    load: Callable[[Sequence[Position]], Awaitable[Sequence[R | BadRecord | None]]],
    *,
    newest_first: bool = True,
) -> Paged[R]:
    """Read one page of ``ref`` and its records; ids whose record is gone are skipped.

    A record can be gone when retention expired it after the index was read; the page
    then holds fewer items, and ``total`` still counts the index. A record that cannot
    be read stays in the page as its ``BadRecord``.
    """
    size = page_size(ctx, first)
    position = decode_cursor(ref.kind, after) if after else None
    if size == 0:
        # Only totalCount was asked for: still one (batched) read.
        page = await ctx.state.pages.load(PageRequest(ref, 0, position, newest_first))
        return Paged([], page.total, page.has_next, position is not None)
    page = await ctx.state.pages.load(PageRequest(ref, size, position, newest_first))
    records = await load(page.items)
    items = [
        (Cursor(encode_cursor, ref.kind, pos), rec)
        for pos, rec in zip(page.items, records, strict=True)
        if rec is not None
    ]
    end = encode_cursor(ref.kind, page.items[-1]) if page.items else None
    return Paged(items, page.total, page.has_next, position is not None, end)

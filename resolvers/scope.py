"""Who sees what, below the schema: every read a viewer reaches is checked here.

A viewer sees the sessions of its owners and everything under them; an operator sees
everything. The checks sit in the resolvers' reads (``resolvers.state.reads`` and
``resolvers.cluster``), not in the schema, so no root field, id lookup, nested path,
cursor or count can go around them:

- an id out of scope answers NOT_FOUND exactly as an unknown id (no oracle);
- root lists are scanned and filtered (``scoped``): a viewer's ``totalCount`` counts
  what it may see in the scanned range, never the whole index, and its cursors are
  sealed (a scan can stop on another owner's entry);
- a record that cannot be read (``BadRecord``) is hidden from a viewer: whose it is
  cannot be known.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

from openrl_inspect.core.errors import BadRecord, InspectorError
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.paging import Cursor, Paged, page_size, paged
from openrl_inspect.state.paging import ListRef, Position
from openrl_inspect.state.records import ModelRecord, SessionRecord

R = TypeVar("R")

# A viewer's root list scans at most this many index pages (of the largest page size)
# for one answer; past it, the answer says there is more and its cursor goes on.
MAX_SCAN_PAGES = 20


def holder(ctx: Context) -> str:
    """What a viewer's cursors are sealed to: the principal whole (its name, role and
    owners), so a cursor made for one set of owners does not page another's scan."""
    p = ctx.principal
    return "\x1f".join([p.name, str(p.role), *sorted(p.owners)])


def sees_everything(ctx: Context) -> bool:
    return ctx.principal.operator


def session_visible(ctx: Context, rec: SessionRecord | BadRecord | None) -> bool:
    if isinstance(rec, SessionRecord):
        return ctx.principal.sees_owner(rec.owner)
    return rec is not None and sees_everything(ctx)


async def session_id_visible(ctx: Context, sid: str | None) -> bool:
    if sees_everything(ctx):
        return True
    if not sid:
        return False
    try:
        rec = await ctx.state.sessions.load(sid)
    except InspectorError:
        return False
    return session_visible(ctx, rec)


async def model_visible(ctx: Context, rec: ModelRecord | BadRecord | None) -> bool:
    if sees_everything(ctx):
        return rec is not None
    return isinstance(rec, ModelRecord) and await session_id_visible(ctx, rec.session_id)


async def model_id_visible(ctx: Context, mid: str | None) -> bool:
    if sees_everything(ctx):
        return True
    if not mid:
        return False
    try:
        rec = await ctx.state.models.load(mid)
    except InspectorError:
        return False
    return await model_visible(ctx, rec)


async def visible_model_ids(ctx: Context, mids: Iterable[str | None]) -> set[str]:
    """Which of these model ids the principal may see (all loads batched)."""
    wanted = list(dict.fromkeys(m for m in mids if m))
    if sees_everything(ctx):
        return set(wanted)
    flags = await asyncio.gather(*(model_id_visible(ctx, m) for m in wanted))
    return {m for m, ok in zip(wanted, flags, strict=True) if ok}


async def keep_visible(
    ctx: Context, items: Sequence[R], model_id: Callable[[R], str | None]
) -> list[R]:
    """The items whose model the principal may see, in order."""
    if sees_everything(ctx):
        return list(items)
    seen = await visible_model_ids(ctx, (model_id(i) for i in items))
    return [i for i in items if (model_id(i) or "") in seen]


Keep = Callable[[Sequence[R | BadRecord]], Awaitable[list[bool]]]


async def scoped(
    ctx: Context,
    ref: ListRef,
    first: int | None,
    after: str | None,
    load: Callable[[Sequence[Position]], Awaitable[Sequence[R | BadRecord | None]]],
    keep: Keep[R],
) -> Paged[R]:
    """``paged``, filtered for a viewer: index pages are scanned from ``after`` until the
    page is full, the index ends or ``MAX_SCAN_PAGES`` were read; ``total`` counts the
    visible items found (a lower bound while there is a next page)."""
    if sees_everything(ctx):
        return await paged(ctx, ref, first, after, load)
    size = page_size(ctx, first)
    kept: list[tuple[str | Cursor, R | BadRecord]] = []
    start = None if after is None else ctx.cursors.unseal(after, holder(ctx))
    cursor, scanned, exhausted = start, start, False
    for _ in range(MAX_SCAN_PAGES):
        page = await paged(ctx, ref, ctx.bounds.max_page_size, cursor, load)
        flags = await keep([rec for _, rec in page.items])
        kept += [item for item, ok in zip(page.items, flags, strict=True) if ok]
        scanned = page.end_cursor or scanned
        if size and len(kept) > size:
            break
        if not page.has_next:
            exhausted = True
            break
        cursor = page.end_cursor
    items: list[tuple[str | Cursor, R | BadRecord]] = [
        (ctx.cursors.seal(str(at), holder(ctx)), rec) for at, rec in kept[:size]
    ]
    if len(kept) > len(items) and items:
        return Paged(items, len(kept), True, after is not None, str(items[-1][0]))
    end = None if scanned is None else ctx.cursors.seal(scanned, holder(ctx))
    return Paged(items, len(kept), not exhausted, after is not None, end)

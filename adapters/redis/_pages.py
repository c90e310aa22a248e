"""Pages of the state's sorted sets (docs/redis-schema.md): a ``PageRequest`` read as one
range of its set past the cursor, and the set's size, in one round trip for a batch.

Members that share the cursor's score sort by name. A page is fetched with some slack
past its size so that ties at the cursor are skipped without a second trip; more ties
than the slack walk on, one more trip each time.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from openrl_inspect.adapters.redis._client import Pipe, Run
from openrl_inspect.state import keys
from openrl_inspect.state.paging import ListRef, Page, PageRequest, Position

# Extra members fetched past a page so that items sharing the cursor's score can be
# skipped without a second round trip; more ties than this cost one more trip.
_TIE_SLACK = 32


def list_key(ref: ListRef) -> str:
    """The sorted set behind a ``ListRef``."""
    kind, owner = ref.kind, ref.owner
    if kind == "sessions":
        return keys.SESSIONS_LIVE if owner == ("live",) else keys.SESSIONS_CLOSED
    if kind == "models_in_state":
        return keys.models_in_state(owner[0])
    if kind == "session_models":
        return keys.session_models(owner[0])
    if kind == "steps":
        return keys.steps(owner[0])
    if kind == "step_ops":
        return keys.step_ops(owner[0], int(owner[1]))
    if kind == "open_ops":
        return keys.open_ops(owner[0])
    if kind == "model_workers":
        return keys.model_workers(owner[0])
    if kind == "placements":
        return keys.placements(owner[0])
    if kind == "workers":
        return keys.WORKERS
    raise ValueError(f"unknown list kind {kind!r}")


def score_pairs(raw: Any) -> list[tuple[str, float]]:
    """A ``WITHSCORES`` answer as (member, score) pairs."""
    # RESP3 answers WITHSCORES as [member, score] lists, RESP2 as tuples.
    return [(str(m), float(s)) for m, s in raw]


async def read_pages(run: Run, requests: Sequence[PageRequest]) -> list[Page]:
    """One page per request, in request order: one round trip for the batch (and one
    more for a page whose cursor has more ties than the slack)."""

    def build(pipe: Pipe) -> None:
        for req in requests:
            _queue_page(pipe, req=req, offset=0)

    raw = await run(build)
    pages: list[Page] = []
    for i, req in enumerate(requests):
        fetched = score_pairs(raw[2 * i])
        total = int(raw[2 * i + 1])
        pages.append(await _finish_page(run, req, fetched, total))
    return pages


async def _finish_page(
    run: Run, req: PageRequest, fetched: list[tuple[str, float]], total: int
) -> Page:
    want = req.first + 1
    items = _after(req, fetched)
    offset = 0
    # Only when more than _TIE_SLACK members share the cursor's score: walk on.
    while len(items) < want and len(fetched) == req.first + 1 + _TIE_SLACK + offset:
        offset = len(fetched)
        more = await run(partial(_queue_page, req=req, offset=offset))
        fetched = fetched + score_pairs(more[0])
        items = _after(req, fetched)
    page_items = [Position(score, member) for member, score in items[: req.first]]
    return Page(items=page_items, total=total, has_next=len(items) > req.first)


def _queue_page(pipe: Pipe, *, req: PageRequest, offset: int) -> None:
    key = list_key(req.list)
    count = req.first + 1 + _TIE_SLACK
    if req.newest_first:
        top: str | float = req.after.score if req.after else "+inf"
        pipe.zrevrangebyscore(key, top, "-inf", start=offset, num=count, withscores=True)
    else:
        bottom: str | float = req.after.score if req.after else "-inf"
        pipe.zrangebyscore(key, bottom, "+inf", start=offset, num=count, withscores=True)
    if offset == 0:
        pipe.zcard(key)


def _after(req: PageRequest, fetched: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Drop what sorts at or before the cursor; members with equal scores sort by name."""
    pos = req.after
    if pos is None:
        return fetched
    if req.newest_first:
        return [(m, s) for m, s in fetched if s < pos.score or (s == pos.score and m < pos.member)]
    return [(m, s) for m, s in fetched if s > pos.score or (s == pos.score and m > pos.member)]

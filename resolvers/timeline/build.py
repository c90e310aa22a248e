"""The timeline answer: every source's entries merged newest first, a window, a page.

Bounded: ``first`` entries (default ``DEFAULT_FIRST``, at most ``MAX_FIRST``) after the
cursor, which pins the window's end (``until`` defaults to now on the first page, and
the next pages continue from that same moment). ``truncated`` when more entries follow
or a source had more than it gave; ``unavailable`` names the sources that could not be
read, with their codes, never an empty list that reads as "nothing happened".
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from openrl_inspect.core import cursor as codec
from openrl_inspect.core.domain import TimelineSource
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis import Unknown
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.timeline import sources
from openrl_inspect.resolvers.timeline.sources import Entry
from openrl_inspect.state.records import ModelRecord

DEFAULT_FIRST = 50
MAX_FIRST = 500
# The widest window one timeline reads (Cloud Logging and Prometheus bound theirs too).
MAX_WINDOW_S = 31 * 86400.0
# A session's timeline merges its newest models, at most this many.
SESSION_MODELS = 10
# The models' timelines one request may read (each reads every backend; the cost walk
# counts a timeline's entries, not its reads): a list of models asking each for its
# timeline must not spend the backends' quotas in one query.
MAX_TIMELINE_MODELS = 20
_KIND = "timeline"


@dataclass(frozen=True, slots=True)
class Timeline:
    entries: list[Entry]
    has_next: bool
    end_cursor: str | None
    truncated: bool
    truncated_sources: list[TimelineSource]
    unavailable: list[tuple[TimelineSource, Unknown]]
    since: float
    until: float


def _stamp(value: datetime | None) -> float | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise InvalidInput("since and until need a time zone (ISO 8601 with Z or an offset)")
    return value.timestamp()


def _first(first: int | None) -> int:
    if first is None:
        return DEFAULT_FIRST
    if not 0 <= first <= MAX_FIRST:
        raise InvalidInput(f"first must be between 0 and {MAX_FIRST}, got {first}")
    return first


def _window(
    ctx: Context, created: float | None, since: datetime | None, until: datetime | None
) -> tuple[float, float]:
    end = _stamp(until)
    end = ctx.now if end is None else min(end, ctx.now)
    start = _stamp(since)
    if start is None:
        start = max(created if created is not None else end - MAX_WINDOW_S, end - MAX_WINDOW_S)
    if not (math.isfinite(start) and math.isfinite(end)) or end < start:
        raise InvalidInput("the timeline's until must not be before its since")
    if end - start > MAX_WINDOW_S:
        raise InvalidInput("a timeline spans at most 31 days")
    return start, end


def _fingerprint(owner: str, since: float, wanted: Sequence[TimelineSource]) -> str:
    return codec.fingerprint(owner, round(since, 3), sorted(wanted))


def _after(after: str | None, print_: str) -> tuple[float, str, float] | None:
    """(time, key, pinned until) of the last entry of the previous page."""
    if after is None:
        return None
    fields = codec.decode(_KIND, after, 4)
    made_for, at, key, until = fields
    if made_for != print_ or not isinstance(key, str):
        raise InvalidInput("this cursor belongs to another timeline: start again without it")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (at, until)):
        raise InvalidInput("invalid cursor for a timeline")
    return float(at), key, float(until)


async def timeline(
    ctx: Context,
    owner: str,
    records: Sequence[ModelRecord],
    since: datetime | None,
    until: datetime | None,
    wanted: Sequence[TimelineSource] | None,
    first: int | None,
    after: str | None,
    created: float | None,
) -> Timeline:
    limit = _first(first)
    ctx.timelines_read += len(records)
    if ctx.timelines_read > MAX_TIMELINE_MODELS:
        raise InvalidInput(
            f"one query may read the timelines of at most {MAX_TIMELINE_MODELS} models; "
            "ask for fewer timelines at once"
        )
    chosen = list(dict.fromkeys(wanted)) if wanted else list(TimelineSource)
    start, end = _window(ctx, created, since, until)
    print_ = _fingerprint(owner, start, chosen)
    position = _after(after, print_)
    if position is not None:
        end = position[2]  # the first page's moment: later pages do not shift
    found = await asyncio.gather(*(sources.gather(ctx, r, start, end, chosen) for r in records))
    entries: dict[str, Entry] = {}
    truncated_sources: set[TimelineSource] = set()
    unavailable: dict[tuple[TimelineSource, str], tuple[TimelineSource, Unknown]] = {}
    for per_model in found:
        for source, part in zip(chosen, per_model, strict=True):
            for e in part.entries:
                entries.setdefault(e.key + f"|{e.at:.3f}", e)
            if part.truncated:
                truncated_sources.add(source)
            for src, unknown in part.unavailable:
                unavailable.setdefault((src, unknown.code), (src, unknown))
    ordered = sorted(entries.values(), key=lambda e: (-e.at, e.key))
    if position is not None:
        at, key, _ = position
        ordered = [e for e in ordered if (-e.at, e.key) > (-at, key)]
    page = ordered[:limit]
    has_next = len(ordered) > limit
    last = page[-1] if page else None
    cursor = codec.encode(_KIND, print_, last.at, last.key, end) if last and has_next else None
    return Timeline(
        entries=page,
        has_next=has_next,
        end_cursor=cursor,
        truncated=has_next or bool(truncated_sources),
        truncated_sources=sorted(truncated_sources),
        unavailable=list(unavailable.values()),
        since=start,
        until=end,
    )


async def model_timeline(
    ctx: Context,
    rec: ModelRecord,
    since: datetime | None,
    until: datetime | None,
    wanted: Sequence[TimelineSource] | None,
    first: int | None,
    after: str | None,
) -> Timeline:
    return await timeline(ctx, f"model:{rec.id}", [rec], since, until, wanted, first, after,
                          rec.created_at)  # fmt: skip


async def session_timeline(
    ctx: Context,
    sid: str,
    created: float | None,
    since: datetime | None,
    until: datetime | None,
    wanted: Sequence[TimelineSource] | None,
    first: int | None,
    after: str | None,
) -> Timeline:
    """The session's newest ``SESSION_MODELS`` models' timelines, merged (more models:
    ``truncated``)."""
    page = await state_reads.session_models(ctx, sid, SESSION_MODELS, None)
    found = await timeline(ctx, f"session:{sid}", page.readable(), since, until, wanted, first,
                           after, created)  # fmt: skip
    if page.has_next and not found.truncated:
        return replace(found, truncated=True)
    return found

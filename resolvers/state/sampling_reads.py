"""Reads of the recorded sampler batches: a model's sampling stats, and its batches.

Both go through the per-request ``sampler_batches`` loader, so the stats of every model
of a query cost one Redis round trip together (two reads a model in the same pipeline:
the window's newest batches and the batches before it, the baseline).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from openrl_inspect.adapters.redis import SamplerBatchRequest, SamplerBatchSlice
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.paging import Paged, page_size
from openrl_inspect.resolvers.state.sampling import SamplingStats, sampling_stats
from openrl_inspect.state.keys import valid_id
from openrl_inspect.state.paging import Position, decode_cursor, encode_cursor
from openrl_inspect.state.records import SamplerBatchRecord

DEFAULT_WINDOW_S = 900.0
MIN_WINDOW_S = 1.0
MAX_WINDOW_S = 86_400.0
# Batches read a model: the window's newest, and the newest before it (the baseline).
# Bounded: the stats of 200 models decode at most 120,000 members (about a second
# on a busy two-core machine, most of it decoding).
WINDOW_BATCHES = 400
BASELINE_BATCHES = 200
CURSOR_KIND = "sampler_batches"
# A cursor keeps at most this much of its member (the recorder writes a few hundred
# characters); a longer member's page resumes at its prefix.
_CURSOR_MEMBER_CHARS = 4096


def check_window(window_s: float) -> float:
    if not MIN_WINDOW_S <= window_s <= MAX_WINDOW_S:  # also false for NaN
        raise InvalidInput(
            f"windowSeconds must be between {MIN_WINDOW_S:g} and {MAX_WINDOW_S:g} seconds"
        )
    return float(window_s)


def _check_model(mid: str) -> str:
    if not valid_id(mid):
        raise InvalidInput(f"model id {mid[:80]!r} is not a valid id")
    return mid


async def models_sampling(
    ctx: Context, model_ids: Sequence[str], window_s: float = DEFAULT_WINDOW_S
) -> list[SamplingStats]:
    """The sampling stats of each model, in order: one round trip for all of them.

    A model whose batches cannot be read at all (stored with another Redis type)
    raises its ``BadRecord``; undecodable batches are skipped and counted.
    """
    window_s = check_window(window_s)
    start = ctx.now - window_s
    requests: list[SamplerBatchRequest] = []
    for mid in model_ids:
        _check_model(mid)
        requests.append(SamplerBatchRequest(mid, start, math.inf, WINDOW_BATCHES))
        before = math.nextafter(start, -math.inf)
        requests.append(SamplerBatchRequest(mid, -math.inf, before, BASELINE_BATCHES))
    slices = await ctx.state.sampler_batches.load_many(requests)
    out: list[SamplingStats] = []
    for i in range(len(model_ids)):
        recent, earlier = slices[2 * i], slices[2 * i + 1]
        out.append(_stats(ctx, window_s, recent, earlier))
    return out


def _stats(
    ctx: Context, window_s: float, recent: SamplerBatchSlice, earlier: SamplerBatchSlice
) -> SamplingStats:
    for part in (recent, earlier):
        if part.problem is not None:
            raise part.problem
    return sampling_stats(
        [*recent.records(), *earlier.records()],
        ctx.now,
        window_s,
        in_window=recent.in_window,
        truncated=recent.truncated,
        undecodable=recent.undecodable + earlier.undecodable,
    )


async def model_sampling(
    ctx: Context, mid: str, window_s: float = DEFAULT_WINDOW_S
) -> SamplingStats:
    (stats,) = await models_sampling(ctx, [mid], window_s)
    return stats


async def sampler_batches(
    ctx: Context, mid: str, first: int | None, after: str | None
) -> Paged[SamplerBatchRecord]:
    """A page of the model's batches, newest first; an undecodable one is its
    ``BadRecord`` (null with its own error in the connection)."""
    size = page_size(ctx, first)
    position = decode_cursor(CURSOR_KIND, after) if after else None
    resume = (position.score, position.member) if position else None
    request = SamplerBatchRequest(_check_model(mid), limit=max(1, size), after=resume)
    found = await ctx.state.sampler_batches.load(request)
    if found.problem is not None:
        raise found.problem
    entries = found.entries[:size]
    items = [(_cursor(e.score, e.member), e.record) for e in entries]
    more = found.truncated or len(found.entries) > size
    return Paged(
        items=items,
        total=found.in_window,
        has_next=more,
        has_previous=position is not None,
        end_cursor=items[-1][0] if items else None,
    )


def _cursor(score: float, member: str) -> str:
    return encode_cursor(CURSOR_KIND, Position(score, member[:_CURSOR_MEMBER_CHARS]))

"""A model's timeline, one backend at a time: what each says happened, and when.

Each source (``from_redis``, ``from_cluster``, ``from_logs``) reads through the
request's loaders (the very reads a summary makes, so a timeline beside a summary costs
little more) and answers its entries, or raises the backend's error: the timeline then
says that source was unavailable and keeps the rest. Each source is bounded on its own
(``entries.PER_SOURCE``) and says when it was cut.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from openrl_inspect.core.domain import TimelineSource
from openrl_inspect.core.errors import BackendError
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.summary import evidence as summary_evidence
from openrl_inspect.resolvers.timeline import from_cluster, from_logs, from_redis
from openrl_inspect.resolvers.timeline.entries import Entry, Found
from openrl_inspect.state.records import ModelRecord

__all__ = ["SOURCES", "Entry", "Found", "gather"]

Source = Callable[[Context, ModelRecord, float, float], Awaitable[Found]]
SOURCES: dict[TimelineSource, Source] = {
    TimelineSource.REDIS: from_redis.redis,
    TimelineSource.KUBERNETES: from_cluster.kubernetes,
    TimelineSource.PROMETHEUS: from_cluster.prometheus,
    TimelineSource.CLOUD_LOGGING: from_logs.cloud_logging,
}


async def gather(
    ctx: Context, rec: ModelRecord, since: float, until: float, sources: Sequence[TimelineSource]
) -> list[Found]:
    """Every asked source's entries for one model; a failing source is said, not raised."""

    async def one(source: TimelineSource) -> Found:
        try:
            return await SOURCES[source](ctx, rec, since, until)
        except BackendError as exc:
            return Found([], unavailable=((source, summary_evidence.unknown(exc.backend, exc)),))

    return list(await asyncio.gather(*(one(s) for s in sources)))

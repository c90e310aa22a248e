"""Batched PromQL over a ``MetricsSource``: many values in few queries, run concurrently.

A call's values become set matchers, split into several queries only past the byte
budget (``_promql.chunk_values``) or past what one answer may hold (``max_series``);
the queries of one call run at once, a few at a time (:func:`gather`), and the first
``InspectorError`` of any of them is the call's.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

import anyio
import openrl_inspect.adapters.prometheus._promql as promql
from openrl_inspect.adapters.prometheus._source import MetricsSource, QueryResult
from openrl_inspect.core.errors import InspectorError

__all__ = ["QueryBatch", "gather"]

T = TypeVar("T")


async def gather(fns: Sequence[Callable[[], Awaitable[T]]], limit: int = 4) -> list[T]:
    """Run ``fns`` concurrently (at most ``limit`` at once), results in order. The
    first ``InspectorError`` raised by any of them is raised as itself."""
    if len(fns) == 1:
        return [await fns[0]()]
    results: dict[int, T] = {}
    limiter = anyio.CapacityLimiter(limit)

    async def run(i: int, fn: Callable[[], Awaitable[T]]) -> None:
        async with limiter:
            results[i] = await fn()

    try:
        async with anyio.create_task_group() as tg:
            for i, fn in enumerate(fns):
                tg.start_soon(run, i, fn)
    except BaseExceptionGroup as group:
        leaf = _first_inspector_error(group)
        if leaf is None:
            raise
        raise leaf  # noqa: B904 - the leaf keeps its own __cause__
    return [results[i] for i in range(len(fns))]


def _first_inspector_error(group: BaseExceptionGroup[BaseException]) -> InspectorError | None:
    for exc in group.exceptions:
        if isinstance(exc, InspectorError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_inspector_error(exc)
            if found is not None:
                return found
    return None


class QueryBatch:
    """Render and run the queries of one call over ``source``."""

    def __init__(self, source: MetricsSource, *, chunk_bytes: int, max_series: int) -> None:
        self.source = source
        self._chunk_bytes = chunk_bytes
        self._max_series = max_series

    def queries(self, sets: Mapping[str, Sequence[str]], build: promql.QueryBuilder) -> list[str]:
        # Also bound the values per query so that an answer fits in ``max_series``.
        per_query = max(1, self._max_series // 2)
        flat = [(lab, v) for lab, vals in sets.items() for v in vals]
        queries: list[str] = []
        for i in range(0, len(flat), per_query):
            part: dict[str, list[str]] = {}
            for lab, v in flat[i : i + per_query]:
                part.setdefault(lab, []).append(v)
            queries.extend(promql.chunk_values(part, build, self._chunk_bytes))
        return queries

    async def instant(self, queries: Sequence[str], at: float | None) -> list[QueryResult]:
        return await gather([functools.partial(self.source.instant, q, at) for q in queries])

    async def range(
        self, queries: Sequence[str], start: float, end: float, step: float
    ) -> list[QueryResult]:
        return await gather(
            [functools.partial(self.source.range, q, start, end, step) for q in queries]
        )

"""Admitting an operation: the bounds its cost is checked against, and the slots an
expensive one holds while it runs.

The cost is computed once the document is parsed and before graphql-core validates it
(the variables are known by then). A query past a limit (nodes, aliases, field
selections, depth) is answered ``QUERY_TOO_COSTLY`` without validation or any backend.
A query whose node cost reaches ``Bounds.expensive_nodes`` needs one of
``Bounds.max_expensive_requests`` slots; it waits for one up to ``Bounds.busy_wait_s``
and is then answered ``BUSY`` (HTTP 429 with ``Retry-After``), so a burst of large
queries queues briefly instead of piling up memory. One principal holds at most
``Bounds.max_expensive_per_principal`` of the slots: its next expensive query is answered
``BUSY`` at once, so one caller cannot take every slot from the others. Cheap queries
never wait.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Hashable

from openrl_inspect.core.errors import Busy
from openrl_inspect.core.settings import Bounds
from openrl_inspect.execution.cost import CostLimits

LIMIT_TEXT = {
    "nodes": "nodes",
    "aliases": "aliases",
    "fields": "field selections (with fragments expanded)",
    "depth": "levels of nested fields",
}


class Slots:
    """At most ``size`` holders at once, ``per_holder`` of them for one holder; a newcomer
    waits up to ``wait_s``, then ``Busy`` (at once when its holder has its share)."""

    def __init__(self, size: int, wait_s: float, per_holder: int = 1) -> None:
        self._free = asyncio.Semaphore(max(1, size))
        self.wait_s = wait_s
        self.per_holder = max(1, per_holder)
        self._held: Counter[Hashable] = Counter()

    async def acquire(self, holder: Hashable = None) -> None:
        if self._held[holder] >= self.per_holder:
            raise Busy(
                "You already have as many large queries running as one caller may; wait "
                "for them to finish, or ask for smaller pages.",
                retry_after_s=max(1, math.ceil(self.wait_s)),
            )
        self._held[holder] += 1
        try:
            await self._wait()
        except BaseException:
            self._drop(holder)
            raise

    async def _wait(self) -> None:
        try:
            async with asyncio.timeout(self.wait_s):
                await self._free.acquire()
        except TimeoutError:
            raise Busy(
                "The inspector is answering as many large queries as it allows; retry "
                "shortly, or ask for smaller pages.",
                retry_after_s=max(1, math.ceil(self.wait_s)),
            ) from None

    def release(self, holder: Hashable = None) -> None:
        self._free.release()
        self._drop(holder)

    def _drop(self, holder: Hashable) -> None:
        self._held[holder] -= 1
        if self._held[holder] <= 0:
            del self._held[holder]


def cost_limits(bounds: Bounds) -> CostLimits:
    return CostLimits(
        max_nodes=bounds.max_nodes,
        max_aliases=bounds.max_aliases,
        max_depth=bounds.max_depth,
        max_fields=bounds.max_fields,
        default_page=bounds.default_page_size,
        max_page=bounds.max_page_size,
    )

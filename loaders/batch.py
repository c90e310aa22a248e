"""A DataLoader that waits for a query level to settle before it dispatches.

Strawberry's DataLoader dispatches two event-loop iterations after the first load of a
batch. graphql-core completes sibling list items through chains of futures of unequal
depth, so at a few hundred items some loads arrive later and start a second batch: a
second round trip. This loader dispatches once ``quiet_ticks`` iterations pass with no
new load (and at the latest after ``max_ticks``), so a level of a query is one batch.

As in Strawberry's DataLoader, the batch function returns one result per key, in key
order, and a result that is an exception fails that key alone: its siblings in the
batch still get their values.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
E = TypeVar("E", bound=Exception)


class BatchLoader(Generic[K, V]):
    def __init__(
        self,
        load_fn: Callable[[list[K]], Awaitable[Sequence[V | BaseException]]],
        *,
        quiet_ticks: int = 3,
        max_ticks: int = 100,
    ) -> None:
        self._load_fn = load_fn
        self._quiet = quiet_ticks
        self._max = max_ticks
        self._cache: dict[K, asyncio.Future[V]] = {}
        self._pending: dict[K, asyncio.Future[V]] = {}
        self._task: asyncio.Task[None] | None = None
        self.batches = 0

    def load(self, key: K) -> asyncio.Future[V]:
        fut = self._cache.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._cache[key] = fut
            self._pending[key] = fut
            if self._task is None:
                self._task = asyncio.ensure_future(self._dispatch())
        return fut

    async def load_many(self, keys: Iterable[K]) -> list[V]:
        """The values of ``keys``; the first key's failure (in key order) is raised."""
        outcomes = await _settled([self.load(k) for k in keys])
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return outcomes  # type: ignore[return-value]  # no exceptions left: all V

    async def load_each(self, keys: Iterable[K], isolated: type[E]) -> list[V | E]:
        """The values of ``keys``, a key's own ``isolated`` failure in its place.

        Any other failure (the backend is down) is raised: the first, in key order.
        """
        outcomes = await _settled([self.load(k) for k in keys])
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, isolated):
                raise outcome
        return outcomes  # type: ignore[return-value]  # only V and E are left

    async def _dispatch(self) -> None:
        seen, quiet = len(self._pending), 0
        for _ in range(self._max):
            await asyncio.sleep(0)
            if len(self._pending) == seen:
                quiet += 1
                if quiet >= self._quiet:
                    break
            else:
                seen, quiet = len(self._pending), 0
        batch, self._pending, self._task = self._pending, {}, None
        keys = list(batch)
        self.batches += 1
        watch = _cancel_when_abandoned(batch)
        try:
            values = await self._load_fn(keys)
            if len(values) != len(keys):
                raise RuntimeError(f"batch function returned {len(values)} for {len(keys)} keys")
        except BaseException as exc:
            for fut in batch.values():
                if not fut.done():
                    fut.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for fut, value in zip(batch.values(), values, strict=True):
            if fut.done():
                continue
            if watch is not None:
                # Answered now: the watch has nothing left to cancel, and left on, it would
                # be one more scheduled callback per key.
                fut.remove_done_callback(watch)
            if isinstance(value, BaseException):
                fut.set_exception(value)
            else:
                fut.set_result(value)


async def _settled(futures: list[asyncio.Future[V]]) -> list[V | BaseException]:
    """Every future's outcome, in order, each retrieved (so no failure is logged as never
    retrieved). Awaited one by one rather than gathered: the keys of one batch are
    answered together, so after the first the rest are done and cost no callback or
    wake-up each. Cancelled, it cancels the futures it has not reached, as a gather
    cancels its children (``_cancel_when_abandoned`` counts on that)."""
    outcomes: list[V | BaseException] = []
    for index, fut in enumerate(futures):
        try:
            outcomes.append(await fut)
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is None or not task.cancelling():
                outcomes.append(exc)  # the key's own future was cancelled: its outcome
                continue
            for rest in futures[index:]:
                if rest.done() and not rest.cancelled():
                    rest.exception()  # retrieved, as a gather would have
                rest.cancel()
            raise
        except BaseException as exc:
            outcomes.append(exc)
    return outcomes


def _cancel_when_abandoned(
    batch: dict[K, asyncio.Future[V]],
) -> Callable[[asyncio.Future[V]], None] | None:
    """A request cancelled (deadline, client gone) cancels the futures it awaits; when
    every one of the batch is, nobody wants the answer: the dispatch (this task) is
    cancelled too, so its round trip frees its pooled connection now, not at its timeout.
    """
    me = asyncio.current_task()
    if me is None:
        return None

    def abandoned(_: asyncio.Future[V]) -> None:
        if not me.done() and all(f.cancelled() for f in batch.values()):
            me.cancel()

    for fut in batch.values():
        fut.add_done_callback(abandoned)
    return abandoned

"""A DataLoader that waits for a query level to settle before it dispatches.

Strawberry's DataLoader dispatches two event-loop iterations after the first load of a
batch. graphql-core completes sibling list items through chains of futures of unequal
depth, so at a few hundred items some loads arrive later and start a second batch: a
second round trip. This loader dispatches once ``quiet_ticks`` iterations pass with no
new load (and at the latest after ``max_ticks``), so a level of a query is one batch.

As in Strawberry's DataLoader, the batch function returns one result per key, in key
order, and a result that is an exception fails that key alone: its siblings in the
batch still get their values.

Unlike it, a key's future is shared but never handed out while pending: a waiter that
is cancelled (its request's deadline, or graphql-core cancelling the siblings of a
failed field) gives up its own interest only, and another waiter of the same key still
gets the value. A batch that nobody wants any more is cancelled, round trip included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from functools import partial
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
E = TypeVar("E", bound=Exception)

# A waiter whose key's batch was abandoned just as it joined asks again, up to this many
# times in all; a batch is abandoned only when nobody wants it, so one more try is what
# a race costs, the rest a margin.
_TRIES = 3


class _Batch(Generic[K, V]):
    """One dispatch: its keys' shared futures, how many waits on them are still wanted,
    and its task once sent."""

    __slots__ = ("futures", "task", "wanted")

    def __init__(self) -> None:
        self.futures: dict[K, asyncio.Future[V]] = {}
        self.wanted = 0
        self.task: asyncio.Task[None] | None = None

    def drop(self) -> None:
        self.wanted -= 1
        if self.wanted <= 0 and self.task is not None:
            self.task.cancel()  # nobody wants the answer: free the round trip now


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
        self._open: _Batch[K, V] = _Batch()  # collecting keys
        self._sent: list[_Batch[K, V]] = []  # awaiting their answers
        self._task: asyncio.Task[None] | None = None
        self.batches = 0

    def _want(self, key: K) -> asyncio.Future[V]:
        """The key's shared future, wanted once more; a new one (in the batch being
        collected) if absent or abandoned."""
        fut = self._cache.get(key)
        if fut is None or fut.cancelled():
            fut = asyncio.get_running_loop().create_future()
            self._cache[key] = fut
            batch = self._open
            batch.futures[key] = fut
            batch.wanted += 1
            if self._task is None:
                self._task = asyncio.ensure_future(self._dispatch())
        elif not fut.done():
            self._batch_of(key).wanted += 1
        return fut

    def _batch_of(self, key: K) -> _Batch[K, V]:
        """The batch of a pending key: the open one, or one of the few sent."""
        if key in self._open.futures:
            return self._open
        for batch in self._sent:
            if key in batch.futures:
                return batch
        raise LookupError(key)  # a pending future always belongs to a batch

    def load(self, key: K) -> asyncio.Future[V]:
        """A future of the key's value, the waiter's own: cancelling it leaves the key's
        other waiters alone."""
        src = self._want(key)
        if src.done():
            return src  # a done future cannot be cancelled: safe to share
        mine: asyncio.Future[V] = src.get_loop().create_future()
        src.add_done_callback(partial(self._relay, key, mine, _TRIES))
        mine.add_done_callback(partial(self._gave_up, key))
        return mine

    def _relay(self, key: K, mine: asyncio.Future[V], tries: int, src: asyncio.Future[V]) -> None:
        if mine.done():
            return
        if src.cancelled():
            if tries > 1:  # abandoned by everybody else as this waiter joined: ask again
                again = self._want(key)
                again.add_done_callback(partial(self._relay, key, mine, tries - 1))
            else:
                mine.set_exception(RuntimeError(f"batch for {key!r} abandoned"))
            return
        exc = src.exception()
        if exc is not None:
            mine.set_exception(exc)
        else:
            mine.set_result(src.result())

    def _gave_up(self, key: K, mine: asyncio.Future[V]) -> None:
        # The key's current future: the one ``_relay`` asked again for, if it had to.
        src = self._cache[key]
        if mine.cancelled() and not src.done():
            self._batch_of(key).drop()

    async def load_many(self, keys: Iterable[K]) -> list[V]:
        """The values of ``keys``; the first key's failure (in key order) is raised."""
        outcomes = await self._settled(list(keys))
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return outcomes  # type: ignore[return-value]  # no exceptions left: all V

    async def load_each(self, keys: Iterable[K], isolated: type[E]) -> list[V | E]:
        """The values of ``keys``, a key's own ``isolated`` failure in its place.

        Any other failure (the backend is down) is raised: the first, in key order.
        """
        outcomes = await self._settled(list(keys))
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, isolated):
                raise outcome
        return outcomes  # type: ignore[return-value]  # only V and E are left

    async def _settled(self, keys: list[K]) -> list[V | BaseException]:
        """Every key's outcome, in order, each retrieved (so no failure is logged as never
        retrieved). Awaited one by one rather than gathered: the keys of one batch are
        answered together, so after the first the rest are done and cost no wake-up.
        """
        want = self._want
        futures = [want(k) for k in keys]
        outcomes: list[V | BaseException] = []
        for index, fut in enumerate(futures):
            if not fut.done():
                fut = await self._done(keys, futures, index)
            try:
                outcomes.append(fut.result())
            except BaseException as exc:
                outcomes.append(exc)
        return outcomes

    async def _done(
        self, keys: list[K], futures: list[asyncio.Future[V]], index: int
    ) -> asyncio.Future[V]:
        """The key's future once done (asked again if its batch was abandoned). Awaited
        through a future of this waiter's own, as a shield does: a task cancelled while
        awaiting a future cancels that future, which other waiters share. Cancelled, it
        gives up its interest in the keys it has not reached."""
        key, fut = keys[index], futures[index]
        for _ in range(_TRIES):
            if not fut.done():
                waiter = fut.get_loop().create_future()
                fut.add_done_callback(partial(_wake, waiter))
                try:
                    await waiter  # set (never cancelled) by the shared future's end
                except asyncio.CancelledError:  # this waiter's own task, then
                    self._give_up(keys, futures, index)
                    raise
            if not fut.cancelled():
                return fut
            # Its batch was abandoned by everybody else as this waiter joined.
            fut = futures[index] = self._want(key)
        failed: asyncio.Future[V] = fut.get_loop().create_future()
        failed.set_exception(RuntimeError(f"batch for {key!r} abandoned"))
        return failed

    def _give_up(self, keys: list[K], futures: list[asyncio.Future[V]], start: int) -> None:
        for key, fut in zip(keys[start:], futures[start:], strict=True):
            if fut.done():
                if not fut.cancelled():
                    fut.exception()  # retrieved, as a gather would have
            else:
                self._batch_of(key).drop()

    async def _settle(self) -> None:
        """Wait until ``quiet_ticks`` iterations pass with no new load."""
        open_ = self._open.futures
        seen, quiet = len(open_), 0
        for _ in range(self._max):
            await asyncio.sleep(0)
            if len(open_) == seen:
                quiet += 1
                if quiet >= self._quiet:
                    break
            else:
                seen, quiet = len(open_), 0

    async def _dispatch(self) -> None:
        await self._settle()
        batch, self._open, self._task = self._open, _Batch(), None
        pending = batch.futures
        if batch.wanted <= 0:  # every waiter left while the level settled
            for fut in pending.values():
                fut.cancel()
            return
        keys = list(pending)
        self.batches += 1
        batch.task = asyncio.current_task()
        self._sent.append(batch)
        try:
            values = await self._load_fn(keys)
            if len(values) != len(keys):
                raise RuntimeError(f"batch function returned {len(values)} for {len(keys)} keys")
        except asyncio.CancelledError:
            # Abandoned (or the loop is closing): a later load of these keys asks again.
            for fut in pending.values():
                fut.cancel()
            raise
        except BaseException as exc:
            for fut in pending.values():
                if not fut.done():
                    fut.set_exception(exc)
                    fut.exception()  # delivered to its waiters; none left is no bug
            if not isinstance(exc, Exception):
                raise
            return
        finally:
            batch.task = None
            self._sent.remove(batch)
        for fut, value in zip(pending.values(), values, strict=True):
            if fut.done():
                continue
            if isinstance(value, BaseException):
                fut.set_exception(value)
                fut.exception()
            else:
                fut.set_result(value)


def _wake(waiter: asyncio.Future[None], _: object) -> None:
    """Wake a waiter of a shared future (the waiter's own future stands in for it, so
    cancelling the waiter's task cancels only that)."""
    if not waiter.done():
        waiter.set_result(None)

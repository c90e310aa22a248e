"""Single flight: identical concurrent calls share one execution.

The first caller of a key (the leader) starts the work as a task of its own; callers of
the same key that arrive while it runs (followers) wait for that task's result. Every
caller waits through ``asyncio.shield``, so a caller that leaves (its deadline passed,
its client went away) leaves the work running for the others; when the last one leaves
before the result, the task is cancelled, which frees what it holds (pooled
connections, admission slots). A finished flight is forgotten at once: a caller that
comes after the result starts a new one, so nothing is served from a cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


@dataclass
class _Flight(Generic[T]):
    task: asyncio.Task[T]
    waiters: int = 0


class Flights(Generic[K, T]):
    """The flights under way, by key. ``started`` and ``joined`` count leaders and
    followers (for tests and benchmarks)."""

    def __init__(self) -> None:
        self._open: dict[K, _Flight[T]] = {}
        self.started = 0
        self.joined = 0

    def __len__(self) -> int:
        return len(self._open)

    async def join(self, key: K, start: Callable[[], Awaitable[T]]) -> T:
        """The result of the flight for ``key``, started with ``start`` when none is under
        way. Cancelling the caller cancels only its wait (and the work, if it was the
        last one waiting)."""
        flight = self._open.get(key)
        if flight is None or flight.task.done():
            flight = _Flight(asyncio.ensure_future(start()))
            self._open[key] = flight
            flight.task.add_done_callback(lambda _: self._forget(key, flight))
            self.started += 1
        else:
            self.joined += 1
        flight.waiters += 1
        try:
            return await asyncio.shield(flight.task)
        finally:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                # Nobody is left to answer: stop the work rather than finish it for no one.
                self._forget(key, flight)
                flight.task.cancel()

    def _forget(self, key: K, flight: _Flight[T]) -> None:
        if self._open.get(key) is flight:
            del self._open[key]

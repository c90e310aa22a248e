"""Single flight: identical concurrent calls share one execution.

The first caller of a key (the leader) starts the work as a task of its own; callers of
the same key that arrive while it runs (followers) wait for that task's result. Every
caller waits through ``asyncio.shield``, so a caller that leaves (its deadline passed,
its client went away) leaves the work running for the others; when the last one leaves
before the result, the task is cancelled, which frees what it holds (pooled
connections, admission slots). A finished flight is forgotten at once: a caller that
comes after the result starts a new one, so nothing is served from a cache.

Unless ``fresh_for_s`` is set: then a flight's result (a result, not an exception or a
cancellation) answers identical calls that arrive within that many seconds of it, so
fifty dashboards polling the same page every few seconds cost about one execution per
window, not one per poll that misses the others' flight by a few milliseconds. A call
answered from a result past half its window also starts a refresh in the background
(bounded by ``refresh_deadline_s``), so steady polls keep being answered at once, never
with a result older than the window. At most ``max_fresh`` results are kept, each only
while fresh.
"""

from __future__ import annotations

import asyncio
import time
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

    def __init__(
        self,
        fresh_for_s: float = 0.0,
        max_fresh: int = 256,
        clock: Callable[[], float] = time.monotonic,
        keep: Callable[[T], bool] = lambda _: True,
        refresh_deadline_s: float = 30.0,
    ) -> None:
        self._open: dict[K, _Flight[T]] = {}
        self.fresh_for_s = fresh_for_s
        self.max_fresh = max_fresh
        self._clock = clock
        self._keep = keep  # which results may answer later calls (not a refusal, say)
        self.refresh_deadline_s = refresh_deadline_s
        self.refreshed = 0
        # key -> (when the result came, the result), oldest first
        self._fresh: dict[K, tuple[float, T]] = {}
        self.started = 0
        self.joined = 0
        self.served_fresh = 0

    def __len__(self) -> int:
        return len(self._open)

    async def join(self, key: K, start: Callable[[], Awaitable[T]]) -> T:
        """The result of the flight for ``key``, started with ``start`` when none is under
        way. Cancelling the caller cancels only its wait (and the work, if it was the
        last one waiting)."""
        if self.fresh_for_s > 0:
            kept = self._fresh_result(key)
            if kept is not None:
                self.served_fresh += 1
                if self._clock() - kept[0] > self.fresh_for_s / 2 and key not in self._open:
                    self.refreshed += 1
                    self._take_off(key, self._bounded(start))
                return kept[1]
        flight = self._open.get(key)
        if flight is None or flight.task.done():
            flight = self._take_off(key, start())
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

    def _take_off(self, key: K, work: Awaitable[T]) -> _Flight[T]:
        flight = _Flight(asyncio.ensure_future(work))
        self._open[key] = flight
        flight.task.add_done_callback(lambda _: self._landed(key, flight))
        return flight

    async def _bounded(self, start: Callable[[], Awaitable[T]]) -> T:
        # Nobody waits on a refresh under a deadline of their own: it gets one here.
        async with asyncio.timeout(self.refresh_deadline_s):
            return await start()

    def _fresh_result(self, key: K) -> tuple[float, T] | None:
        now = self._clock()
        # Expired results go first (oldest first, so the scan stops at the first fresh one).
        while self._fresh:
            oldest = next(iter(self._fresh))
            if now - self._fresh[oldest][0] <= self.fresh_for_s:
                break
            del self._fresh[oldest]
        return self._fresh.get(key)

    def _landed(self, key: K, flight: _Flight[T]) -> None:
        self._forget(key, flight)
        task = flight.task
        if self.fresh_for_s <= 0 or task.cancelled() or task.exception() is not None:
            return
        if not self._keep(task.result()):
            return
        self._fresh.pop(key, None)  # re-inserted last: the order stays oldest first
        self._fresh[key] = (self._clock(), task.result())
        while len(self._fresh) > self.max_fresh:
            del self._fresh[next(iter(self._fresh))]

    def _forget(self, key: K, flight: _Flight[T]) -> None:
        if self._open.get(key) is flight:
            del self._open[key]

"""The garbage collector once serving: frozen after start-up, and run between requests.

A large answer allocates hundreds of thousands of objects that hold no cycles, and
CPython's default of a first-generation collection every 700 allocations spent a third
of such a request scanning them (docs/benchmarks.md, "Nested query"). So, once the app's
lifespan has opened the backends (``GcSettings``):

- the objects made so far (modules, the schema, the backends' clients) are frozen out
  of every later scan (``gc.freeze``);
- with ``idle`` (the default) the automatic collector is off and ``IdleCollector``
  collects instead, when no request is in flight: a collection's pause falls between
  requests, never inside one. A server never idle still collects once ``max_pending``
  allocations are pending or ``max_wait_s`` have passed without a collection, so memory
  stays bounded under constant load; a full
  collection after every ``full_after`` young ones returns what repeated large answers
  left in cycles, so memory stays flat across identical queries;
- without ``idle``, the automatic collector runs with a first threshold of
  ``threshold`` allocations.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class GcSettings:
    """The garbage collector once serving. Env prefix ``OPENRL_INSPECT_GC_``."""

    # gc.freeze() after start-up: the modules, the schema and the backends' clients are
    # never scanned again.
    freeze: bool = True
    # Allocations (net of frees) between first-generation collections; 0 keeps
    # CPython's 700. Measured: bench/bench_nested_query.py --gc.
    threshold: int = 50_000
    # Collect between requests only (IdleCollector), not inside one.
    idle: bool = True
    # Seconds between the idle collector's looks at the allocation count.
    idle_check_s: float = 0.25
    # Pending allocations past which the idle collector collects even mid-request, and
    # seconds without an idle moment after which it does (a server never idle).
    max_pending: int = 2_000_000
    max_wait_s: float = 2.0
    # Young collections between full ones (what cycles survived into the old generation).
    full_after: int = 8


def tune_gc(settings: GcSettings) -> None:
    if settings.freeze:
        gc.collect()
        gc.freeze()
    if settings.threshold > 0:
        gc.set_threshold(settings.threshold, *gc.get_threshold()[1:])
    if settings.idle:
        gc.disable()


class IdleCollector:
    """Collects when ``busy()`` says no request is in flight (or too much is pending)."""

    def __init__(
        self,
        settings: GcSettings,
        busy: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.busy = busy
        self.clock = clock
        self.last = clock()
        self.young = 0
        # Counted for the benchmarks and tests: collections and those made mid-request.
        self.collections = 0
        self.forced = 0

    def step(self) -> None:
        """One look: collect if there is enough pending and nobody waits on us."""
        pending = gc.get_count()[0]
        threshold = self.settings.threshold or 700
        if pending < threshold:
            return
        busy = self.busy()
        waited = self.clock() - self.last
        if busy and pending < self.settings.max_pending and waited < self.settings.max_wait_s:
            return
        self.young += 1
        full = self.young >= self.settings.full_after
        gc.collect(2 if full else 1)
        if full:
            self.young = 0
        self.collections += 1
        self.forced += busy
        self.last = self.clock()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.settings.idle_check_s)
            self.step()

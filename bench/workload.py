"""The simulated caller's CPU work, shared by both recorder benchmarks."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

# --gpu-wait spin: the caller's wait on its GPU spins instead of sleeping.
SPIN = False


def cpu_work(n: int) -> int:
    """Pure-Python work that holds the GIL (tokenising, bookkeeping, kernel launches)."""
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) & 0xFFFFFFFF
    return acc


def calibrate(target_s: float) -> int:
    """How many ``cpu_work`` iterations take about ``target_s`` on this machine now."""
    n = 10_000
    while True:
        t = time.perf_counter()
        cpu_work(n)
        dt = time.perf_counter() - t
        if dt > 0.05:
            return max(1, int(n * target_s / dt))
        n *= 2


def remote(server: Any) -> None:
    """Run the benchmark's redis-server at the lowest priority.

    In production Redis is on another machine; here it shares two cores with the
    caller, and without this a pipeline's commands would be counted as the recorder's
    cost to a caller whose core redis-server happened to take.
    """
    if server.proc is not None:
        os.setpriority(os.PRIO_PROCESS, server.proc.pid, 19)


def gpu_wait(seconds: float) -> None:
    """A trainer's wait on its GPU: asleep (``time.sleep``), or with ``SPIN`` spinning as
    a CUDA synchronize does by default while a core is free, the GIL released between
    looks. Spinning has no wake-up latency, the noise a sleeping wait brings on a shared
    machine (see the A/A runs in docs/benchmarks.md)."""
    if not SPIN:
        time.sleep(seconds)
        return
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        time.sleep(0)


async def gpu_await(seconds: float) -> None:
    """A sampler's await on its GPU: ``asyncio.sleep``, or with ``SPIN`` a loop that
    keeps polling (``asyncio.sleep(0)``) until the time is up, as an engine busy-polling
    its outputs does."""
    if not SPIN:
        await asyncio.sleep(seconds)
        return
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:  # noqa: ASYNC110  # the busy poll is the point
        await asyncio.sleep(0)


def gate(xs: list[float], unit: str, within: Callable[[float], bool]) -> str:
    """Median and [min - max] of paired changes, and whether the whole spread is within."""
    med = statistics.median(xs)
    held = "held" if all(within(x) for x in xs) else "NOT held over the spread"
    rounds = " ".join(f"{x:+.2f}" for x in xs)
    return (
        f"{med:+.2f} {unit} [{min(xs):+.2f} - {max(xs):+.2f}] (n={len(xs)}); {held} "
        f"(in round order: {rounds})"
    )

"""The simulated caller's CPU work, shared by both recorder benchmarks."""

from __future__ import annotations

import time


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

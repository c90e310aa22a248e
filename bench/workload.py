"""The simulated caller's CPU work, shared by both recorder benchmarks."""

from __future__ import annotations

import os
import time
from typing import Any


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

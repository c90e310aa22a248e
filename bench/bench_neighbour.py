"""How much work on the other vCPU slows Python work on this one.

Issue 17 asks where a recorder's cost to a trainer comes from when nothing of the flush
runs on the trainer's core (the process flusher). On this machine kind the answer is the
neighbour: two vCPUs of a VM are not two independent cores. This measures it directly:
a pure-Python work unit (the benchmarks' ``cpu_work``, about 4 ms) pinned to one vCPU,
timed with the other vCPU idle and with a process busy on it, alternating, per round the
ratio of medians. ``--duty`` keeps the neighbour busy only that fraction of each
millisecond, as a flusher and redis-server are (a few per cent).

    .venv/bin/python bench/bench_neighbour.py [--rounds 7] [--duty 1.0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from workload import calibrate, cpu_work

_NEIGHBOUR = """
import os, time
os.sched_setaffinity(0, {%d})
duty = %r
while True:
    start = time.perf_counter()
    while time.perf_counter() - start < duty * 0.001:
        pass
    if duty < 1.0:
        time.sleep((1.0 - duty) * 0.001)
"""


def units(work: int, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        cpu_work(work)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(args: argparse.Namespace) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("needs two CPUs")
    here, there = cpus[0], cpus[1]
    os.sched_setaffinity(0, {here})
    work = calibrate(0.004)
    ratios = []
    for _ in range(args.rounds):
        alone = units(work, args.units)
        proc = subprocess.Popen([sys.executable, "-c", _NEIGHBOUR % (there, args.duty)])
        try:
            time.sleep(0.2)
            busy = units(work, args.units)
        finally:
            proc.kill()
            proc.wait()
        time.sleep(0.2)
        ratios.append(busy / alone)
        print(
            f"  alone {alone * 1e3:.2f} ms, neighbour busy {busy * 1e3:.2f} ms: x{busy / alone:.3f}"
        )
    print(
        f"bench/bench_neighbour.py --rounds {args.rounds} --duty {args.duty}: "
        f"a {args.units}-unit median of ~4 ms Python work with the other vCPU busy "
        f"{args.duty:.0%} of the time: x{statistics.median(ratios):.3f} "
        f"[{min(ratios):.3f} - {max(ratios):.3f}]; load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--units", type=int, default=60)
    parser.add_argument("--duty", type=float, default=1.0, help="neighbour's busy fraction")
    main(parser.parse_args())

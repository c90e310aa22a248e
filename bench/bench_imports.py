"""Benchmark: how long a fresh interpreter takes to import the resolvers and to answer ``--help``.

Each figure is the wall time of a new process (``python -c "import ..."`` or the
console script): one resolver module, all six resolver areas at once, and
``openrl-inspect --help``; the cases alternate within each round so drift hits them
alike. Printed: median with p25 - p75 and min - max of each.

The floor beside them: an interpreter that imports nothing of ours (``python -c pass``),
so the product's own share is the difference.

    .venv/bin/python bench/bench_imports.py --rounds 21
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESOLVERS = [
    "openrl_inspect.resolvers.state.reads",
    "openrl_inspect.resolvers.cluster.reads",
    "openrl_inspect.resolvers.cluster.counting",
    "openrl_inspect.resolvers.metrics.reads",
    "openrl_inspect.resolvers.logs.reads",
    "openrl_inspect.resolvers.summary.model",
]


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    py = sys.executable
    cli = str(Path(py).with_name("openrl-inspect"))
    cases = {
        "python (nothing imported)": [py, "-c", "pass"],
        "one resolver (state.reads)": [py, "-c", f"import {RESOLVERS[0]}"],
        "every resolver": [py, "-c", "import " + ", ".join(RESOLVERS)],
        "openrl-inspect --help": [cli, "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, cmd in cases.items():  # alternating: each round runs every case once
            times[name].append(_wall(cmd))
    for name, ts in times.items():
        q = statistics.quantiles(ts, n=4)
        print(
            f"{name:30s} median {statistics.median(ts) * 1000:6.0f} ms "
            f"[p25 {q[0] * 1000:.0f} - p75 {q[2] * 1000:.0f}, "
            f"min {min(ts) * 1000:.0f} - max {max(ts) * 1000:.0f}] n={len(ts)}"
        )


if __name__ == "__main__":
    main()

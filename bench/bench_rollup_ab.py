"""The rollup script before and after issue 17's second pass, in one process, alternating.

``bench_flush_profile.py`` compares rollups on and off; comparing two commits with it
means two processes minutes apart, and on a shared machine the load moves more than the
script does. Here three arms alternate round by round on one redis-server, each draining
the realistic mix (``bench_recorder.fill_mix``) from a thread-mode recorder:

- ``first``: the batches as the first rollup writer sent them: every script by ``EVAL``
  with its body, the first rollup script (``tests/recorder/rollup_v1.lua``), every op's
  step looked up by the script;
- ``now``: the recorder as it is;
- ``off``: no rollups (``Batch.rollup_step``/``rollup_op`` do nothing).

Per round: records/s; Redis's CPU per record from ``INFO cpu`` (the server's user + sys
time, which a preempted server does not accrue, unlike ``commandstats``' microseconds);
and ``commandstats``' top-level microseconds per record. Medians [min - max].

    .venv/bin/python bench/bench_rollup_ab.py [--rounds 7] [--units 4000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_flush_profile import INNER, rollups
from bench_recorder import KEEP, fill_mix
from openrl_inspect.recorder import Recorder, RecorderSettings
from openrl_inspect.recorder._batch import Batch, Command
from openrl_inspect.recorder._rollup import ROLLUP_SHA
from openrl_inspect.recorder._scripts import body
from openrl_inspect.state import rollup
from support.redis_server import RedisServer

FIRST = (
    (Path(__file__).resolve().parents[1] / "tests" / "recorder" / "rollup_v1.lua")
    .read_text()
    .replace("{EDGES}", "{" + ", ".join(repr(e) for e in rollup.BUCKET_EDGES_S) + "}")
)


@contextmanager
def first() -> Iterator[None]:
    """Batches as the first rollup writer emitted them (the scripts are the last commands)."""
    commands, rollup_step = Batch.commands, Batch.rollup_step

    def old_commands(self: Batch) -> list[Command]:
        out = commands(self)
        i = len(out) - 1
        while i >= 0 and out[i][0] == "EVALSHA":
            sha = out[i][1]
            out[i] = ("EVAL", FIRST if sha == ROLLUP_SHA else body(sha), *out[i][2:])
            i -= 1
        return out

    def old_step(self: Batch, mid: str, step: int, oid: str | None = None) -> None:
        rollup_step(self, mid, step)

    Batch.commands = old_commands  # type: ignore[method-assign]
    Batch.rollup_step = old_step  # type: ignore[method-assign]
    try:
        yield
    finally:
        Batch.commands, Batch.rollup_step = commands, rollup_step  # type: ignore[method-assign]


def redis_cpu(client: redis.Redis) -> float:
    info: dict[str, Any] = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def one(client: redis.Redis, url: str, units: int, offset: int, arm: str) -> dict[str, float]:
    client.flushall()
    client.script_flush()  # each arm loads its scripts: no arm rides on another's cache
    client.config_resetstat()
    settings = RecorderSettings(
        url=url, flush_at_exit=False, flusher="thread", capacity=10_000_000, batch_size=1024
    )
    with first() if arm == "first" else rollups(arm == "now"):
        rec = Recorder(client, KEEP, settings=settings, start=False)
        n = fill_mix(rec, units, offset)
        cpu0 = redis_cpu(client)
        wall = time.perf_counter()
        rec._flusher._drain(None, time.monotonic() + 300)  # type: ignore[union-attr]
        wall = time.perf_counter() - wall
        cpu = redis_cpu(client) - cpu0
        st = rec.close(30)
    assert st.written == n and st.dropped == 0, st
    stats: dict[str, Any] = client.info("commandstats")
    usec = sum(
        v["usec"]
        for k, v in stats.items()
        if k.removeprefix("cmdstat_").split("|")[0] not in INNER and "info" not in k
    )
    return {"rate": n / wall / 1000, "cpu": cpu / n * 1e6, "usec": usec / n}


def fmt(xs: list[float], unit: str) -> str:
    return f"{statistics.median(xs):.1f} {unit} [{min(xs):.1f} - {max(xs):.1f}]"


def main(args: argparse.Namespace) -> None:
    server = RedisServer().start()
    client = redis.Redis.from_url(server.url, decode_responses=True)
    arms = ["first", "now", "off"]
    results: dict[str, list[dict[str, float]]] = {a: [] for a in arms}
    try:
        for r in range(args.rounds):
            for arm in arms[r % 3 :] + arms[: r % 3]:  # each arm leads in turn
                results[arm].append(one(client, server.url, args.units, r * args.units, arm))
    finally:
        client.close()
        server.cleanup()
    print(f"bench/bench_rollup_ab.py --rounds {args.rounds} --units {args.units}")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")
    for arm in arms:
        rs = results[arm]
        print(
            f"{arm:5s}: {fmt([x['rate'] for x in rs], 'k records/s')}; Redis CPU "
            f"{fmt([x['cpu'] for x in rs], 'us/record')}; commandstats "
            f"{fmt([x['usec'] for x in rs], 'us/record')}"
        )
    for arm in ("first", "now"):
        ratio = [a["rate"] / b["rate"] for a, b in zip(results[arm], results["off"], strict=True)]
        print(f"{arm:5s} / off, per round: {fmt([100 * x for x in ratio], '%')}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--units", type=int, default=4000)
    main(parser.parse_args())

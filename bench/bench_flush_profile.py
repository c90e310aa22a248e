"""Where a flush's time goes: the flusher's CPU per record against Redis's, with the
per-model rollups (issue 13) and without them, side by side in one run.

A thread-mode recorder (its flusher driven here, in this process, so its CPU is this
process's) is filled with the realistic mix of ``bench_recorder.py`` (26 records per
trainer step over 16 models) and drained into a real redis-server. Reported per round:
records/s of the whole drain, the flusher's CPU per record (``process_time``), and
Redis's CPU per record (``INFO commandstats``, top-level commands only: a script's inner
calls are in its own time); then the commands that cost Redis the most. Rounds alternate
rollups on and off (off: ``Batch.rollup_step``/``rollup_op`` do nothing, as before
issue 13).

    .venv/bin/python bench/bench_flush_profile.py [--rounds 7] [--units 4000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_recorder import KEEP, fill_mix
from openrl_inspect.recorder import Recorder, RecorderSettings
from openrl_inspect.recorder._batch import Batch
from support.redis_server import RedisServer


@contextmanager
def rollups(on: bool) -> Any:
    saved = Batch.rollup_step, Batch.rollup_op
    if not on:
        Batch.rollup_step = lambda self, mid, step, oid=None: None  # type: ignore[method-assign]
        Batch.rollup_op = lambda self, mid, oid: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        Batch.rollup_step, Batch.rollup_op = saved  # type: ignore[method-assign]


# Commands a script calls are counted under their own names as well; the script's
# time already includes them.
INNER = {"hmget", "hget", "exists", "zcard", "hincrby", "hincrbyfloat", "ttl", "zrange"}


def one(client: redis.Redis, url: str, units: int, offset: int, on: bool) -> dict[str, Any]:
    client.flushall()
    client.config_resetstat()
    settings = RecorderSettings(
        url=url, flush_at_exit=False, flusher="thread", capacity=10_000_000, batch_size=1024
    )
    with rollups(on):
        rec = Recorder(client, KEEP, settings=settings, start=False)
        n = fill_mix(rec, units, offset)
        wall, cpu = time.perf_counter(), time.process_time()
        rec._flusher._drain(None, time.monotonic() + 300)  # type: ignore[union-attr]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        st = rec.close(30)
    assert st.written == n and st.dropped == 0, st
    stats: dict[str, Any] = client.info("commandstats")
    by_cmd = {k.removeprefix("cmdstat_"): v for k, v in stats.items()}
    top = {k: v for k, v in by_cmd.items() if k.split("|")[0] not in INNER}
    server = sum(v["usec"] for v in top.values()) / 1e6
    return {
        "rate": n / wall / 1000,
        "client_us": cpu / n * 1e6,
        "server_us": server / n * 1e6,
        "top": sorted(by_cmd.items(), key=lambda kv: -kv[1]["usec"])[:6],
        "n": n,
    }


def fmt(xs: list[float], unit: str) -> str:
    return f"{statistics.median(xs):.1f} {unit} [{min(xs):.1f} - {max(xs):.1f}]"


def main(args: argparse.Namespace) -> None:
    server = RedisServer().start()
    client = redis.Redis.from_url(server.url, decode_responses=True)
    results: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    try:
        for r in range(args.rounds):
            for on in (True, False) if r % 2 == 0 else (False, True):
                results[on].append(one(client, server.url, args.units, r * args.units, on))
    finally:
        client.close()
        server.cleanup()
    print(f"bench/bench_flush_profile.py --rounds {args.rounds} --units {args.units}")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")
    for on in (True, False):
        rs = results[on]
        print(
            f"rollups {'on ' if on else 'off'}: {rs[0]['n']:,} records per round; "
            f"{fmt([x['rate'] for x in rs], 'k records/s')}; flusher CPU "
            f"{fmt([x['client_us'] for x in rs], 'us/record')}; Redis CPU "
            f"{fmt([x['server_us'] for x in rs], 'us/record')}"
        )
        for name, v in rs[-1]["top"]:
            print(f"    {name}: {v['calls']} calls, {v['usec_per_call']:.1f} us each")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--units", type=int, default=4000)
    main(parser.parse_args())

"""Benchmark: sessions -> models -> steps -> ops, by default 1,000 models x 20 steps x 4 ops.

Starts its own redis-server on a free loopback port, fills it through the recorder from
the simulator, then runs the nested query through the ASGI app on each execution path
(``Switches.execution``: stock and plan) and, with ``--gc``, each garbage-collector
setting, alternating the order round by round; every variant's answer must be identical
byte for byte. Printed per variant: the median latency with its [min - max] over the
rounds, the median per-round ratio to the orjson floor, and Redis round trips per query;
then the peak RSS of the process (the app, the client and the answers).

The floors beside them, measured in every round on the same answer: ``orjson.dumps`` of
it, and stock graphql-core executing the same document over the answer as plain dicts
with its default resolvers (no Strawberry, no backend).

    .venv/bin/python bench/bench_nested_query.py --rounds 7 --gc frozen-50000
    .venv/bin/python bench/bench_nested_query.py --sessions 10 --rounds 5 \
        --gc default,frozen,frozen-10000,frozen-50000,frozen-200000

The largest query the default limits allow (1 session x 100 models x 100 steps x 23
ops, cost 240,101 nodes) is the same document at that shape; ``--deadline`` sets the
request deadline (default the product's 30 s; 0: none; an answer cut by it is printed
and ends the run) and ``--pair`` then sends two at once:

    .venv/bin/python bench/bench_nested_query.py --sessions 1 --models 100 --steps 100 \
        --ops 23 --modes plan --rounds 2 --deadline 0 --pair
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import graphql
import httpx
import orjson
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.core.settings import Bounds, Settings, Switches
from openrl_inspect.simulator import SimConfig
from support.harness import app_client, populate
from support.redis_server import RedisServer

QUERY = """
query($s: Int!, $m: Int!, $st: Int!, $o: Int!) {
  sessions(first: $s) { totalCount nodes { id owner createdAt
    models(first: $m) { totalCount nodes { id state baseModel stepCount
      steps(first: $st) { nodes { number startedAt finishedAt metrics
        ops(first: $o) { nodes { id kind status acceptedAt startedAt finishedAt
          queueWaitSeconds durationSeconds workerId } } } } } } } }
}
"""
SDL = Path(__file__).resolve().parents[1] / "schema.graphql"
DEFAULT_THRESHOLD = gc.get_threshold()


def set_gc(name: str) -> None:
    """``default`` (CPython's), ``frozen`` (gc.freeze, default thresholds),
    ``frozen-N`` (gc.freeze and a generation-0 threshold of N) or ``idle`` (serve's)."""
    gc.collect()
    gc.enable()
    if name == "idle":
        # serve's default (web.collector): frozen, and no collection inside a request
        # (the collect above, between requests, is outside the timing).
        gc.freeze()
        gc.disable()
        return
    if name == "default":
        gc.unfreeze()
        gc.set_threshold(*DEFAULT_THRESHOLD)
        return
    gc.freeze()
    threshold = int(name.split("-")[1]) if "-" in name else DEFAULT_THRESHOLD[0]
    gc.set_threshold(threshold, *DEFAULT_THRESHOLD[1:])


def spread(values: list[float], scale: float = 1.0, fmt: str = ".0f") -> str:
    s = [v * scale for v in values]
    return f"{statistics.median(s):{fmt}} [{min(s):{fmt}} - {max(s):{fmt}}]"


@asynccontextmanager
async def clients(
    store: RedisStateStore, modes: list[str], deadline_s: float
) -> AsyncIterator[dict[str, Any]]:
    async with AsyncExitStack() as stack:
        out = {}
        for mode in modes:
            limits = Settings(
                bounds=Bounds(request_deadline_s=deadline_s), switches=Switches(execution=mode)
            )
            out[mode] = await stack.enter_async_context(app_client(store, limits))
        yield out


async def timed(client: httpx.AsyncClient, payload: dict[str, Any]) -> tuple[float, bytes]:
    t = time.perf_counter()
    resp = await client.post("/api/v1/inspect/graphql", json=payload)
    return time.perf_counter() - t, resp.content


def floors(
    body: dict[str, Any], plain: graphql.GraphQLSchema, variables: Any
) -> tuple[float, float]:
    ser = float("inf")
    for _ in range(3):  # the floor: its best of three, as one dump is noisy under load
        t = time.perf_counter()
        orjson.dumps(body)
        ser = min(ser, time.perf_counter() - t)
    document = graphql.parse(QUERY)
    t = time.perf_counter()
    result = graphql.execute_sync(plain, document, body["data"], variable_values=variables)
    dicts = time.perf_counter() - t
    assert result.errors is None and result.data == body["data"], result.errors
    return ser, dicts


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """The process's resident memory now (VmRSS), to see whether rounds make it grow."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def pair(client: httpx.AsyncClient, payload: dict[str, Any]) -> str:
    """Two requests at once: their wall time and statuses."""
    t = time.perf_counter()
    both = await asyncio.gather(*(timed(client, payload) for _ in range(2)))
    codes = [
        orjson.loads(content).get("errors", [{}])[0].get("extensions", {}).get("code", "ok")
        for _, content in both
    ]
    return f"two at once: {time.perf_counter() - t:.1f} s wall, answers {codes}"


# size: the benchmark's one procedure, read top to bottom
async def main(args: argparse.Namespace) -> None:
    modes = args.modes.split(",")
    gcs = args.gc.split(",")
    variants = [(m, g) for g in gcs for m in modes]
    server = RedisServer().start()
    try:
        writer = aioredis.Redis.from_url(server.url, decode_responses=True)
        config = SimConfig(
            seed=1,
            sessions=args.sessions,
            models_per_session=args.models,
            steps_per_model=args.steps,
            ops_per_step=args.ops,
            scenarios=False,
            nodes_per_pool=(("h100", args.sessions * args.models),),
        )
        t0 = time.perf_counter()
        await populate(writer, config)
        fill_s = time.perf_counter() - t0
        await writer.aclose()

        # The product's own client (RESP2, its pool), with the round trip's deadline
        # given (a full-size level takes seconds).
        store = RedisStateStore.from_settings(RedisSettings(url=server.url, timeout_s=args.timeout))
        variables = {"s": args.sessions, "m": args.models, "st": args.steps, "o": args.ops}
        payload = {"query": QUERY, "variables": variables}
        plain = graphql.build_schema(SDL.read_text(encoding="utf-8"))
        latencies: dict[tuple[str, str], list[float]] = {v: [] for v in variants}
        trips: dict[str, set[int]] = {m: set() for m in modes}
        ser: list[float] = []
        dicts: list[float] = []
        base_rss = peak_rss_mb()
        by_round: list[float] = []
        async with clients(store, modes, args.deadline) as by_mode:
            for mode in modes:  # warm-up, and the answers must agree byte for byte
                elapsed, content = await timed(by_mode[mode], payload)
                errors = orjson.loads(content).get("errors")
                if errors:  # cut by the deadline, say: nothing more to time
                    print(f"{mode} answered in {elapsed:.1f} s with errors {errors[:2]}")
                    print(f"peak RSS: {base_rss:.0f} MB before, {peak_rss_mb():.0f} MB after")
                    await store.aclose()
                    return
                if mode == modes[0]:
                    reference = content
                assert content == reference, f"{mode} answers differently"
            body = orjson.loads(reference)
            for r in range(args.rounds):
                order = variants if r % 2 == 0 else variants[::-1]
                for mode, gc_name in order:
                    set_gc(gc_name)
                    before = store.trips.count
                    elapsed, content = await timed(by_mode[mode], payload)
                    trips[mode].add(store.trips.count - before)
                    assert content == reference
                    latencies[(mode, gc_name)].append(elapsed)
                set_gc("default")
                s, d = floors(body, plain, variables)
                ser.append(s)
                dicts.append(d)
                gc.collect()
                by_round.append(rss_mb())
            rounds_rss = peak_rss_mb()
            paired = await pair(by_mode[modes[0]], payload) if args.pair else ""
        await store.aclose()
        data = body["data"]
        models = sum(len(s["models"]["nodes"]) for s in data["sessions"]["nodes"])
        ops = sum(
            len(st["ops"]["nodes"])
            for s in data["sessions"]["nodes"]
            for m in s["models"]["nodes"]
            for st in m["steps"]["nodes"]
        )
        load = os.getloadavg()
        print(f"machine: {platform.machine()}, {platform.python_version()}, {os.cpu_count()} CPUs")
        print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print(
            f"filled {models} models / {ops} ops in {fill_s:.1f}s; response {len(reference)} bytes"
        )
        print(f"rounds: {args.rounds}, order alternating; median [min - max]")
        print("| variant | latency, ms | ratio to orjson | Redis round trips |")
        print("|---|---|---|---|")
        for variant, lat in latencies.items():
            ratios = [a / b for a, b in zip(lat, ser, strict=True)]
            mode, gc_name = variant
            name = mode if len(gcs) == 1 else f"{mode}, gc {gc_name}"
            print(f"| {name} | {spread(lat, 1e3)} | {spread(ratios)}x | {sorted(trips[mode])} |")
        plain_ratios = [a / b for a, b in zip(dicts, ser, strict=True)]
        print(
            f"| graphql-core over plain dicts | {spread(dicts, 1e3)} | {spread(plain_ratios)}x | - |"
        )
        print(f"| orjson.dumps of the answer | {spread(ser, 1e3, '.1f')} | 1x | - |")
        print(f"peak RSS: {base_rss:.0f} MB after the fill, {rounds_rss:.0f} MB after the rounds")
        print("RSS after each round, MB: " + ", ".join(f"{r:.0f}" for r in by_round))
        if paired:
            print(f"{paired}; peak RSS {peak_rss_mb():.0f} MB")
        if "stock" in modes and "plan" in modes:
            for gc_name in gcs:
                stock, plan = latencies[("stock", gc_name)], latencies[("plan", gc_name)]
                gains = [s / p for s, p in zip(stock, plan, strict=True)]
                print(f"stock / plan per round (gc {gc_name}): {spread(gains, 1, '.2f')}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--ops", type=int, default=4)
    parser.add_argument("--modes", default="stock,plan", help="execution paths, comma-separated")
    parser.add_argument("--gc", default="default", help="gc settings, comma-separated (set_gc)")
    parser.add_argument("--timeout", type=float, default=30.0, help="per Redis round trip")
    parser.add_argument(
        "--deadline", type=float, default=30.0, help="request deadline, s (0: none)"
    )
    parser.add_argument("--pair", action="store_true", help="then two requests at once")
    asyncio.run(main(parser.parse_args()))

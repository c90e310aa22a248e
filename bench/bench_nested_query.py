"""Benchmark: sessions -> models -> steps -> ops at 1,000 models x 20 steps x 4 ops.

Starts its own redis-server on a free loopback port, fills it through the recorder from
the simulator, then runs the nested query through the ASGI app N times and reports the
median latency, Redis round trips per query, and the ratio to serialising the same
result with orjson.

    .venv/bin/python bench/bench_nested_query.py [--runs 7] [--sessions 50] [--models 20]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from pathlib import Path

import orjson
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openrl_inspect.adapters.redis import RedisStateStore
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


async def main(args: argparse.Namespace) -> None:
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

        store = RedisStateStore(
            aioredis.Redis.from_url(server.url, decode_responses=True), timeout_s=args.timeout
        )
        variables = {"s": args.sessions, "m": args.models, "st": args.steps, "o": args.ops}
        latencies, trips = [], []
        async with app_client(store) as client:
            payload = {"query": QUERY, "variables": variables}
            await client.post("/api/v1/inspect/graphql", json=payload)  # warm-up
            for _ in range(args.runs):
                before = store.trips.count
                t = time.perf_counter()
                resp = await client.post("/api/v1/inspect/graphql", json=payload)
                latencies.append(time.perf_counter() - t)
                trips.append(store.trips.count - before)
            body = resp.json()
        await store.aclose()
        assert "errors" not in body, body["errors"][:2]
        data = body["data"]
        ops = sum(
            len(st["ops"]["nodes"])
            for s in data["sessions"]["nodes"]
            for m in s["models"]["nodes"]
            for st in m["steps"]["nodes"]
        )
        models = sum(len(s["models"]["nodes"]) for s in data["sessions"]["nodes"])
        ser = []
        for _ in range(args.runs):
            t = time.perf_counter()
            orjson.dumps(body)
            ser.append(time.perf_counter() - t)
        med, med_ser = statistics.median(latencies), statistics.median(ser)
        print(f"machine: {platform.machine()}, {platform.python_version()}, {platform.node()}")
        print(
            f"filled {models} models / {ops} ops in {fill_s:.1f}s; response {len(resp.content)} bytes"
        )
        print(
            f"| nested query median | {med * 1e3:.0f} ms (min {min(latencies) * 1e3:.0f}, max {max(latencies) * 1e3:.0f}, n={args.runs}) |"
        )
        print(
            f"| Redis round trips per query | {statistics.median(trips):.0f} (all runs: {sorted(set(trips))}) |"
        )
        print(f"| orjson.dumps of the same result | {med_ser * 1e3:.1f} ms |")
        print(f"| ratio query / orjson | {med / med_ser:.0f}x |")
    finally:
        server.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--ops", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=30.0, help="per Redis round trip")
    asyncio.run(main(parser.parse_args()))

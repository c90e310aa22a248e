"""Benchmark: the most expensive query the default limits allow, alone and two at once.

1 session x 100 models x 100 steps x 23 ops (230,000 ops) filled through the recorder
into a real redis-server; the query asks for all of it with its timing fields: cost
1 + 100 + 10,000 + 230,000 = 240,101 nodes, under the 250,000 limit. Reports latency,
response size and the process's peak RSS, alone and with two at once (the default
``max_expensive_requests``), with the request deadline off so the figure is the work
(``--deadline 30`` shows the default deadline cutting it short).

    .venv/bin/python bench/bench_worst_query.py [--runs 3] [--deadline 30]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.settings import Limits
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.simulator import SimConfig, Simulation
from support.harness import app_client
from support.redis_server import RedisServer

QUERY = """
{ sessions(first: 1) { nodes { id
    models(first: 100) { nodes { id state stepCount
      steps(first: 100) { nodes { number startedAt finishedAt
        ops(first: 23) { nodes { id kind status queueWaitSeconds durationSeconds } } } } } } } } }
"""


async def fill(writer: aioredis.Redis, config: SimConfig) -> None:
    """The simulated history, flushed in batches (one 900k-record flush times out)."""
    settings = RecorderSettings(
        publish_counters=False, recorder_id="sim", attempt_timeout_s=60, flush_timeout_s=600
    )
    rec = AsyncRecorder(writer, batch_size=20_000, capacity=2_000_000, settings=settings)
    Simulation(config, rec).populate(time.time())
    await rec.flush()


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(args: argparse.Namespace) -> None:
    server = RedisServer().start()
    try:
        writer = aioredis.Redis.from_url(server.url, decode_responses=True)
        config = SimConfig(
            seed=1, sessions=1, models_per_session=100, steps_per_model=100,
            ops_per_step=23, scenarios=False, nodes_per_pool=(("h100", 100),),
        )  # fmt: skip
        await fill(writer, config)
        await writer.aclose()
        store = RedisStateStore(
            aioredis.Redis.from_url(server.url, decode_responses=True), timeout_s=30
        )
        limits = Limits(request_deadline_s=args.deadline)
        payload = {"query": QUERY}
        async with app_client(store, limits) as client:
            base = rss_mb()
            alone = []
            for _ in range(args.runs):
                t = time.perf_counter()
                resp = await client.post("/api/v1/inspect/graphql", json=payload, timeout=600)
                alone.append(time.perf_counter() - t)
            body = resp.json()
            if args.deadline:
                print("| answer with the deadline on |", body.get("errors"), "|")
            else:
                assert "errors" not in body and body["data"]["sessions"]["nodes"], resp.text[:300]
            peak_alone = rss_mb()
            t = time.perf_counter()
            pair = await asyncio.gather(
                *(
                    client.post("/api/v1/inspect/graphql", json=payload, timeout=600)
                    for _ in range(2)
                )
            )
            both = time.perf_counter() - t
            peak_pair = rss_mb()
        await store.aclose()
        ops = resp.text.count('"kind"')
        print(f"machine: {platform.machine()}, {platform.python_version()}, {platform.node()}")
        print(f"| ops returned | {ops} ; response {len(resp.content) / 1e6:.1f} MB |")
        print(
            f"| latency alone | median {statistics.median(alone):.1f} s (n={args.runs}, {', '.join(f'{x:.1f}' for x in alone)}) |"
        )
        print(
            f"| peak RSS | before {base:.0f} MB, after alone {peak_alone:.0f} MB, after two at once {peak_pair:.0f} MB |"
        )
        print(f"| two at once | {both:.1f} s wall; statuses {[r.status_code for r in pair]} |")
    finally:
        server.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=0, help="request deadline (0: off)")
    asyncio.run(main(parser.parse_args()))

"""Benchmark: the overview of 100 models with summaries, warm, one request at a time.

Starts a redis-server on a free loopback port and fills it through the recorder from the
simulator (``--sessions`` x ``--models`` active models, 20 steps x 4 ops each), then asks
the overview's summary query through the ASGI app (httpx, lifespan running, default
settings but single flight, so every request executes) again and again: with the kept
judgements (``resolvers.summary.memo``, the default) and with every model judged afresh
(``Backends.judgements = None``), alternating round by round. Each round's figure is the
median of ``--requests`` requests after one warm-up. The floor beside them, in every
round: the same app answering ``{ models(state: ACTIVE, first: 100) { totalCount nodes
{ id state } } }`` (the page without summaries).

    nice -n -10 .venv/bin/python bench/bench_overview.py --rounds 7
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import httpx
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.core.settings import Settings, Switches
from openrl_inspect.resolvers.summary.memo import Judgements
from openrl_inspect.simulator import SimConfig
from support.harness import app_client, populate
from support.redis_server import RedisServer

OVERVIEW = """query Overview {
  models(state: ACTIVE, first: 100) { totalCount nodes { id state
    summary(steps: 20) { verdict reasons stepsPerMinute medianStepSeconds failedOps stuckOps lostOps }
  } }
}"""
PAGE = "{ models(state: ACTIVE, first: 100) { totalCount nodes { id state } } }"


async def timed(client: httpx.AsyncClient, query: str, n: int) -> float:
    await client.post("/api/v1/inspect/graphql", json={"query": query})  # warm-up
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        resp = await client.post("/api/v1/inspect/graphql", json={"query": query})
        out.append(time.perf_counter() - t0)
        assert resp.status_code == 200 and "errors" not in resp.json(), resp.text[:300]
    return statistics.median(out)


def spread(values: list[float]) -> str:
    ms = [v * 1e3 for v in values]
    return f"{statistics.median(ms):.1f} ms [{min(ms):.1f} - {max(ms):.1f}]"


async def main(args: argparse.Namespace) -> None:
    server = RedisServer().start()
    try:
        writer = aioredis.Redis.from_url(server.url, decode_responses=True)
        config = SimConfig(
            seed=1,
            sessions=args.sessions,
            models_per_session=args.models,
            steps_per_model=20,
            ops_per_step=4,
            scenarios=False,
            nodes_per_pool=(("h100", args.sessions * args.models),),
        )
        await populate(writer, config)
        await writer.aclose()
        settings = Settings(switches=Switches(single_flight=False))
        arms: dict[str, list[float]] = {"kept judgements": [], "judged afresh": [], "floor": []}
        for r in range(args.rounds):
            order = ["kept judgements", "judged afresh"]
            for arm in order if r % 2 == 0 else order[::-1]:
                store = RedisStateStore.from_settings(RedisSettings(url=server.url))
                kept = Judgements() if arm == "kept judgements" else None
                async with app_client(store, settings, judgements=kept) as client:
                    arms[arm].append(await timed(client, OVERVIEW, args.requests))
                    if arm == "judged afresh":
                        arms["floor"].append(await timed(client, PAGE, args.requests))
                await store.aclose()
        load = os.getloadavg()
        print(f"machine: {platform.machine()}, {platform.python_version()}, {os.cpu_count()} CPUs")
        print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print(f"rounds: {args.rounds} x {args.requests} requests; median [min - max] of rounds")
        floor = arms["floor"]
        for arm, values in arms.items():
            ratios = [v / f for v, f in zip(values, floor, strict=True)]
            print(f"| {arm} | {spread(values)} | {statistics.median(ratios):.1f}x the floor |")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS: {rss:.0f} MB")
    finally:
        server.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=9)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--models", type=int, default=20)
    asyncio.run(main(parser.parse_args()))

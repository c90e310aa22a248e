"""Benchmark (issue 13): model summaries from rollups against the scan they replace.

Starts its own redis-server on a free loopback port, fills it through the recorder from
the simulator (1,000 models x 20 steps x 4 ops by default), then asks

    models(state: ACTIVE, first: 100) { ... summary(steps: 20) { verdict reasons
      stepsPerMinute medianStepSeconds failedOps stuckOps lostOps } }

through the ASGI app, of two apps over the same Redis: one that ignores rollups
(``Limits(use_rollups=False)``: today's scan of every op of the last 20 steps) and one
that reads them. The two alternate, round by round, and both answers must be equal.
Reports per path: median latency with min and max, Redis round trips, and the Redis
commands the server executed for the request (``INFO commandstats``, the INFO itself
left out). Not a test: it prints figures for docs/benchmarks.md.

    .venv/bin/python bench/bench_summary_rollups.py --rounds 7 [--gc served]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.core.settings import Limits
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.recorder._batch import Batch
from openrl_inspect.simulator import SimConfig, Simulation
from openrl_inspect.web.server import GcSettings, tune_gc
from support.harness import app_client
from support.redis_server import RedisServer

QUERY = """
query($first: Int!, $steps: Int!) {
  models(state: ACTIVE, first: $first) { totalCount nodes { id
    summary(steps: $steps) { verdict reasons stepsPerMinute medianStepSeconds
      failedOps stuckOps lostOps } } }
}
"""
PATHS = ("scan", "rollups")


async def commands(admin: Any) -> int:
    stats = await admin.info("commandstats")
    return sum(int(v["calls"]) for v in stats.values())


async def ask(http: httpx.AsyncClient, payload: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    t = time.perf_counter()
    resp = await http.post("/api/v1/inspect/graphql", json=payload)
    elapsed = time.perf_counter() - t
    body = resp.json()
    assert "errors" not in body, body["errors"][:2]
    return elapsed, body


async def fill(url: str, config: SimConfig, rollups: bool) -> tuple[float, float]:
    """Write the simulated history; seconds taken and redis-server CPU seconds used."""
    writer = aioredis.Redis.from_url(url, decode_responses=True)
    cpu0 = await redis_cpu(writer)
    t0 = time.perf_counter()
    # The recorder's default batches (512 records), as OpenRL's processes flush: one
    # pipeline of the whole history would outlast the recorder's attempt timeout; the
    # buffer holds the whole history, written as fast as Redis takes it.
    settings = RecorderSettings(publish_counters=False, capacity=1 << 21)
    rec = AsyncRecorder(writer, settings=settings)
    with contextlib.ExitStack() as patches:
        if not rollups:  # the writer as it was before rollups
            for name in ("rollup_step", "rollup_op"):
                patches.enter_context(mock.patch.object(Batch, name, return_value=None))
        Simulation(config, rec).populate(time.time())
        stats = await rec.close(timeout_s=600)
    assert stats.dropped == 0 and stats.pending == 0, stats
    elapsed = time.perf_counter() - t0
    cpu = await redis_cpu(writer) - cpu0
    await writer.aclose()
    return elapsed, cpu


async def redis_cpu(client: Any) -> float:
    info = await client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def world(sessions: int, models: int = 20, steps: int = 20, ops: int = 4) -> SimConfig:
    """The benchmark's history: every model active, one H100 node per model."""
    return SimConfig(
        seed=1,
        sessions=sessions,
        models_per_session=models,
        steps_per_model=steps,
        ops_per_step=ops,
        scenarios=False,
        nodes_per_pool=(("h100", sessions * models),),
    )


async def main(args: argparse.Namespace) -> None:
    server = RedisServer().start()
    try:
        config = world(args.sessions, args.models, args.steps, args.ops)
        bare = RedisServer().start()
        try:  # the writing side: the same history without rollups, for its cost
            bare_fill, bare_cpu = await fill(bare.url, config, rollups=False)
        finally:
            bare.cleanup()
        fill_s, fill_cpu = await fill(server.url, config, rollups=True)
        if args.gc == "served":  # what ``serve`` does once started (server.GcSettings)
            tune_gc(GcSettings())
        admin = aioredis.Redis.from_url(server.url, decode_responses=True)
        payload = {"query": QUERY, "variables": {"first": args.first, "steps": args.steps}}
        stores = {
            # The product's own client (RESP2, its pool), a round trip's deadline long
            # enough for the scan path.
            p: RedisStateStore.from_settings(RedisSettings(url=server.url, timeout_s=30.0))
            for p in PATHS
        }
        limits = {p: Limits(use_rollups=p == "rollups") for p in PATHS}
        seen: dict[str, dict[str, list[float]]] = {
            p: {"ms": [], "trips": [], "commands": []} for p in PATHS
        }
        answers: dict[str, Any] = {}
        async with contextlib.AsyncExitStack() as stack:
            clients = {
                p: await stack.enter_async_context(app_client(stores[p], limits[p])) for p in PATHS
            }
            for p in PATHS:  # warm-up, and the two answers compared
                answers[p] = (await ask(clients[p], payload))[1]
            for r in range(args.rounds):
                order = PATHS if r % 2 == 0 else PATHS[::-1]
                for p in order:
                    trips, calls = stores[p].trips.count, await commands(admin)
                    elapsed, _ = await ask(clients[p], payload)
                    seen[p]["ms"].append(elapsed * 1e3)
                    seen[p]["trips"].append(stores[p].trips.count - trips)
                    seen[p]["commands"].append(await commands(admin) - calls - 1)
        for s in stores.values():
            await s.aclose()
        await admin.aclose()
        scan, fast = (answers[p]["data"]["models"] for p in PATHS)
        # Ages move between the two warm-up requests; the judgement must not.
        assert [(n["id"], n["summary"]["verdict"]) for n in scan["nodes"]] == [
            (n["id"], n["summary"]["verdict"]) for n in fast["nodes"]
        ]
        print(f"machine: {platform.machine()}, Python {platform.python_version()}")
        print(
            f"filled {args.sessions * args.models} models x {args.steps} steps x {args.ops} ops "
            f"in {fill_s:.1f} s; {scan['totalCount']} active; {len(scan['nodes'])} summarised"
        )
        print(
            f"| writing the history | with rollups: {fill_s:.1f} s, redis-server CPU "
            f"{fill_cpu:.1f} s | without: {bare_fill:.1f} s, CPU {bare_cpu:.1f} s |"
        )
        print("| path | median | min | max | round trips | Redis commands per request |")
        print("|---|---|---|---|---|---|")
        for p in PATHS:
            ms = seen[p]["ms"]
            print(
                f"| {p} | {statistics.median(ms):.0f} ms | {min(ms):.0f} ms | {max(ms):.0f} ms "
                f"| {statistics.median(seen[p]['trips']):.0f} "
                f"| {statistics.median(seen[p]['commands']):.0f} "
                f"(all rounds: {sorted(set(int(c) for c in seen[p]['commands']))}) |"
            )
        print(f"rounds: {args.rounds}, alternating; per round (scan, rollups) ms:")
        print(
            [
                (round(a), round(b))
                for a, b in zip(seen["scan"]["ms"], seen["rollups"]["ms"], strict=True)
            ]
        )
    finally:
        server.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--gc",
        choices=("served", "default"),
        default="default",
        help="served: the collector as `serve` tunes it (frozen, threshold 50,000)",
    )
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--ops", type=int, default=4)
    parser.add_argument("--first", type=int, default=100)
    asyncio.run(main(parser.parse_args()))

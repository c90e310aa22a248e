"""Benchmark: how long the event loop is held at a time while an overview executes.

Fills a redis-server through the recorder (1,000 models by default), then asks the
overview query (100 summaries) through the ASGI app with the product's Redis client and
the collector settings ``serve`` applies, timing every callback the loop runs
(``asyncio.Handle._run``, patched in this process only). Reports per request: its
latency with the timing on (a little above the plain figure), how many callbacks ran,
and the longest ones: what a request answered from the freshness window waits behind at
each of its passes through the loop while a refresh executes.

    .venv/bin/python bench/bench_loop_stretches.py [--requests 5]
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.events
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_summary_rollups as summaries
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.core.settings import Limits
from openrl_inspect.web.server import GcSettings, tune_gc
from support.harness import app_client
from support.redis_server import RedisServer

_durations: list[float] = []


def _timed(run: Any) -> Any:
    def timed(self: asyncio.events.Handle) -> None:
        t = time.perf_counter()
        run(self)
        _durations.append(time.perf_counter() - t)

    return timed


async def main(args: argparse.Namespace) -> None:
    server = RedisServer().start()
    try:
        config = summaries.world(args.sessions)
        await summaries.fill(server.url, config, rollups=True)
        store = RedisStateStore.from_settings(RedisSettings(url=server.url, timeout_s=30.0))
        tune_gc(GcSettings())
        payload = {"query": summaries.QUERY, "variables": {"first": 100, "steps": 20}}
        async with app_client(store, Limits(single_flight=False)) as http:
            for _ in range(3):  # warm: memos filled, schema version checked
                await summaries.ask(http, payload)
            asyncio.events.Handle._run = _timed(asyncio.events.Handle._run)  # type: ignore[method-assign]
            for _ in range(args.requests):
                _durations.clear()
                t = time.perf_counter()
                await summaries.ask(http, payload)
                total = time.perf_counter() - t
                longest = sorted(_durations, reverse=True)[:5]
                print(
                    f"request {total * 1e3:.0f} ms (timed); {len(_durations)} callbacks; "
                    f"longest: {', '.join(f'{d * 1e3:.1f} ms' for d in longest)}"
                )
        await store.aclose()
    finally:
        server.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=50)
    asyncio.run(main(parser.parse_args()))

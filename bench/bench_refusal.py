"""Benchmark: how fast a query over the cost limit is refused.

The query asks for 29 aliases of models -> steps -> ops with the page sizes left to the
document's default (``$n: Int = 100``), far over the node limit; it must be refused
with ``QUERY_TOO_COSTLY`` before any backend call (the script checks the code). Both
queries run through the ASGI app over the demo's fakeredis world, alternating. Printed:
the median with p25 - p75 and max of each.

The floor beside it: a cheap query (one session's count), a round trip through the app.

    .venv/bin/python bench/bench_refusal.py --rounds 30
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import fakeredis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.simulator import SimConfig
from support.harness import app_client, gql, populate

CHAIN = "models(state: ACTIVE, first: $n) { nodes { steps(first: $n) { nodes { ops(first: $n) { nodes { id } } } } } }"
BYPASS = "query($n: Int = 100) {" + " ".join(f"a{i}: {CHAIN}" for i in range(29)) + "}"
CHEAP = "{ sessions(first: 1) { totalCount } }"


async def main(rounds: int) -> None:
    server = fakeredis.FakeServer()
    await populate(
        fakeredis.FakeAsyncRedis(server=server, decode_responses=True), SimConfig(seed=3)
    )
    store = RedisStateStore.in_memory(server)
    refused: list[float] = []
    cheap: list[float] = []
    async with app_client(store) as client:
        await gql(client, CHEAP)
        for _ in range(rounds):
            for query, out in ((BYPASS, refused), (CHEAP, cheap)):
                started = time.perf_counter()
                body = await gql(client, query)
                out.append(time.perf_counter() - started)
                if query is BYPASS:
                    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COSTLY"
    for name, ts in (("bypass refused", refused), ("cheap query", cheap)):
        q = statistics.quantiles(ts, n=4)
        print(
            f"{name:15s} median {statistics.median(ts) * 1e3:6.1f} ms "
            f"[p25 {q[0] * 1e3:.1f} - p75 {q[2] * 1e3:.1f}, max {max(ts) * 1e3:.1f}] n={len(ts)}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=50)
    asyncio.run(main(parser.parse_args().rounds))

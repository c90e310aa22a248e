"""Benchmark: fifty dashboard pollers at once, the overview query over uvicorn.

Starts a redis-server on a free loopback port and fills it through the recorder from
the simulator (1,000 active models), then one uvicorn server per arm (a subprocess each,
run by ``web.server.serve`` as ``openrl-inspect serve`` runs it, everything else at its
default): ``off`` without single flight (``OPENRL_INSPECT_SINGLE_FLIGHT=false``), ``on``
with it, ``fresh`` with it and a ``--fresh`` second freshness window
(``OPENRL_INSPECT_FRESH_FOR_S``). The arms alternate round by round. Each round runs
``--pollers`` clients for ``--seconds`` against one server: each asks, reads the
answer, then waits uniform(think/2, think) seconds (``--think 0``: no wait); a request
still running at the end of the round is awaited and counted. An error is any answer
that is not a 200 without ``errors``, or none within ``--client-timeout``.

Printed per arm: answers per second, errors by kind, the p50 and p99 latency (median
and range over the rounds) and Redis commands per answer. No floor: the arms are each
other's reference.

    .venv/bin/python bench/bench_pollers.py --rounds 7 --seconds 30 --think 2
    .venv/bin/python bench/bench_pollers.py --rounds 3 --seconds 30 --think 0
    .venv/bin/python bench/bench_pollers.py --rounds 7 --seconds 20 --think 2 --arms on,fresh --fresh 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openrl_inspect.simulator import SimConfig
from support.harness import populate
from support.ports import free_port, wait_for_port
from support.redis_server import RedisServer

GRAPHQL = "/api/v1/inspect/graphql"
OVERVIEW = """query Overview {
  models(state: ACTIVE, first: 100) { totalCount nodes { id state
    summary(steps: 20) { verdict reasons stepsPerMinute medianStepSeconds failedOps stuckOps lostOps }
  } }
}"""


def serve(port: int, redis_url: str, arm: str, fresh_s: float) -> None:
    """The server process: the app over the real Redis, as ``serve`` builds it."""
    from contextlib import asynccontextmanager

    from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
    from openrl_inspect.core.settings import Settings, Switches
    from openrl_inspect.resolvers.context import Backends
    from openrl_inspect.web import server
    from openrl_inspect.web.app import create_app
    from openrl_inspect.web.guard import HttpSettings
    from openrl_inspect.web.health import HealthSettings

    @asynccontextmanager
    async def backends():  # type: ignore[no-untyped-def]  # a factory for create_app
        store = RedisStateStore.from_settings(RedisSettings(url=redis_url))
        try:
            yield Backends(state=store)
        finally:
            await store.aclose()

    app = create_app(
        backends,
        Settings(
            switches=Switches(
                single_flight=arm != "off", fresh_for_s=fresh_s if arm == "fresh" else 0.0
            )
        ),
        health=HealthSettings(interval_s=0),
    )
    # As ``serve`` runs it: its uvicorn settings and, once started, its collector
    # settings (frozen, first threshold 50,000).
    server.serve(app, "127.0.0.1", port, "warning", HttpSettings())


@dataclass
class Round:
    arm: str
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    elapsed: float = 0.0
    commands: int = 0

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


async def poller(client: httpx.AsyncClient, end: float, think: float, out: Round) -> None:
    while time.perf_counter() < end:
        started = time.perf_counter()
        try:
            resp = await client.post(GRAPHQL, json={"query": OVERVIEW})
        except httpx.HTTPError as exc:
            out.error(type(exc).__name__)
        else:
            body = (
                resp.json()
                if resp.headers.get("content-type", "").startswith("application/json")
                else {}
            )
            if resp.status_code != 200 or body.get("errors"):
                codes = {
                    str((e.get("extensions") or {}).get("code")) for e in body.get("errors") or ()
                }
                out.error(f"{resp.status_code}:{','.join(sorted(codes))}")
            else:
                out.latencies.append(time.perf_counter() - started)
        if think > 0:
            await asyncio.sleep(random.uniform(think / 2, think))


async def one_round(base: str, arm: str, args: argparse.Namespace, redis_url: str) -> Round:
    out = Round(arm)
    counter = aioredis.Redis.from_url(redis_url, decode_responses=True)
    before = int((await counter.info("stats"))["total_commands_processed"])
    limits = httpx.Limits(max_connections=args.pollers * 2, max_keepalive_connections=args.pollers)
    timeout = httpx.Timeout(args.client_timeout)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=timeout) as client:
        started = time.perf_counter()
        end = started + args.seconds
        await asyncio.gather(*(poller(client, end, args.think, out) for _ in range(args.pollers)))
        out.elapsed = time.perf_counter() - started
    after = int((await counter.info("stats"))["total_commands_processed"])
    await counter.aclose()
    out.commands = after - before
    return out


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(rounds: list[Round], arms: tuple[str, ...]) -> None:
    print(
        "| round | single flight | answers | answers/s | errors | p50 ms | p99 ms | Redis cmds/answer |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(rounds, 1):
        n = len(r.latencies)
        errs = sum(r.errors.values())
        per = r.commands / n if n else float("nan")
        print(
            f"| {i} | {r.arm} | {n} | {n / r.elapsed:.1f} | {errs} {r.errors or ''} | "
            f"{pct(r.latencies, 0.5) * 1e3:.0f} | {pct(r.latencies, 0.99) * 1e3:.0f} | {per:.0f} |"
        )
    for arm in arms:
        mine = [r for r in rounds if r.arm == arm]
        if not mine:
            continue
        rates = [len(r.latencies) / r.elapsed for r in mine]
        p50s = [pct(r.latencies, 0.5) * 1e3 for r in mine if r.latencies]
        p99s = [pct(r.latencies, 0.99) * 1e3 for r in mine if r.latencies]
        errs = sum(sum(r.errors.values()) for r in mine)
        print(
            f"{arm}: n={len(mine)} rounds; answers/s median {statistics.median(rates):.1f} "
            f"[{min(rates):.1f}-{max(rates):.1f}]; errors {errs}; "
            f"p50 median {statistics.median(p50s) if p50s else float('nan'):.0f} ms "
            f"[{min(p50s, default=float('nan')):.0f}-{max(p50s, default=float('nan')):.0f}]; "
            f"p99 median {statistics.median(p99s) if p99s else float('nan'):.0f} ms "
            f"[{min(p99s, default=float('nan')):.0f}-{max(p99s, default=float('nan')):.0f}]"
        )


async def main(args: argparse.Namespace) -> None:
    redis = RedisServer().start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        writer = aioredis.Redis.from_url(redis.url, decode_responses=True)
        t0 = time.perf_counter()
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
        print(f"filled in {time.perf_counter() - t0:.1f} s")
        bases = {}
        for arm in args.arms:
            port = free_port()
            cmd = [sys.executable, __file__, "--serve", str(port), redis.url, arm, str(args.fresh)]
            # Started once, before anything is measured: blocking here costs nothing.
            procs.append(subprocess.Popen(cmd, env=os.environ.copy()))  # noqa: ASYNC220
            wait_for_port(port, timeout_s=60)
            bases[arm] = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(timeout=120) as probe:
            first = (
                await probe.post(bases[args.arms[-1]] + GRAPHQL, json={"query": OVERVIEW})
            ).json()
            assert "errors" not in first, first["errors"][:2]
            print(
                f"active models: {first['data']['models']['totalCount']}, page of "
                f"{len(first['data']['models']['nodes'])}"
            )
            for base in bases.values():  # warm both
                await probe.post(base + GRAPHQL, json={"query": OVERVIEW})
        print(
            f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}; load before: {os.getloadavg()}"
        )
        rounds: list[Round] = []
        for i in range(args.rounds):
            for arm in args.arms if i % 2 == 0 else args.arms[::-1]:
                r = await one_round(bases[arm], arm, args, redis.url)
                rounds.append(r)
                print(
                    f"  round {len(rounds)} {arm}: {len(r.latencies)} answers, "
                    f"{sum(r.errors.values())} errors, p99 {pct(r.latencies, 0.99) * 1e3:.0f} ms, "
                    f"load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
        report(rounds, args.arms)
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
        redis.cleanup()


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5]))
        sys.exit(0)
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7, help="pairs of rounds (off, on)")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--pollers", type=int, default=50)
    parser.add_argument(
        "--think", type=float, default=2.0, help="max wait after an answer; 0: none"
    )
    parser.add_argument("--client-timeout", type=float, default=60.0)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument(
        "--arms",
        type=lambda v: tuple(v.split(",")),
        default=("off", "on"),
        help="servers to alternate: off (no single flight), on, fresh (on + --fresh window)",
    )
    parser.add_argument("--fresh", type=float, default=1.0, help="the fresh arm's window, s")
    asyncio.run(main(parser.parse_args()))

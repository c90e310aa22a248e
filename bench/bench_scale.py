"""Benchmark: ten thousand models (issue 29): filtered lists and attention, index memory.

Starts its own redis-server on a free loopback port and writes, through the public
recorder, 10,000 models (200 owners, 1,000 sessions of 10 models, 4 base models; most
active, some waiting, placed, ended or failed), each with ``--steps`` steps of 4 ops, and
``--stuck`` models whose op has run for an hour on a live worker, at random places; the
ended and failed models ended days ago. Beside the stuck ones, at random places, models
that keep moving but need a person: ``--slow`` whose last 5 of 17 steps took 5 times
their earlier ones, and ``--failing`` whose forward_backward failed in their last 6 of
17 steps while the other ops succeeded. The moving models' last op, and the waiting and
placed models' state change, are stamped an hour ahead of the run, so that they stay
fresh (inside the heartbeat timeout) however long the run takes: the stuck models are
then, with the slow and failing ones, exactly the ones that need a person.

Then, through the ASGI app with httpx, per round: each filtered list (a page of 20
models by owner, by session, by state and base model, the last page of an owner's list
by its cursor) and ``attention(first: 10)``, ``--per-round`` times each (other owners,
sessions and base models each time), the round's median kept; beside them the floor
measured in the same rounds, ``{ __typename }`` through the same app. Every attention
answer must list exactly the stuck, slow and failing models (at most 10 in all) and count
every live model. Printed: median
with [min - max] over the rounds and the ratio to the floor; the Redis memory of the
model indexes this issue added (``MEMORY USAGE`` of the owner, base-model and live keys)
per model, and apart those of the moving models' indexes (failing, pace, open ops); the process's resident memory after writing and at the end.

    .venv/bin/python bench/bench_scale.py --rounds 7
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import random
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.recorder import Recorder, RecorderSettings
from openrl_inspect.state import keys
from support.harness import GRAPHQL, app_client
from support.redis_server import RedisServer

OWNERS, SESSIONS, PER_SESSION = 200, 1_000, 10
BASES = ("llama-3.1-8b", "llama-3.1-70b", "qwen-2.5-7b", "qwen-2.5-32b")
STATES = ("active",) * 14 + ("waiting", "placed", "ended", "ended", "failed")
MODELS_PAGE = """query($owner: String, $session: ID, $state: ModelState, $base: String,
  $after: String) {
  models(owner: $owner, session: $session, state: $state, baseModel: $base, first: 20,
    after: $after) {
    totalCount pageInfo { endCursor hasNextPage } nodes { id state baseModel }
  }
}"""
ATTENTION = "{ attention(first: 10) { scanned needing models { model { id } verdict } } }"
FLOOR = "{ __typename }"


TROUBLED_STEPS = 17  # 12 at the usual pace, then 5 slower (the slow ones)
STEP_S = 4.0


def troubled(rec: Recorder, mid: str, sid: str, end: float, slow: bool) -> None:
    """A model moving until ``end``: 17 steps of 4 ops covering each step; the last 5
    five times slower (``slow``) or, else, its forward_backward failing in the last 6."""
    durations = [STEP_S] * 12 + [STEP_S * (5 if slow else 1)] * 5
    start = end - sum(durations)
    wid = f"w-{mid}"
    for n, d in enumerate(durations):
        for k, kind in enumerate(("forward_backward", "optim_step", "sample", "forward")):
            oid = f"{mid}-{n}-{k}"
            at = start + k * d / 4
            rec.op_accepted(mid, oid, kind, n, session_id=sid, at=at)
            rec.op_started(mid, oid, wid, at=at + 0.01)
            failed = not slow and k == 0 and n >= TROUBLED_STEPS - 6
            rec.op_finished(
                mid,
                oid,
                "failed" if failed else "succeeded",
                error="CUDA error: an illegal memory access" if failed else None,
                at=start + (k + 1) * d / 4 - 0.01,
            )
        rec.step_metrics(mid, n, {"loss": 1.0 / (n + 1)}, at=start + d, finished=True)
        start += d
    rec.heartbeat(wid, "trainer", f"pod-{mid}", "node-1", mid, [], {}, at=end)


def write(
    url: str, steps: int, stuck: int, seed: int, slow: int = 0, failing: int = 0
) -> tuple[list[str], list[str], list[str], int, float]:
    """The world through the recorder; the stuck, slow and failing models' ids, live
    models, seconds."""
    rng = random.Random(seed)
    now = time.time()
    client = redis.Redis.from_url(url, decode_responses=True)
    rec = Recorder(
        client,
        batch_size=20_000,
        settings=RecorderSettings(
            publish_counters=False, recorder_id="bench", attempt_timeout_s=600.0
        ),
        start=False,
    )
    total = SESSIONS * PER_SESSION
    picked = [f"m{i:05d}" for i in rng.sample(range(total), stuck + slow + failing)]
    stuck_ids = set(picked[:stuck])
    slow_ids = set(picked[stuck : stuck + slow])
    failing_ids = set(picked[stuck + slow :])
    live = 0
    began = time.perf_counter()
    for s in range(SESSIONS):
        sid = f"s{s:04d}"
        rec.session_opened(sid, f"owner{s % OWNERS:03d}", at=now - 50_000)
        for j in range(PER_SESSION):
            mid = f"m{s * PER_SESSION + j:05d}"
            created = now - 200_000 + s * PER_SESSION + j  # ended or failed: days ago
            rec.model_created(mid, sid, BASES[(s + j) % len(BASES)], at=created)
            state = "active" if mid in picked else rng.choice(STATES)
            if state == "waiting":  # waiting since just now (see the docstring)
                rec.model_state(mid, "waiting", at=now + 3_600)
                live += 1
                continue
            rec.model_state(mid, "placed", at=now + 3_600 if state == "placed" else created + 1)
            if state == "placed":
                live += 1
                continue
            rec.model_state(mid, "active", at=created + 2)
            if mid in slow_ids or mid in failing_ids:
                # moving throughout the run (see the docstring), however badly
                troubled(rec, mid, sid, now + 3_600, slow=mid in slow_ids)
                live += 1
                continue
            wid = f"w-{mid}"
            for n in range(steps):
                for k, kind in enumerate(("forward_backward", "optim_step", "sample", "forward")):
                    oid = f"{mid}-{n}-{k}"
                    last = n == steps - 1 and k == 3
                    if mid in stuck_ids and last:
                        at = now - 3_600
                    elif last:
                        at = now + 3_600  # moving throughout the run (see the docstring)
                    else:
                        at = created + 10 + n * 4 + k
                    rec.op_accepted(mid, oid, kind, n, session_id=sid, at=at - 0.5)
                    rec.op_started(mid, oid, wid, at=at)
                    if not (mid in stuck_ids and last):
                        rec.op_finished(mid, oid, "succeeded", at=at + 0.2)
                rec.step_metrics(
                    mid, n, {"loss": 1.0 / (n + 1)}, at=created + 14 + n * 4, finished=True
                )
            rec.heartbeat(wid, "trainer", f"pod-{mid}", "node-1", mid, [], {}, at=now + 3_600)
            if state in ("ended", "failed"):
                rec.model_state(mid, state, at=created + 20 + steps * 4)
            else:
                live += 1
        if s % 100 == 99:
            rec.flush(600.0)
    rec.flush(600.0)
    st = rec.stats()
    assert st.pending == 0 and st.dropped == 0 and st.written == st.recorded, st
    rec.close(5.0)
    took = time.perf_counter() - began
    return sorted(stuck_ids), sorted(slow_ids), sorted(failing_ids), live, took


def index_bytes(url: str) -> tuple[int, int]:
    """Bytes of the owner, base-model and live indexes; of the moving models' indexes."""
    client = redis.Redis.from_url(url, decode_responses=True)
    names = [keys.models_of_owner(f"owner{o:03d}") for o in range(OWNERS)]
    names += [keys.models_of_base(b) for b in BASES] + [keys.MODELS_LIVE]
    moving = [keys.MODELS_FAILING, keys.MODELS_PACE, keys.OPS_OPEN]

    def size(ns: list[str]) -> int:
        return sum(int(client.memory_usage(n, samples=0) or 0) for n in ns)

    return size(names), size(moving)


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def timed(client: httpx.AsyncClient, query: str, **variables: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    resp = await client.post(GRAPHQL, json={"query": query, "variables": variables})
    elapsed = time.perf_counter() - t0
    body = resp.json()
    assert resp.status_code == 200 and "errors" not in body, body
    return elapsed, body["data"]


async def measure(url: str, args: argparse.Namespace, needing: dict[str, str], live: int) -> None:
    """``needing``: model id -> the verdict attention must give it."""
    rng = random.Random(args.seed + 1)
    store = RedisStateStore.from_settings(RedisSettings(url=url))
    names = ("floor", "by owner", "by session", "by state + base", "owner, last page", "attention")
    rounds: dict[str, list[float]] = {n: [] for n in names}
    async with app_client(store) as client:
        for r in range(args.rounds + 1):  # round 0 warms up
            per: dict[str, list[float]] = {n: [] for n in names}
            for _ in range(args.per_round):
                owner = f"owner{rng.randrange(OWNERS):03d}"
                session = f"s{rng.randrange(SESSIONS):04d}"
                base = rng.choice(BASES)
                per["floor"].append((await timed(client, FLOOR))[0])
                t, data = await timed(client, MODELS_PAGE, owner=owner)
                per["by owner"].append(t)
                assert data["models"]["totalCount"] == SESSIONS // OWNERS * PER_SESSION
                after = data["models"]["pageInfo"]["endCursor"]
                t, _ = await timed(client, MODELS_PAGE, owner=owner, after=after)
                per["owner, last page"].append(t)
                per["by session"].append((await timed(client, MODELS_PAGE, session=session))[0])
                t, _ = await timed(client, MODELS_PAGE, state="ACTIVE", base=base)
                per["by state + base"].append(t)
                t, data = await timed(client, ATTENTION)
                per["attention"].append(t)
                found = {m["model"]["id"]: m["verdict"] for m in data["attention"]["models"]}
                assert data["attention"]["scanned"] == live, data["attention"]["scanned"]
                assert found == needing or len(needing) > 10, (found, needing)
                assert data["attention"]["needing"] == len(needing)
            if r:
                for n in names:
                    rounds[n].append(statistics.median(per[n]))
    await store.aclose()
    floor = statistics.median(rounds["floor"])
    print(f"\n{'query':<20} {'p50 ms, median [min - max] over rounds':<44} ratio to floor")
    for n in names:
        xs = [x * 1000 for x in rounds[n]]
        med = statistics.median(xs)
        print(
            f"{n:<20} {med:8.2f} [{min(xs):.2f} - {max(xs):.2f}]"
            f"{'':<22} {med / (floor * 1000):6.1f}x"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--per-round", type=int, default=15, help="queries of each kind per round")
    p.add_argument("--steps", type=int, default=2, help="steps of 4 ops per model")
    p.add_argument("--stuck", type=int, default=5)
    p.add_argument("--slow", type=int, default=2, help="models moving 5x slower than before")
    p.add_argument("--failing", type=int, default=3, help="models stepping with ops failing")
    p.add_argument("--seed", type=int, default=29)
    args = p.parse_args()
    print(
        f"{platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    server = RedisServer().start()
    try:
        stuck, slow, failing, live, took = write(
            server.url, args.steps, args.stuck, args.seed, args.slow, args.failing
        )
        total = SESSIONS * PER_SESSION
        gc.collect()
        print(
            f"wrote {total:,} models ({live:,} live, {len(stuck)} stuck, {len(slow)} slow, "
            f"{len(failing)} failing) with {args.steps} steps of 4 ops ({TROUBLED_STEPS} "
            f"for the slow and failing) in {took:.1f} s; RSS after writing {rss_mb():.0f} MB"
        )
        used, moving = index_bytes(server.url)
        print(
            f"model indexes (owner, base, live): {used / 1024:.0f} KiB, {used / total:.0f} B a "
            f"model; moving models' indexes (failing, pace, open ops): {moving / 1024:.1f} KiB"
        )
        needing = dict.fromkeys(stuck, "STUCK") | dict.fromkeys(slow, "SLOW")
        needing |= dict.fromkeys(failing, "PROGRESSING")
        asyncio.run(measure(server.url, args, needing, live))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"inspector process RSS at the end {rss_mb():.0f} MB (peak {peak:.0f} MB)")
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()

"""Benchmark: GPU duty for N GPUs (default 8,000) in ONE GraphQL request, end to end.

The same real Prometheus data set as ``bench_gpu_duty.py`` (DCGM GR_ENGINE_ACTIVE and
GPU_UTIL for every GPU, 8 per node, a sample every 30 s for 20 minutes, backfilled),
and a Redis (in-process fakeredis) holding 10 sessions of N/80 models, each model with
one placement of 8 GPUs over those 20 minutes. The app runs in-process (ASGI) over
both; every HTTP request it sends to Prometheus is counted. Two requests are measured:

- ``gpuDuty(uuids: [N uuids])``: the root field, one list of GPUs;
- ``sessions { models { gpuActivity { duty gpus { uuid duty } } } }``: every model's
  GPUs from its Redis placements, time-weighted, per model and per GPU.

Every answer is checked against the known duty. Prints a markdown snippet.

    .venv/bin/python bench/bench_gpu_duty_graphql.py [--gpus 8000] [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import fakeredis
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gpu_duty import SPAN, _version, build, true_duty
from openrl_inspect.adapters.prometheus import PrometheusSettings, PromGpuMetrics
from openrl_inspect.adapters.prometheus._http import HttpMetricsSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.web.app import PREFIX, create_app
from support.prometheus_server import PrometheusServer, require_prometheus

SESSIONS = 10
PER_MODEL = 8
WINDOW = 5 * 3600.0  # the data lies 2 to 4 hours back: the window ending now covers it

ROOT = """query($u: [String!]!, $w: Float!) {
  gpuDuty(uuids: $u, windowSeconds: $w) { uuid value metric }
}"""
NESTED = """query($w: Float!) {
  sessions(first: 10) { nodes { models(first: 100) { nodes {
    id gpuActivity(windowSeconds: $w) { duty gpuCount gpus { uuid duty } }
  } } } }
}"""


async def fill_redis(uuids: list[str], t0: float) -> RedisStateStore:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        client, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    models = len(uuids) // PER_MODEL
    per_session = -(-models // SESSIONS)
    for s in range(SESSIONS):
        rec.session_opened(f"sess-{s}", "bench", {"sdk": "bench"}, at=t0 - 600 + s)
    for m in range(models):
        mid, sid = f"model-{m:05d}", f"sess-{m // per_session}"
        gpus = uuids[PER_MODEL * m : PER_MODEL * (m + 1)]
        rec.model_created(mid, sid, "Qwen/Qwen3-8B", {"rank": 8}, {}, at=t0 - 300 + m * 1e-3)
        rec.placement_admitted(
            mid, f"plc-{m}", f"wl-{m}", "openrl", [], f"gke-pool-gpu-{m:05d}", gpus, at=t0
        )
        rec.placement_released(mid, f"plc-{m}", at=t0 + SPAN)
    await rec.flush()
    await client.aclose()
    return RedisStateStore.in_memory(server)


def check_root(body: dict[str, Any], n: int) -> None:
    assert "errors" not in body, body.get("errors")
    got = body["data"]["gpuDuty"]
    assert len(got) == n
    bad = [
        i for i, g in enumerate(got) if g["value"] is None or abs(g["value"] - true_duty(i)) > 1e-9
    ]
    if bad:
        raise SystemExit(f"wrong duty for {len(bad)} GPUs, e.g. #{bad[0]}")


def check_nested(body: dict[str, Any], n: int) -> None:
    assert "errors" not in body, body.get("errors")
    seen = 0
    for s in body["data"]["sessions"]["nodes"]:
        for model in s["models"]["nodes"]:
            m = int(model["id"].rsplit("-", 1)[1])
            act = model["gpuActivity"]
            expected = [true_duty(PER_MODEL * m + j) for j in range(PER_MODEL)]
            got = [g["duty"] for g in act["gpus"]]
            if any(g is None or abs(g - e) > 1e-9 for g, e in zip(got, expected, strict=True)):
                raise SystemExit(f"wrong GPU duty for model {m}")
            if abs(act["duty"] - sum(expected) / PER_MODEL) > 1e-9:
                raise SystemExit(f"wrong model duty for model {m}")
            seen += len(got)
    if seen != n:
        raise SystemExit(f"saw {seen} GPUs, expected {n}")


async def measure(url: str, store: RedisStateStore, uuids: list[str], runs: int) -> list[Any]:
    requests: list[tuple[str, int]] = []

    async def on_request(request: httpx.Request) -> None:
        requests.append((request.url.path, len(request.content)))

    settings = PrometheusSettings(url=url, query_timeout_s=60)
    async with httpx.AsyncClient(event_hooks={"request": [on_request]}, timeout=120) as http:
        source = HttpMetricsSource(settings, client=http)
        metrics = PromGpuMetrics.from_settings(settings, source)

        @asynccontextmanager
        async def backends() -> Any:
            yield Backends(state=store, gpu_metrics=metrics, prometheus=source)

        app = create_app(backends)
        transport = httpx.ASGITransport(app=app)
        rows = []
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://inspector") as client,
        ):
            for name, payload, check in (
                (
                    "root `gpuDuty(uuids: [8,000 UUIDs])`",
                    {"query": ROOT, "variables": {"u": uuids, "w": WINDOW}},
                    check_root,
                ),
                (
                    "`sessions { models { gpuActivity { gpus { duty } } } }` (Redis placements)",
                    {"query": NESTED, "variables": {"w": WINDOW}},
                    check_nested,
                ),
            ):
                latencies: list[float] = []
                per_request: list[int] = []
                paths: list[str] = []
                size = 0
                for i in range(runs + 1):  # the first is a warm-up
                    before = len(requests)
                    start = time.perf_counter()
                    resp = await client.post(f"{PREFIX}/graphql", json=payload)
                    took = time.perf_counter() - start
                    resp.raise_for_status()
                    check(resp.json(), len(uuids))
                    sent = requests[before:]
                    if i:
                        latencies.append(took)
                        per_request.append(len(sent))
                        paths = sorted(p for p, _ in sent)
                        size = max([size, *(n for _, n in sent)])
                        response_kib = len(resp.content) / 1024
                rows.append(
                    {
                        "name": name.replace("8,000", f"{len(uuids):,}"),
                        "queries": statistics.median(per_request),
                        "paths": paths,
                        "median_ms": statistics.median(latencies) * 1000,
                        "p90_ms": sorted(latencies)[int(0.9 * (len(latencies) - 1))] * 1000,
                        "request_kib": size / 1024,
                        "response_kib": response_kib,
                    }
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if args.gpus % (PER_MODEL * SESSIONS) or args.gpus // PER_MODEL > SESSIONS * 100:
        raise SystemExit(f"--gpus must be a multiple of {PER_MODEL * SESSIONS}, at most 8,000")
    try:
        require_prometheus()
    except BaseException as exc:  # pytest's skip/fail outcomes outside pytest
        raise SystemExit(str(exc)) from None

    t0 = float(int(time.time() // 3600) * 3600 - 3 * 3600)
    om, keys = build(args.gpus, t0)
    uuids = [k.uuid for k in keys]
    server = PrometheusServer(om)
    started = time.perf_counter()
    try:
        server.start(timeout_s=180)
        load_s = time.perf_counter() - started
        store = asyncio.run(fill_redis(uuids, t0))
        rows = asyncio.run(measure(server.url, store, uuids, args.runs))
    finally:
        server.cleanup()

    print(f"### GPU duty for {args.gpus:,} GPUs in one GraphQL request\n")
    print(
        f"Real Prometheus ({_version()}) on loopback holding {2 * args.gpus:,} DCGM series "
        f"({om.samples():,} samples, backfilled + started in {load_s:.1f} s); Redis: "
        f"fakeredis in-process, {args.gpus // PER_MODEL:,} models of {PER_MODEL} GPUs; the "
        f"app in-process over ASGI; window {WINDOW / 3600:.0f} h; median of {args.runs} "
        "requests after one warm-up; every answer checked against the known duty.\n"
    )
    print(
        "| one GraphQL request | Prometheus queries per request | largest query body "
        "| response | median | p90 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        kinds = ", ".join(
            f"{r['paths'].count(p)} x `{p.rsplit('/', 1)[1]}`" for p in sorted(set(r["paths"]))
        )
        print(
            f"| {r['name']} | {r['queries']:.0f} ({kinds}) | {r['request_kib']:.0f} KiB "
            f"| {r['response_kib']:.0f} KiB | {r['median_ms']:.0f} ms | {r['p90_ms']:.0f} ms |"
        )
    print(f"\nMachine: {os.cpu_count()} CPUs, shared.")


if __name__ == "__main__":
    main()

"""Benchmark: GPU duty for N GPUs (default 8,000) against a real Prometheus.

Backfills a Prometheus (the test support's ``PrometheusServer``) with
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` and ``DCGM_FI_DEV_GPU_UTIL`` for every GPU (8 GPUs per
node, one sample every 30 s for 20 minutes), then measures, counting the HTTP requests
sent to Prometheus and checking every answer against the known duty:

- the adapter, ``PromGpuMetrics.duty`` for all GPUs in one call (by UUID; by UUID with
  the node/index fallback; 1,000 GPUs), ``--runs`` calls after one warm-up;
- the app in-process (ASGI) over Prometheus and a fakeredis holding 10 sessions of N/8
  models with one 8-GPU placement each: the root ``gpuDuty(uuids: [N])`` and
  ``sessions { models { gpuActivity { duty gpus { uuid duty } } } }``, ``--requests``
  requests after one warm-up.

Printed: per row the Prometheus queries per call, the largest query body, the response
(GraphQL rows), the median and p90. The floor beside them: Prometheus computing the same
mean for every series of the metric with no label matcher at all (one query, not sent by
the adapter), so what the UUID matcher costs Prometheus shows.

    .venv/bin/python bench/bench_gpu_duty.py --gpus 8000 --runs 15 --requests 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import fakeredis
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from openrl_inspect.adapters.prometheus import (
    GPU_UTIL,
    GR_ENGINE_ACTIVE,
    GpuKey,
    HttpMetricsSource,
    PrometheusSettings,
    PromGpuMetrics,
)
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.web.app import PREFIX, create_app
from support.prometheus_server import (
    PROMETHEUS,
    OpenMetrics,
    PrometheusServer,
    require_prometheus,
    steps,
)

SCRAPE = 30.0
SPAN = 1200.0
WINDOW = 600.0  # the adapter's calls: the last 10 minutes of the data
GRAPHQL_WINDOW = 5 * 3600.0  # the data lies 2 to 4 hours back: a window ending now covers it
SESSIONS = 10
PER_MODEL = 8

ROOT = """query($u: [String!]!, $w: Float!) {
  gpuDuty(uuids: $u, windowSeconds: $w) { uuid value metric }
}"""
NESTED = """query($w: Float!) {
  sessions(first: 10) { nodes { models(first: 100) { nodes {
    id gpuActivity(windowSeconds: $w) { duty gpuCount gpus { uuid duty } }
  } } } }
}"""


def true_duty(i: int) -> float:
    return (i % 100) / 100


def build(gpus: int, t0: float) -> tuple[OpenMetrics, list[GpuKey]]:
    om = OpenMetrics()
    keys: list[GpuKey] = []
    times = steps(t0 + SCRAPE / 2, t0 + SPAN, SCRAPE)
    for i in range(gpus):
        key = GpuKey(f"GPU-{i:08x}-5e1f-4c1a-9b7e-{i:012x}", f"gke-pool-gpu-{i // 8:05d}", i % 8)
        keys.append(key)
        labels = {
            "UUID": key.uuid,
            "Hostname": key.node or "",
            "gpu": str(key.index),
            "modelName": "NVIDIA H100 80GB HBM3",
            "device": f"nvidia{key.index}",
        }
        om.add(GR_ENGINE_ACTIVE, labels, [(t, true_duty(i)) for t in times])
        om.add(GPU_UTIL, labels, [(t, 100 * true_duty(i)) for t in times])
    return om, keys


class Counted:
    """Every HTTP request sent to Prometheus: its path and body size."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int]] = []

    async def __call__(self, request: httpx.Request) -> None:
        self.sent.append((request.url.path, len(request.content)))


def row(name: str, latencies: list[float], per_call: list[list[tuple[str, int]]]) -> dict[str, Any]:
    paths = sorted(path.rsplit("/", 1)[1] for path, _ in per_call[-1])
    return {
        "name": name,
        "n": len(latencies),
        "queries": statistics.median(len(sent) for sent in per_call),
        "kinds": ", ".join(f"{paths.count(p)} x {p}" for p in sorted(set(paths))),
        "request_kib": max(n for sent in per_call for _, n in sent) / 1024,
        "median_ms": statistics.median(latencies) * 1000,
        "p90_ms": sorted(latencies)[int(0.9 * (len(latencies) - 1))] * 1000,
    }


async def adapter(
    url: str, keys: list[GpuKey], at: float, runs: int, with_nodes: bool
) -> dict[str, Any]:
    """``PromGpuMetrics.duty`` for ``keys`` in one call, ``runs`` times after a warm-up."""
    counted = Counted()
    settings = PrometheusSettings(url=url, query_timeout_s=30)
    call_keys = keys if with_nodes else [GpuKey(k.uuid) for k in keys]
    latencies: list[float] = []
    per_call: list[list[tuple[str, int]]] = []
    async with httpx.AsyncClient(event_hooks={"request": [counted]}) as client:
        metrics = PromGpuMetrics.from_settings(settings, HttpMetricsSource(settings, client=client))
        await metrics.duty(call_keys, WINDOW, at=at)  # warm-up (connections, caches)
        for _ in range(runs):
            before = len(counted.sent)
            start = time.perf_counter()
            found = await metrics.duty(call_keys, WINDOW, at=at)
            latencies.append(time.perf_counter() - start)
            per_call.append(counted.sent[before:])
            bad = [
                i
                for i, d in enumerate(found)
                if d is None or abs(d.value - true_duty(i)) > 1e-9 or d.metric != GR_ENGINE_ACTIVE
            ]
            if bad:
                raise SystemExit(f"wrong duty for {len(bad)} GPUs, e.g. #{bad[0]}")
    what = "by UUID + node/index" if with_nodes else "by UUID"
    return row(f"adapter `duty`, {len(keys):,} GPUs {what}", latencies, per_call)


async def fill_redis(uuids: list[str], t0: float) -> RedisStateStore:
    """10 sessions of models holding 8 GPUs each over the data's 20 minutes."""
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
            activity = model["gpuActivity"]
            expected = [true_duty(PER_MODEL * m + j) for j in range(PER_MODEL)]
            got = [g["duty"] for g in activity["gpus"]]
            if any(g is None or abs(g - e) > 1e-9 for g, e in zip(got, expected, strict=True)):
                raise SystemExit(f"wrong GPU duty for model {m}")
            if abs(activity["duty"] - sum(expected) / PER_MODEL) > 1e-9:
                raise SystemExit(f"wrong model duty for model {m}")
            seen += len(got)
    if seen != n:
        raise SystemExit(f"saw {seen} GPUs, expected {n}")


async def graphql(
    url: str, store: RedisStateStore, uuids: list[str], runs: int
) -> list[dict[str, Any]]:
    """The two GraphQL requests through the app, ``runs`` times each after a warm-up."""
    counted = Counted()
    settings = PrometheusSettings(url=url, query_timeout_s=60)
    requests: list[tuple[str, dict[str, Any], Callable[[dict[str, Any], int], None]]] = [
        (
            f"GraphQL root `gpuDuty(uuids: [{len(uuids):,}])`",
            {"query": ROOT, "variables": {"u": uuids, "w": GRAPHQL_WINDOW}},
            check_root,
        ),
        (
            f"GraphQL `sessions {{ models {{ gpuActivity {{ gpus {{ duty }} }} }} }}`, "
            f"{len(uuids) // PER_MODEL:,} models x {PER_MODEL} GPUs",
            {"query": NESTED, "variables": {"w": GRAPHQL_WINDOW}},
            check_nested,
        ),
    ]
    rows = []
    async with httpx.AsyncClient(event_hooks={"request": [counted]}, timeout=120) as http:
        source = HttpMetricsSource(settings, client=http)
        metrics = PromGpuMetrics.from_settings(settings, source)

        @asynccontextmanager
        async def backends() -> Any:
            yield Backends(state=store, gpu_metrics=metrics, prometheus=source)

        app = create_app(backends)
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://inspector") as client,
        ):
            for name, payload, check in requests:
                latencies: list[float] = []
                per_request: list[list[tuple[str, int]]] = []
                for i in range(runs + 1):  # the first is a warm-up
                    before = len(counted.sent)
                    start = time.perf_counter()
                    resp = await client.post(f"{PREFIX}/graphql", json=payload)
                    took = time.perf_counter() - start
                    resp.raise_for_status()
                    check(resp.json(), len(uuids))
                    if i:
                        latencies.append(took)
                        per_request.append(counted.sent[before:])
                found = row(name, latencies, per_request)
                found["response_kib"] = len(resp.content) / 1024
                rows.append(found)
    return rows


async def no_matcher(url: str, at: float, runs: int) -> float:
    """The floor: the same mean for every series of the metric, no label matcher."""
    query = (
        f"sum by (UUID) (sum_over_time({GR_ENGINE_ACTIVE}[{WINDOW:.0f}s]))"
        f" / sum by (UUID) (count_over_time({GR_ENGINE_ACTIVE}[{WINDOW:.0f}s]))"
    )
    latencies = []
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(runs + 1):
            start = time.perf_counter()
            r = await client.post(f"{url}/api/v1/query", data={"query": query, "time": str(at)})
            latencies.append(time.perf_counter() - start)
            r.raise_for_status()
    return statistics.median(latencies[1:]) * 1000


def version() -> str:
    out = subprocess.run([PROMETHEUS, "--version"], capture_output=True, text=True, check=False)
    first = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else ""
    return first.replace("prometheus, ", "").split(" (")[0] or "unknown version"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8000)
    parser.add_argument("--runs", type=int, default=15, help="adapter calls per row")
    parser.add_argument("--requests", type=int, default=5, help="GraphQL requests per row")
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
        at = t0 + SPAN
        rows = [
            asyncio.run(adapter(server.url, keys, at, args.runs, False)),
            asyncio.run(adapter(server.url, keys, at, args.runs, True)),
            asyncio.run(adapter(server.url, keys[:1000], at, args.runs, True)),
        ]
        store = asyncio.run(fill_redis(uuids, t0))
        rows += asyncio.run(graphql(server.url, store, uuids, args.requests))
        floor = asyncio.run(no_matcher(server.url, at, args.runs))
    finally:
        server.cleanup()

    print(
        f"Prometheus {version()} on loopback, {2 * args.gpus:,} series ({om.samples():,} "
        f"samples, backfilled and started in {load_s:.1f} s); every answer checked against "
        f"the known duty; {os.cpu_count()} CPUs.\n"
    )
    print(
        "| one call / request | n | Prometheus queries | largest query body | response | median | p90 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        response = f"{r['response_kib']:.0f} KiB" if "response_kib" in r else "-"
        print(
            f"| {r['name']} | {r['n']} | {r['queries']:.0f} ({r['kinds']}) | {r['request_kib']:.0f} KiB "
            f"| {response} | {r['median_ms']:.0f} ms | {r['p90_ms']:.0f} ms |"
        )
    print(f"\nFloor, not sent by the adapter: the same mean with no label matcher, {floor:.0f} ms.")


if __name__ == "__main__":
    main()

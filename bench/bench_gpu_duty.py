"""Benchmark: GPU duty for N GPUs (default 8,000) in one call against a real Prometheus.

Backfills a Prometheus (the test support's ``PrometheusServer``) with
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` and ``DCGM_FI_DEV_GPU_UTIL`` for every GPU (8 GPUs per
node, one sample every 30 s for 20 minutes), then calls ``PromGpuMetrics.duty`` for all
GPUs at once, ``--runs`` times, counting the HTTP requests each call makes and checking
every answer against the known values. Prints a markdown snippet.

    .venv/bin/python bench/bench_gpu_duty.py [--gpus 8000] [--runs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from openrl_inspect.adapters.prometheus import GpuKey, PrometheusSettings, PromGpuMetrics, _gpu
from openrl_inspect.adapters.prometheus._http import HttpMetricsSource
from support.prometheus_server import (
    OpenMetrics,
    PrometheusServer,
    require_prometheus,
    steps,
)

SCRAPE = 30.0
SPAN = 1200.0
WINDOW = 600.0


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
        om.add(_gpu.GR_ENGINE_ACTIVE, labels, [(t, true_duty(i)) for t in times])
        om.add(_gpu.GPU_UTIL, labels, [(t, 100 * true_duty(i)) for t in times])
    return om, keys


async def run(
    url: str, keys: list[GpuKey], at: float, runs: int, with_nodes: bool
) -> dict[str, float]:
    requests: list[int] = []
    sizes: list[int] = []

    async def on_request(request: httpx.Request) -> None:
        requests.append(1)
        sizes.append(len(request.content))

    settings = PrometheusSettings(url=url, query_timeout_s=30)
    call_keys = keys if with_nodes else [GpuKey(k.uuid) for k in keys]
    latencies: list[float] = []
    per_call: list[int] = []
    async with httpx.AsyncClient(event_hooks={"request": [on_request]}) as client:
        metrics = PromGpuMetrics.from_settings(settings, HttpMetricsSource(settings, client=client))
        await metrics.duty(call_keys, WINDOW, at=at)  # warm-up (connections, caches)
        for _ in range(runs):
            before = len(requests)
            start = time.perf_counter()
            found = await metrics.duty(call_keys, WINDOW, at=at)
            latencies.append(time.perf_counter() - start)
            per_call.append(len(requests) - before)
            bad = [
                i
                for i, d in enumerate(found)
                if d is None
                or abs(d.value - true_duty(i)) > 1e-9
                or d.metric != _gpu.GR_ENGINE_ACTIVE
            ]
            if bad:
                raise SystemExit(f"wrong duty for {len(bad)} GPUs, e.g. #{bad[0]}")
    return {
        "queries": statistics.median(per_call),
        "median_ms": statistics.median(latencies) * 1000,
        "p90_ms": sorted(latencies)[int(0.9 * (len(latencies) - 1))] * 1000,
        "request_kib": max(sizes) / 1024,
    }


async def no_matcher(url: str, at: float, runs: int) -> float:
    m = _gpu.GR_ENGINE_ACTIVE
    query = (
        f"sum by (UUID) (sum_over_time({m}[{WINDOW:.0f}s]))"
        f" / sum by (UUID) (count_over_time({m}[{WINDOW:.0f}s]))"
    )
    latencies = []
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(runs + 1):
            start = time.perf_counter()
            r = await client.post(f"{url}/api/v1/query", data={"query": query, "time": str(at)})
            latencies.append(time.perf_counter() - start)
            r.raise_for_status()
    return statistics.median(latencies[1:]) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    try:
        require_prometheus()
    except BaseException as exc:  # pytest's skip/fail outcomes outside pytest
        raise SystemExit(str(exc)) from None

    t0 = float(int(time.time() // 3600) * 3600 - 3 * 3600)
    om, keys = build(args.gpus, t0)
    server = PrometheusServer(om)
    started = time.perf_counter()
    try:
        server.start(timeout_s=120)
        load_s = time.perf_counter() - started
        at = t0 + SPAN
        rows = [
            (f"{len(keys):,} GPUs by UUID", run(server.url, keys, at, args.runs, False)),
            (
                f"{len(keys):,} GPUs by UUID + node/index (with the fallback branch)",
                run(server.url, keys, at, args.runs, True),
            ),
            (
                f"{min(1000, len(keys)):,} GPUs by UUID + node/index",
                run(server.url, keys[:1000], at, args.runs, True),
            ),
        ]
        results = [(name, asyncio.run(coro)) for name, coro in rows]
        reference = asyncio.run(no_matcher(server.url, at, args.runs))
    finally:
        server.cleanup()

    print(f"### GPU duty for {args.gpus:,} GPUs in one call\n")
    print(
        f"Real Prometheus ({_version()}) on loopback holding {2 * args.gpus:,} series "
        f"({om.samples():,} samples, backfilled + started in {load_s:.1f} s); "
        f"window {WINDOW:.0f} s; median of {args.runs} calls after one warm-up; every "
        "answer checked against the known duty.\n"
    )
    print(
        "| one `duty` call for | Prometheus queries per call | largest query body | median | p90 |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, r in results:
        print(
            f"| {name} | {r['queries']:.0f} | {r['request_kib']:.0f} KiB "
            f"| {r['median_ms']:.0f} ms | {r['p90_ms']:.0f} ms |"
        )
    print(
        f"\nReference, not sent by the layer: the same mean for every series of one metric "
        f"with no label matcher at all: median {reference:.0f} ms per query. Machine: "
        f"{os.cpu_count()} CPUs, shared."
    )


def _version() -> str:
    import subprocess

    from support.prometheus_server import PROMETHEUS

    out = subprocess.run([PROMETHEUS, "--version"], capture_output=True, text=True, check=False)
    first = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else ""
    return first.replace("prometheus, ", "").split(" (")[0] or "unknown version"


if __name__ == "__main__":
    main()

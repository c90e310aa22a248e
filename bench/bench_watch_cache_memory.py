"""Benchmark: memory of the Kubernetes watch cache, per 10,000 pods (sizing the pods).

The cluster of bench_cluster_view.py (per node: 2 models, each with a Kueue Workload,
3 GPU workers with an allocated ResourceClaim each and 2 CPU pods; 8-GPU nodes with
their ResourceSlices) is served by the fake API server (real wire format) running in a
*separate process*, so this process holds only what the inspector would: the official
client and the watch cache. Printed per size: this process's resident memory (VmRSS)
once every kind has synced and is watching, after a full garbage collection, and the
time to sync. Each size runs in a fresh process, so one size's garbage does not count in
the next.

The floor beside it: the same process's VmRSS before the cache opens, with the SDK and
the adapter already imported; the difference is the cache (and the client's buffers
still held).

    .venv/bin/python bench/bench_watch_cache_memory.py --nodes 500 1000 2000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import multiprocessing
import platform
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_cluster_view import cluster
from openrl_inspect.adapters.kubernetes import open_kubernetes
from support.fake_kube import FakeKube
from support.kube_harness import kube_settings


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS (Linux only)")


def serve(nodes: int, conn: Connection) -> None:
    """The fake API server's process: build, serve, report, wait to be told to stop."""
    objects, _ = cluster(nodes)
    fake = FakeKube()
    fake.put(*objects)
    fake.start()
    counts = {p: sum(1 for _ in fake.objects(p)) for p in ("pods", "nodes", "workloads",
                                                           "resourceclaims", "resourceslices")}  # fmt: skip
    conn.send((fake.url, fake.port, counts))
    conn.recv()
    fake.stop()


async def measure(nodes: int) -> dict[str, object]:
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    server = ctx.Process(target=serve, args=(nodes, theirs), daemon=True)
    server.start()
    try:
        url, port, counts = ours.recv()
        fake = FakeKube()  # only for kube_settings' kubeconfig: its url
        fake.port = port
        with tempfile.TemporaryDirectory() as tmp:
            settings = kube_settings(
                fake, Path(tmp), request_timeout_s=120.0, watch_timeout_s=600.0
            )
            # The SDK and the adapter's modules load before the baseline: only the cache
            # (and what the client holds for it) is counted.
            for module in ("aiohttp", "kubernetes.aio.client", "kubernetes.aio.config",
                           "openrl_inspect.adapters.kubernetes._source"):  # fmt: skip
                importlib.import_module(module)

            gc.collect()
            before = rss_bytes()
            t0 = time.perf_counter()
            async with open_kubernetes(settings) as source:
                while True:
                    status = await source.status()
                    if status.ready and not status.degraded:
                        break
                    await asyncio.sleep(0.1)
                sync_s = time.perf_counter() - t0
                await asyncio.sleep(1.0)  # watches open, first bookmarks read
                gc.collect()
                after = rss_bytes()
                objects = {k.kind: k.objects for k in status.kinds}
        return {
            "nodes": nodes,
            "server_counts": counts,
            "cached": objects,
            "rss_before_mib": round(before / 2**20, 1),
            "rss_after_mib": round(after / 2**20, 1),
            "cache_mib": round((after - before) / 2**20, 1),
            "sync_s": round(sync_s, 1),
            "url": url,
        }
    finally:
        ours.send("stop")
        server.join(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(asyncio.run(measure(args.one))))
        return
    print(
        f"machine: {platform.machine()}, {platform.processor() or '-'}, Python {platform.python_version()}, {platform.node()}"
    )
    rows = []
    for n in args.nodes:
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(n)],
            capture_output=True,
            text=True,
            timeout=1800,
            check=True,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        pods = row["cached"]["pods"]
        print(
            f"| {pods:,} pods, {row['cached']['nodes']:,} nodes, {row['cached']['workloads']:,} Workloads, "
            f"{row['cached']['resourceclaims']:,} claims, {row['cached']['resourceslices']:,} slices "
            f"| {row['cache_mib']} MiB ({row['rss_before_mib']} -> {row['rss_after_mib']} MiB RSS) "
            f"| {row['cache_mib'] / pods * 10_000:.0f} MiB per 10,000 pods | synced in {row['sync_s']} s |"
        )
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        slope = (last["cache_mib"] - first["cache_mib"]) / (
            last["cached"]["pods"] - first["cached"]["pods"]
        )
        print(
            f"| marginal, {first['cached']['pods']:,} -> {last['cached']['pods']:,} pods | {slope * 10_000:.0f} MiB per 10,000 pods (with their share of nodes, Workloads, claims and slices) |"
        )


if __name__ == "__main__":
    main()

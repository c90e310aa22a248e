"""Benchmark: the cluster view over 10,000 pods, 1,000 nodes and 8,000 GPUs.

The fake API server (tests/support/fake_kube.py, the real wire format) holds 1,000
8-GPU nodes with their DRA ResourceSlices, 2,000 models' Kueue Workloads, 10,000 pods
(per model three 1-GPU workers with an allocated ResourceClaim each, and two CPU pods)
and 6,000 claims. The real adapter (``open_kubernetes``: official client, watch cache)
syncs from it; Redis (fakeredis) holds the 2,000 models. The query asks for the
capacity by product and every node of a page with its capacity, its GPUs and each
GPU's holder pod and model.

Printed: sync time; the query's median latency with min and max over ``--runs`` after
one warm-up on each execution path (``OPENRL_INSPECT_EXECUTION``, plan and stock,
alternating run by run, their answers compared byte for byte); API-server requests per
GraphQL request (target 0), also after a 410 (compacted history) and after the API
server restarts; and the answer while the API server is down.

Beside it, "our code": the same reads through the same resolvers, loaders, cache views
and schema constructors, called level by level (one ``asyncio.gather`` per level, so
loaders batch as under GraphQL) without graphql-core and Strawberry executing fields,
in total and by phase with the collector off; the end-to-end time minus it is the share
of GraphQL execution.

``--gc-tuned`` freezes every object alive after the sync (``gc.freeze``) and collects
the young generation every 100,000 allocations, close to what ``serve`` does once
started (``OPENRL_INSPECT_GC_FREEZE``, threshold 50,000); without it the collector keeps
CPython's defaults.

    .venv/bin/python bench/bench_cluster_view.py --page 1000 --runs 7 --gc-tuned
    .venv/bin/python bench/bench_cluster_view.py --page 100 --runs 9 --gc-tuned

``--gc-idle`` is ``serve``'s default since (``web.collector``): frozen after the sync, no
collection inside a request, a young collection between requests, outside the timing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import fakeredis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openrl_inspect.adapters.kubernetes import KubernetesCacheSource, open_kubernetes
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.settings import Bounds, Settings, Switches
from openrl_inspect.recorder import AsyncRecorder
from openrl_inspect.resolvers.cluster import capacity as cluster_capacity
from openrl_inspect.resolvers.cluster import holders as cluster_holders
from openrl_inspect.resolvers.cluster import reads as cluster_reads
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.schema.cluster.gpu import Gpu
from openrl_inspect.schema.cluster.node import ClusterCapacity, Node, NodeCapacity
from openrl_inspect.schema.cluster.pod import Pod
from openrl_inspect.schema.state.model import Model
from support import kube_objects
from support.fake_kube import FakeKube
from support.harness import app_client
from support.kube_harness import kube_settings

QUERY = """
query($n: Int!) {
  capacity { nodes total held free unhealthy tainted degraded byProduct { product total held free } }
  nodes(first: $n) { degraded truncated nodes { name ready capacity { total held free }
    gpus(first: 8) { nodes { uuid index productName held
      heldBy { pod { namespace name phase } model { id state } } } } } }
}
"""
GPU_PODS, CPU_PODS, MODELS_PER_NODE = 3, 2, 2


def claim(pod: str, node: str, index: int) -> dict[str, Any]:
    obj = kube_objects.allocated_claim(node, count=1)
    obj["metadata"]["name"] = f"{pod}-gpus"
    obj["metadata"]["uid"] = f"uid-claim-{pod}"
    obj["metadata"]["ownerReferences"][0].update(name=pod, uid=f"uid-pod-{pod}")
    obj["status"]["allocation"]["devices"]["results"][0]["device"] = f"gpu-{index}"
    obj["status"]["reservedFor"] = [{"resource": "pods", "name": pod, "uid": f"uid-pod-{pod}"}]
    return obj


def workload(model_id: str) -> dict[str, Any]:
    obj = kube_objects.admitted_workload()
    obj["metadata"].update(name=f"job-{model_id}", uid=f"uid-wl-{model_id}")
    obj["metadata"]["labels"]["openrl.ai/model-id"] = model_id
    return obj


def cluster(nodes: int) -> tuple[list[dict[str, Any]], list[str]]:
    objects: list[dict[str, Any]] = []
    models: list[str] = []
    for n in range(nodes):
        name = f"gpu-node-{n:04d}"
        h200 = n % 4 == 3
        product = kube_objects.H200 if h200 else kube_objects.H100
        objects.append(kube_objects.node(name, product=product))
        objects.append(
            kube_objects.resource_slice(name, product=product, memory="141Gi" if h200 else "80Gi")
        )
        for k in range(MODELS_PER_NODE):
            mid = f"model-{n:04d}-{k}"
            models.append(mid)
            objects.append(workload(mid))
            for w in range(GPU_PODS):
                pod = f"{mid}-worker-{w}"
                objects.append(
                    kube_objects.pod(pod, model_id=mid, node_name=name, claim_name=f"{pod}-gpus")
                )
                objects.append(claim(pod, name, k * GPU_PODS + w))
            for c in range(CPU_PODS):
                pod = f"{mid}-cpu-{c}"
                objects.append(
                    kube_objects.pod(
                        pod, model_id=mid, role="reward", node_name=name, claim_template=None
                    )
                )
    return objects, models


async def steady(fake: FakeKube, source: KubernetesCacheSource, timeout_s: float) -> None:
    informers = sum(len(i) for i in source.informers.values())
    deadline = time.monotonic() + timeout_s
    while True:
        status = await source.status()
        if status.ready and not status.degraded and fake.open_watches() >= informers:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"not steady: {status}")
        await asyncio.sleep(0.05)


async def measure(
    client: Any, fake: FakeKube, runs: int, page: int
) -> tuple[list[float], list[int], Any]:
    payload = {"query": QUERY, "variables": {"n": page}}
    latencies, requests = [], []
    resp = None
    for _ in range(runs):
        before = fake.total_requests()
        t = time.perf_counter()
        resp = await client.post("/api/v1/inspect/graphql", json=payload)
        latencies.append(time.perf_counter() - t)
        requests.append(fake.total_requests() - before)
    return latencies, requests, resp


async def our_code(backends: Backends, limits: Settings, page: int) -> dict[str, float]:
    """Seconds per phase of the query's reads without GraphQL execution (module doc)."""
    ctx = Context.build(backends, settings=limits)
    phases: dict[str, float] = {}
    t = time.perf_counter()

    def done(phase: str) -> None:
        nonlocal t
        now = time.perf_counter()
        phases[phase] = phases.get(phase, 0.0) + now - t
        t = now

    ClusterCapacity.from_record(await cluster_capacity.cluster_capacity(ctx))
    done("cluster capacity")
    node_page = await cluster_reads.nodes(ctx, page, None)
    records = [rec for _, rec in node_page.items]
    nodes = [Node.from_record(rec) for rec in records]
    done("schema objects")
    caps = await asyncio.gather(*(cluster_capacity.node_capacity(ctx, rec) for rec in records))
    [NodeCapacity.from_record(c) for c in caps]
    done("node capacity")
    pages = await asyncio.gather(*(cluster_reads.node_gpus(ctx, n.name, 8, None) for n in nodes))
    # As the schema does it: held and holders for each page of GPUs at once.
    per_page = [[rec for _, rec in p.items] for p in pages]
    held = await asyncio.gather(*(cluster_holders.gpus_held(ctx, recs) for recs in per_page))
    holders = [h for hs in held for one in hs for h in one.holders]
    done("GPU pages, held, holders and their pods")
    for recs, hs in zip(per_page, held, strict=True):
        [Gpu.from_record(g, h) for g, h in zip(recs, hs, strict=True)]
    done("schema objects")
    [Pod.from_record(h.pod_record) for h in holders if h.pod_record is not None]
    done("schema objects")
    models = await asyncio.gather(*(cluster_holders.holder_model(ctx, h) for h in holders))
    done("holders' models")
    [Model.from_record(m) for m in models if m is not None]
    done("schema objects")
    return phases


async def our_phases(backends: Backends, limits: Settings, page: int, runs: int) -> str:
    """Median ms per phase of ``our_code`` with the collector off (its pauses land on
    whichever phase allocates when a collection is due, and hide where the work is)."""
    gc.collect()
    gc.disable()
    try:
        runs_phases = [await our_code(backends, limits, page) for _ in range(runs)]
    finally:
        gc.enable()
    parts = [
        f"{name} {statistics.median(r[name] for r in runs_phases) * 1e3:.0f}"
        for name in runs_phases[0]
    ]
    total = statistics.median(sum(r.values()) for r in runs_phases) * 1e3
    return f"{', '.join(parts)}; total {total:.0f} ms (median of {runs}, gc off)"


def spread(values: list[float]) -> str:
    return (
        f"median {statistics.median(values) * 1e3:.0f} ms (min {min(values) * 1e3:.0f}, "
        f"max {max(values) * 1e3:.0f}, n={len(values)})"
    )


async def main(args: argparse.Namespace) -> None:
    objects, models = cluster(args.nodes)
    fake = FakeKube()
    t0 = time.perf_counter()
    fake.put(*objects)
    load_s = time.perf_counter() - t0
    counts = {p: sum(1 for _ in fake.objects(p)) for p in ("pods", "nodes", "resourceslices",
                                                            "resourceclaims", "workloads")}  # fmt: skip
    server = fakeredis.FakeServer()
    rec = AsyncRecorder(fakeredis.FakeAsyncRedis(server=server, decode_responses=True),
                        batch_size=1 << 30)  # fmt: skip
    for mid in models:
        rec.model_created(mid, "sess-bench", "Qwen/Qwen3-8B", at=time.time())
        rec.model_state(mid, "active")
    await rec.flush()
    if hasattr(rec, "close"):
        await rec.close()
    store = RedisStateStore.in_memory(server)
    fake.start()
    limits = Settings(bounds=Bounds(max_page_size=max(100, args.page)))
    with tempfile.TemporaryDirectory() as tmp:
        settings = kube_settings(fake, Path(tmp), request_timeout_s=60.0, watch_timeout_s=600.0)
        try:
            t0 = time.perf_counter()
            async with open_kubernetes(settings) as source:
                await steady(fake, source, 600)
                sync_s = time.perf_counter() - t0
                stock_limits = replace(limits, switches=Switches(execution="stock"))
                async with (
                    app_client(store, limits, kubernetes=source) as client,
                    app_client(store, stock_limits, kubernetes=source) as stock,
                ):
                    if args.gc_tuned:
                        gc.collect()
                        gc.freeze()
                        gc.set_threshold(100_000, 50, 1000)
                    if args.gc_idle:
                        # As serve's default (web.collector): frozen, no collection inside
                        # a request, a young one between requests (outside the timing).
                        gc.collect()
                        gc.freeze()
                        gc.disable()
                    warm, warm_req, _ = await measure(client, fake, 1, args.page)
                    await measure(stock, fake, 1, args.page)
                    lat: list[float] = []
                    stock_lat: list[float] = []
                    req: list[int] = []
                    for r in range(args.runs):
                        order = [(client, lat), (stock, stock_lat)]
                        for each, into in order if r % 2 == 0 else order[::-1]:
                            one, asked, resp = await measure(each, fake, 1, args.page)
                            if args.gc_idle:
                                gc.collect(1)
                            into += one
                            req += asked
                            if each is client:
                                plan_body = resp.content
                            else:
                                stock_body = resp.content
                    assert plan_body == stock_body, "the two paths answer differently"
                    backends = Backends(state=store, kubernetes=source)
                    ours = [
                        sum((await our_code(backends, limits, args.page)).values())
                        for _ in range(args.runs)
                    ]
                    phases = await our_phases(backends, limits, args.page, args.runs)
                    assert resp is not None
                    body = resp.json()
                    assert "errors" not in body, body["errors"][:2]
                    data = body["data"]
                    holders = sum(
                        len(g["heldBy"]) for n in data["nodes"]["nodes"] for g in n["gpus"]["nodes"]
                    )

                    fake.expire_history()
                    t0 = time.perf_counter()
                    await asyncio.sleep(0.2)
                    await steady(fake, source, 600)
                    relist_s = time.perf_counter() - t0
                    _, req_410, _ = await measure(client, fake, 2, args.page)

                    fake.stop()
                    await asyncio.sleep(0.5)
                    down, _, down_resp = await measure(client, fake, 1, args.page)
                    degraded_while_down = down_resp.json()["data"]["nodes"]["degraded"]
                    fake.start()
                    t0 = time.perf_counter()
                    await steady(fake, source, 600)
                    resume_s = time.perf_counter() - t0
                    _, req_restart, _ = await measure(client, fake, 2, args.page)
        finally:
            fake.stop()

    med = statistics.median(lat)
    print(f"machine: {platform.machine()}, {platform.python_version()}, {platform.node()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; gc tuned: {args.gc_tuned}")  # fmt: skip
    print(f"fake API server objects: {counts} (built in {load_s:.1f}s)")
    print(f"watch cache synced and watching in {sync_s:.1f}s; response {len(resp.content)} bytes, "
          f"{len(data['nodes']['nodes'])} nodes, {holders} GPU holders; capacity {data['capacity']['total']} "
          f"total / {data['capacity']['held']} held")  # fmt: skip
    print(
        f"| cluster-view query median, plan path | {med * 1e3:.0f} ms (min {min(lat) * 1e3:.0f}, max {max(lat) * 1e3:.0f}, n={args.runs}, page {args.page} nodes; warm-up {warm[0] * 1e3:.0f} ms) |"
    )
    smed = statistics.median(stock_lat)
    print(
        f"| cluster-view query median, stock path | {smed * 1e3:.0f} ms (min {min(stock_lat) * 1e3:.0f}, max {max(stock_lat) * 1e3:.0f}; stock / plan per run: {statistics.median(s / f for s, f in zip(stock_lat, lat, strict=True)):.2f}) |"
    )
    print(
        f"| our code (resolvers, loaders, cache views, schema objects) per request | {spread(ours)} |"
    )
    print(f"| our code by phase, ms | {phases} |")
    share = 1 - statistics.median(ours) / med
    print(f"| GraphQL execution share of the end-to-end median | {share:.0%} |")
    print(
        f"| API-server requests per GraphQL request, steady state | {statistics.mean(req):.2f} (runs: {req}; warm-up: {warm_req}) |"
    )
    print(
        f"| after a 410 (history compacted): relisted in | {relist_s:.1f}s, then {statistics.mean(req_410):.2f} requests per GraphQL request (runs: {req_410}) |"
    )
    print(
        f"| API server down: query answered from the cache, degraded={degraded_while_down} | {down[0] * 1e3:.0f} ms |"
    )
    print(
        f"| after the API server restarts: watching again in | {resume_s:.1f}s, then {statistics.mean(req_restart):.2f} requests per GraphQL request (runs: {req_restart}) |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--page", type=int, default=1000, help="nodes per query page")
    parser.add_argument(
        "--gc-tuned", action="store_true", help="gc.freeze() and a 100,000 threshold"
    )
    parser.add_argument(
        "--gc-idle", action="store_true", help="as serve: frozen, collected between requests"
    )
    asyncio.run(main(parser.parse_args()))

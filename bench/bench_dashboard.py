"""Benchmark: the dashboard's first render in headless Chromium, on a large world.

The demo's app over a static simulated world of 1,000 models (50 sessions x 20, 6 steps
each) and 1,000 GPU nodes (600 H100 + 400 H200, 8 GPUs each), served by uvicorn on a
loopback port, its state in a real redis-server the benchmark starts (as in production:
the demo's in-process fakeredis would be what is measured at this size). Each round opens each page fresh (from about:blank) and waits for its
first data row (``[data-model]`` on the overview, ``[data-gpu]`` on the cluster page);
the pages alternate so neither always runs warm. Printed per page: when its first row
was drawn and when its GraphQL answer arrived, median (min, max) over the rounds.

The floor beside each render: the page's own document asked over HTTP alone (after the
page is left, so no refresh runs beside it).

    .venv/bin/python bench/bench_dashboard.py --rounds 7
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from openrl_inspect.cli.demo import DemoSettings, demo_backends
from openrl_inspect.simulator import SimConfig
from openrl_inspect.web.app import UI, create_app
from openrl_inspect.web.health import HealthSettings
from openrl_inspect.web.server import Server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.browser import chromium_page
from support.ports import free_port, wait_for_port
from support.redis_server import RedisServer

PAGES = {"overview": "[data-model]", "cluster": "[data-gpu]"}
QUERIES = Path(__file__).resolve().parents[1] / "static" / "ui" / "queries"
DOCS = {name: (QUERIES / f"{name}.graphql").read_text() for name in PAGES}


def serve(world: SimConfig, redis_url: str) -> tuple[str, uvicorn.Server, threading.Thread]:
    # No ticks: the bench measures the pages, not the simulation's writes (a tick over
    # 1,000 models holds the event loop for seconds, and the figures swung 10x with it).
    demo = DemoSettings(tick_s=1e9, redis_url=redis_url)
    app = create_app(lambda: demo_backends(demo, world), health=HealthSettings(interval_s=0))
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    server = Server(config)  # serve's: the collector frozen after start-up, idle-time runs
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for_port(port, timeout_s=600)
    return f"http://127.0.0.1:{port}", server, thread


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    world = SimConfig(
        sessions=50,
        models_per_session=20,
        steps_per_model=6,
        nodes_per_pool=(("h100", 600), ("h200", 400)),
    )
    started = time.perf_counter()
    redis = RedisServer().start()
    base, server, thread = serve(world, redis.url)
    print(f"world up in {time.perf_counter() - started:.1f} s: 1,000 models, 1,000 nodes")
    times: dict[str, list[float]] = {name: [] for name in PAGES}
    queried: dict[str, list[float]] = {name: [] for name in PAGES}
    answered: dict[str, list[float]] = {name: [] for name in PAGES}
    cells: dict[str, int] = {}
    with chromium_page() as page:
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.set_default_timeout(120_000)
        arrivals: list[float] = []
        page.on(
            "requestfinished",
            lambda r: arrivals.append(time.perf_counter()) if r.url.endswith("/graphql") else None,
        )
        for _ in range(args.rounds):
            for name, selector in PAGES.items():
                page.goto("about:blank")
                arrivals.clear()
                t0 = time.perf_counter()
                page.goto(f"{base}{UI}#/{name}")
                page.wait_for_selector(selector)
                times[name].append(time.perf_counter() - t0)
                answered[name].append(arrivals[0] - t0)
                cells[name] = len(page.query_selector_all(selector))
                # Leave before the page's next refresh (5 s after its answer): a refresh
                # running beside the query alone, or the next page, slowed both 2x.
                page.goto("about:blank")
                t0 = time.perf_counter()
                answer = httpx.post(f"{base}/api/v1/inspect/graphql", json={"query": DOCS[name]},
                                    timeout=300)  # fmt: skip
                answer.raise_for_status()
                queried[name].append(time.perf_counter() - t0)
    server.should_exit = True
    thread.join(30)
    redis.cleanup()
    for name in PAGES:
        rows = (
            ("drawn", times[name]),
            ("answer in the page", answered[name]),
            ("query alone", queried[name]),
        )
        for what, seen in rows:
            ms = sorted(t * 1e3 for t in seen)
            print(
                f"{name} {what}: median {statistics.median(ms):.0f} ms "
                f"(min {ms[0]:.0f}, max {ms[-1]:.0f}, n={len(ms)})"
            )
    print(f"model rows on the overview: {cells['overview']}, GPU cells: {cells['cluster']}")


if __name__ == "__main__":
    main()

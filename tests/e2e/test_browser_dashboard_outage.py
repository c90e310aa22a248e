"""Redis goes down under the dashboard: the pages say which part is missing and why,
and what Kubernetes still answers (the cluster's nodes and GPUs) stays on screen."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.dashboard import Browser, dashboard, demo_server
from support.redis_server import RedisServer, require_redis

pytestmark = [pytest.mark.browser, pytest.mark.redis_server]


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    # Its own server: this module stops it, which no other test must see.
    require_redis()
    server = RedisServer().start()
    yield server
    server.cleanup()


@pytest.fixture(scope="module")
def ui(redis: RedisServer) -> Iterator[Browser]:
    with demo_server("--redis-url", redis.url) as url, dashboard(url) as b:
        yield b


def test_a_redis_outage_shows_its_banner_while_the_cluster_stays(
    ui: Browser, redis: RedisServer
) -> None:
    ui.open("#/cluster")
    ui.page.wait_for_selector("a[data-holder]")
    nodes = ui.page.eval_on_selector_all("[data-node]", "els => els.map(e => e.dataset.node)")
    assert nodes and ui.page.query_selector("[data-banner]") is None
    redis.stop()
    ui.page.wait_for_selector("[data-banner=redis]", timeout=30_000)
    banner = ui.page.inner_text("[data-banner=redis]")
    assert banner.startswith("Redis (OpenRL's state) ") and "BACKEND_" not in banner
    # The code, for whoever reports it, under "details".
    assert "BACKEND_" in (ui.page.text_content("[data-banner=redis] details") or "")
    after = ui.page.eval_on_selector_all("[data-node]", "els => els.map(e => e.dataset.node)")
    assert after == nodes
    assert ui.page.query_selector_all("[data-gpu]")
    ui.assert_clean()


def test_the_overview_says_redis_is_what_is_missing(ui: Browser) -> None:
    # Runs after the outage above: the overview's answer is all Redis, so it has none.
    ui.open("#/overview")
    ui.page.wait_for_selector("[data-state=error] [data-banner=redis]", timeout=30_000)
    assert "Redis" in ui.page.inner_text("[data-state=error]")
    ui.assert_clean()

"""The inspector's own metrics at ``/api/v1/inspect/metrics``: what is counted, with
label values from a fixed vocabulary, in a registry of its own, behind the right door."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import fakeredis
import httpx
import pytest
from openrl_inspect.adapters.kubernetes import open_kubernetes
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.auth import Authenticator, TokenAuthenticator
from openrl_inspect.core import backend_calls
from openrl_inspect.core.errors import BackendTimeout
from openrl_inspect.core.settings import Bounds, Settings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.telemetry import MetricsSettings
from openrl_inspect.web.app import PREFIX, create_app
from openrl_inspect.web.guard import HttpSettings
from openrl_inspect.web.health import HealthSettings
from prometheus_client.parser import text_string_to_metric_families
from support import kube_objects
from support.auth_harness import new_token, token_line, write_lines
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import kube_settings
from support.ports import free_port

pytestmark = pytest.mark.anyio
__all__ = ["fake_kube"]  # the fixture, used by name below

METRICS = f"{PREFIX}/metrics"
GRAPHQL = f"{PREFIX}/graphql"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@asynccontextmanager
async def client_for(
    store: Any = None,
    authenticator: Authenticator | None = None,
    settings: MetricsSettings | None = None,
    limits: Settings | None = None,
    **others: Any,
) -> AsyncIterator[httpx.AsyncClient]:
    state = store or RedisStateStore.in_memory(fakeredis.FakeServer())

    @asynccontextmanager
    async def backends() -> AsyncIterator[Backends]:
        yield Backends(state=state, **others)

    app = create_app(
        backends,
        limits,
        HttpSettings(max_body_bytes=4096),
        HealthSettings(interval_s=0),
        authenticator,
        metrics_settings=settings,
    )
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://inspector") as client,
    ):
        yield client


async def scrape(client: httpx.AsyncClient, **headers: str) -> tuple[Samples, str]:
    resp = await client.get(METRICS, headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(resp.text):
        for s in family.samples:
            samples[s.name, tuple(sorted(s.labels.items()))] = s.value
    return samples, resp.text


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_requests_are_counted_by_route_operation_and_outcome() -> None:
    async with client_for() as client:
        overview = "query Overview { sessions(first: 1) { totalCount } }"
        for _ in range(2):
            assert (await client.post(GRAPHQL, json={"query": overview})).status_code == 200
        # A name the client chose is not a label value: it could name an owner.
        chosen = "query alice_private_run { sessions(first: 1) { totalCount } }"
        assert (await client.post(GRAPHQL, json={"query": chosen})).status_code == 200
        missing = '{ model(id: "no-such-model") { id } }'
        assert (await client.post(GRAPHQL, json={"query": missing})).status_code == 200
        assert (await client.get(f"{PREFIX}/healthz")).status_code == 200
        # A REST route: its first segment and its document's operation, never the id.
        summary = await client.get(f"{PREFIX}/models/no-such-model/summary")
        assert summary.status_code == 404
        samples, text = await scrape(client)
    total = "openrl_inspect_requests_total"
    assert value(samples, total, route="models", operation="model_summary", outcome="error") == 1
    assert value(samples, total, route="graphql", operation="Overview", outcome="ok") == 2
    assert value(samples, total, route="graphql", operation="other", outcome="ok") == 1
    assert value(samples, total, route="graphql", operation="anonymous", outcome="error") == 1
    assert value(samples, total, route="healthz", operation="", outcome="ok") == 1
    # Both missing models: the GraphQL one and the REST route's document.
    assert value(samples, "openrl_inspect_graphql_errors_total", code="NOT_FOUND") == 2
    count = "openrl_inspect_request_duration_seconds_count"
    assert value(samples, count, route="graphql", operation="Overview") == 2
    assert "alice_private_run" not in text and "no-such-model" not in text


async def test_backend_calls_are_counted_with_their_outcome() -> None:
    async with client_for() as client:
        query = "query Overview { sessions(first: 1) { totalCount } }"
        assert (await client.post(GRAPHQL, json={"query": query})).status_code == 200
        samples, _ = await scrape(client)
    assert value(samples, "openrl_inspect_backend_calls_total", backend="redis", outcome="ok") >= 1
    histogram = "openrl_inspect_backend_call_duration_seconds_count"
    assert value(samples, histogram, backend="redis") >= 1

    # Nothing listens on this port: the calls fail, and say how.
    down = RedisStateStore.from_settings(
        RedisSettings(url=f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.5)
    )
    async with client_for(down) as client:
        body = (await client.post(GRAPHQL, json={"query": query})).json()
        assert body["errors"][0]["extensions"]["code"] == "BACKEND_UNAVAILABLE"
        assert (await client.get(f"{PREFIX}/readyz")).status_code == 503
        samples, _ = await scrape(client)
    calls = "openrl_inspect_backend_calls_total"
    assert value(samples, calls, backend="redis", outcome="BACKEND_UNAVAILABLE") >= 1
    assert value(samples, calls, backend="redis", outcome="ok") == 0
    assert value(samples, "openrl_inspect_backend_up", backend="redis") == 0
    await down.aclose()


async def test_refusals_are_counted_by_reason() -> None:
    async with client_for(limits=Settings(bounds=Bounds(max_nodes=5))) as client:
        big = {"query": "{ __typename }", "padding": "x" * 5000}
        assert (await client.post(GRAPHQL, json=big)).status_code == 413
        costly = "{ sessions(first: 10) { totalCount } }"
        body = (await client.post(GRAPHQL, json={"query": costly})).json()
        assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COSTLY"
        samples, _ = await scrape(client)
    refused = "openrl_inspect_refused_requests_total"
    assert value(samples, refused, reason="BODY_TOO_LARGE") == 1
    assert value(samples, refused, reason="QUERY_TOO_COSTLY") == 1
    total = "openrl_inspect_requests_total"
    assert value(samples, total, route="graphql", operation="anonymous", outcome="refused") == 2


async def test_watch_cache_state_and_process_memory() -> None:
    async with client_for(kubernetes=MemoryKubernetesSource()) as client:
        samples, _ = await scrape(client)
    assert value(samples, "openrl_inspect_watch_cache_synced", kind="pods") == 1
    assert value(samples, "openrl_inspect_watch_cache_objects", kind="pods") == 0
    kinds = {dict(labels)["kind"] for name, labels in samples if name.endswith("_cache_synced")}
    assert {"pods", "nodes", "workloads", "resourceslices", "events"} <= kinds
    assert value(samples, "openrl_inspect_process_resident_memory_bytes") > 1_000_000


async def test_each_app_counts_into_its_own_registry() -> None:
    async with client_for() as first, client_for() as second:
        for _ in range(3):
            await first.get(f"{PREFIX}/healthz")
        one, _ = await scrape(first)
        two, _ = await scrape(second)
    total = "openrl_inspect_requests_total"
    assert value(one, total, route="healthz", operation="", outcome="ok") == 3
    assert value(two, total, route="healthz", operation="", outcome="ok") == 0


def _tokens(tmp_path: Path) -> tuple[TokenAuthenticator, str, str]:
    viewer, operator = new_token(), new_token()
    path = tmp_path / "tokens.jsonl"
    write_lines(
        path, token_line(viewer, "vera", owners=["alice"]), token_line(operator, "olga", "operator")
    )
    auth = TokenAuthenticator(str(path), interval_s=0)
    auth.start()
    return auth, viewer, operator


async def test_operators_only_by_default(tmp_path: Path) -> None:
    auth, viewer, operator = _tokens(tmp_path)
    async with client_for(authenticator=auth) as client:
        assert (await client.get(METRICS)).status_code == 401
        refused = await client.get(METRICS, headers={"authorization": f"Bearer {viewer}"})
        assert refused.status_code == 403
        assert refused.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        samples, text = await scrape(client, authorization=f"Bearer {operator}")
    reasons = "openrl_inspect_auth_failures_total"
    assert value(samples, reasons, reason="missing") == 1
    assert value(samples, "openrl_inspect_refused_requests_total", reason="FORBIDDEN") == 1
    # Principals' names are not label values.
    assert "vera" not in text and "olga" not in text


async def test_open_access_needs_no_credential_but_the_rest_still_does(tmp_path: Path) -> None:
    auth, _, _ = _tokens(tmp_path)
    async with client_for(authenticator=auth, settings=MetricsSettings(access="open")) as client:
        await scrape(client)
        assert (await client.post(GRAPHQL, json={"query": "{ __typename }"})).status_code == 401


def test_settings_refuse_unknown_access_and_bad_names() -> None:
    from openrl_inspect.core.errors import SettingsError

    with pytest.raises(SettingsError):
        MetricsSettings(access="everyone")
    with pytest.raises(SettingsError):
        MetricsSettings(operations=("has space",))


async def test_the_watch_caches_lists_count_as_kubernetes_calls(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    """The cache's LISTs run in tasks the lifespan starts: they count in this app's
    registry too, and its state shows per kind."""
    fake_kube.put(*kube_objects.cluster())
    settings = kube_settings(fake_kube, tmp_path)

    @asynccontextmanager
    async def backends() -> AsyncIterator[Backends]:
        async with open_kubernetes(settings) as source:
            assert await source.wait_synced(10.0)
            yield Backends(
                state=RedisStateStore.in_memory(fakeredis.FakeServer()), kubernetes=source
            )

    app = create_app(backends, health=HealthSettings(interval_s=0))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://inspector") as client,
    ):
        samples, _ = await scrape(client)
    lists = value(samples, "openrl_inspect_backend_calls_total", backend="kubernetes", outcome="ok")
    assert lists >= fake_kube.counts["list", "pods"] >= 1
    assert value(samples, "openrl_inspect_watch_cache_objects", kind="pods") == len(
        [o for o in kube_objects.cluster() if o["kind"] == "Pod"]
    )


def test_timed_reports_each_outcome() -> None:
    seen: list[tuple[str, str]] = []

    class Observer:
        def backend_call(self, backend: str, outcome: str, seconds: float) -> None:
            assert seconds >= 0
            seen.append((backend, outcome))

    token = backend_calls.observing(Observer())
    try:
        with backend_calls.timed("redis"):
            pass
        with pytest.raises(BackendTimeout), backend_calls.timed("prometheus"):
            raise BackendTimeout("prometheus", "slow")
        with pytest.raises(ValueError, match="unexpected"), backend_calls.timed("cloud_logging"):
            raise ValueError("unexpected")
    finally:
        backend_calls.stop_observing(token)
    with backend_calls.timed("redis"):  # nobody listens: nothing reported
        pass
    assert seen == [
        ("redis", "ok"),
        ("prometheus", "BACKEND_TIMEOUT"),
        ("cloud_logging", "error"),
    ]


def test_backend_outcomes_keep_their_names_and_codes_stay_bounded() -> None:
    from openrl_inspect.telemetry import InspectorMetrics

    metrics = InspectorMetrics()
    for outcome in ("ok", "cancelled", "error", "BACKEND_TIMEOUT", "not a code", "x" * 200):
        metrics.backend_call("redis", outcome, 0.01)
    for i in range(100):
        metrics.backend_call("redis", f"CODE_{i}", 0.01)
    samples = {
        s.labels["outcome"]: s.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for s in family.samples
        if s.name == "openrl_inspect_backend_calls_total"
    }
    assert {"ok", "cancelled", "error", "BACKEND_TIMEOUT"} <= set(samples)
    # Past the cap of distinct codes, and anything not shaped like one: OTHER.
    assert samples["OTHER"] == 2 + 100 - (64 - 1)
    assert len(samples) <= 3 + 64 + 1


async def test_the_exposition_passes_promtools_lint() -> None:
    """``promtool check metrics``: Prometheus's own linter of an exposition (names,
    units, counters ending in _total, help texts)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (scripts/install-test-deps.sh installs it)")
    async with client_for() as client:
        await client.post(GRAPHQL, json={"query": "{ sessions(first: 1) { totalCount } }"})
        await client.get(f"{PREFIX}/models/no-such-model/summary")
        _, text = await scrape(client)
    argv = [promtool, "check", "metrics"]
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60)
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stdout + done.stderr

"""HttpMetricsSource: the wire format, error translation, caps, and the twin."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openrl_inspect.adapters.prometheus import PrometheusSettings, QueryResult, Sample, Series
from openrl_inspect.adapters.prometheus._http import HttpMetricsSource
from openrl_inspect.adapters.prometheus._source import load_settings
from openrl_inspect.adapters.prometheus.memory import InMemoryMetricsSource, QueryCall
from openrl_inspect.core.errors import (
    BackendProtocolError,
    BackendTimeout,
    BackendUnavailable,
    InvalidInput,
    SettingsError,
)
from support.ports import free_port
from support.prometheus_server import (
    OpenMetrics,
    PrometheusServer,
    StubPrometheus,
    StubReply,
    require_prometheus,
    steps,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def stub() -> Iterator[StubPrometheus]:
    server = StubPrometheus().start()
    yield server
    server.stop()


def settings_for(url: str, **kw: Any) -> PrometheusSettings:
    return PrometheusSettings(url=url, **kw)


def _no_secrets(exc: Exception, *secrets: str) -> None:
    text = str(exc)
    for s in secrets:
        assert s not in text


# ---------------------------------------------------------------- settings


def test_settings_load_from_environment() -> None:
    env = {
        "OPENRL_INSPECT_PROMETHEUS_URL": "https://example.test/prom",
        "OPENRL_INSPECT_PROMETHEUS_QUERY_TIMEOUT_S": "2.5",
        "OPENRL_INSPECT_PROMETHEUS_MAX_SERIES": "10",
        "OPENRL_INSPECT_PROMETHEUS_GOOGLE_CREDENTIALS": "true",
    }
    s = load_settings(env, {"chunk_bytes": 4096})
    assert (s.url, s.query_timeout_s, s.max_series, s.google_credentials, s.chunk_bytes) == (
        "https://example.test/prom",
        2.5,
        10,
        True,
        4096,
    )
    assert s.bearer_token is None


@pytest.mark.parametrize(
    "kw",
    [
        {"url": "ftp://x"},
        {"query_timeout_s": 0},
        {"max_series": 0},
        {"bearer_token": "t", "google_credentials": True},
    ],
)
def test_settings_refuse_nonsense(kw: dict[str, Any]) -> None:
    with pytest.raises(SettingsError, match=next(iter(kw))):
        PrometheusSettings(**kw)


# ---------------------------------------------------------------- wire format


async def test_instant_posts_a_form_with_prometheus_timeout(stub: StubPrometheus) -> None:
    source = HttpMetricsSource(settings_for(stub.url + "/", query_timeout_s=3, bearer_token="s3"))
    try:
        await source.instant('up{a="b"}', at=1700000000.5)
        await source.range("up", 1700000000, 1700000600, 60)
    finally:
        await source.aclose()
    first, second = stub.requests
    assert (first.method, first.path) == ("POST", "/api/v1/query")
    assert first.headers["content-type"] == "application/x-www-form-urlencoded"
    assert first.headers["authorization"] == "Bearer s3"
    assert first.form == {"query": ['up{a="b"}'], "time": ["1700000000.5"], "timeout": ["3.0"]}
    assert (second.method, second.path) == ("POST", "/api/v1/query_range")
    assert second.form["start"] == ["1700000000.0"]
    assert second.form["end"] == ["1700000600.0"]
    assert second.form["step"] == ["60.0"]
    assert second.form["timeout"] == ["3.0"]


async def test_google_credentials_are_used_lazily(
    stub: StubPrometheus, monkeypatch: pytest.MonkeyPatch
) -> None:
    import google.auth

    refreshed: list[object] = []

    class FakeCreds:
        token: str | None = None

        @property
        def valid(self) -> bool:
            return self.token is not None

        def refresh(self, request: object) -> None:
            refreshed.append(request)
            self.token = "g-token"

    def fake_default(scopes: list[str]) -> tuple[FakeCreds, str]:
        assert scopes == ["https://www.googleapis.com/auth/monitoring.read"]
        return FakeCreds(), "project"

    monkeypatch.setattr(google.auth, "default", fake_default)
    source = HttpMetricsSource(settings_for(stub.url, google_credentials=True))
    try:
        await source.instant("up")
        await source.instant("up")
    finally:
        await source.aclose()
    assert [r.headers["authorization"] for r in stub.requests] == ["Bearer g-token"] * 2
    assert len(refreshed) == 1  # the token is reused while valid


async def test_google_credentials_missing_is_unavailable(
    stub: StubPrometheus, monkeypatch: pytest.MonkeyPatch
) -> None:
    import google.auth
    import google.auth.exceptions

    def no_creds(scopes: list[str]) -> None:
        raise google.auth.exceptions.DefaultCredentialsError("no credentials here")  # type: ignore[no-untyped-call]

    monkeypatch.setattr(google.auth, "default", no_creds)
    source = HttpMetricsSource(settings_for(stub.url, google_credentials=True))
    with pytest.raises(BackendUnavailable) as info:
        await source.instant("up")
    await source.aclose()
    assert info.value.backend == "prometheus"
    assert stub.requests == []


def test_google_auth_is_not_imported_by_the_adapter() -> None:
    # Importing the adapters must not pull google.auth in (it is heavy and optional).
    import subprocess

    code = (
        "import sys, openrl_inspect.adapters.prometheus._http, "
        "openrl_inspect.adapters.prometheus._gpu_prom; "
        "print('google.auth' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- errors


async def test_prometheus_down_is_unavailable() -> None:
    port = free_port()  # nothing listens there
    source = HttpMetricsSource(settings_for(f"http://127.0.0.1:{port}", bearer_token="tok"))
    with pytest.raises(BackendUnavailable) as info:
        await source.instant("up")
    await source.aclose()
    assert info.value.backend == "prometheus"
    _no_secrets(info.value, str(port), "127.0.0.1", "tok", "up")


async def test_slow_prometheus_is_a_timeout(stub: StubPrometheus) -> None:
    stub.reply = StubReply(delay_s=30)
    source = HttpMetricsSource(settings_for(stub.url, query_timeout_s=0.2))
    with pytest.raises(BackendTimeout) as info:
        await source.instant("secret_metric")
    await source.aclose()
    assert info.value.backend == "prometheus"
    _no_secrets(info.value, "secret_metric", str(stub.port))


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (StubReply(200, b"<html>proxy page</html>", "text/html"), BackendProtocolError),
        (StubReply(200, b'{"status":"success"}'), BackendProtocolError),
        (StubReply(200, b'{"status":"success","data":{"resultType":"string","result":[1,"x"]}}'),
         BackendProtocolError),
        (StubReply(200, b'{"status":"success","data":{"resultType":"vector",'
                        b'"result":[{"metric":{},"value":[1,"x"]}]}}'), BackendProtocolError),
        (StubReply(400, b'{"status":"error","errorType":"bad_data","error":"parse error"}'),
         BackendProtocolError),
        (StubReply(422, b'{"status":"error","errorType":"execution","error":"too many"}'),
         BackendProtocolError),
        (StubReply(503, b'{"status":"error","errorType":"timeout","error":"query timed out"}'),
         BackendTimeout),
        (StubReply(503, b'{"status":"error","errorType":"unavailable","error":"x"}'),
         BackendUnavailable),
        (StubReply(503, b"upstream connect error", "text/plain"), BackendUnavailable),
        (StubReply(504, b"gateway timeout", "text/plain"), BackendTimeout),
        (StubReply(401, b"denied", "text/plain"), BackendUnavailable),
        (StubReply(403, b'{"status":"error","errorType":"bad_data","error":"no"}'),
         BackendUnavailable),
        (StubReply(500, b"oops", "text/plain"), BackendProtocolError),
    ],
)  # fmt: skip
async def test_answers_are_translated(
    stub: StubPrometheus, reply: StubReply, error: type[Exception]
) -> None:
    stub.reply = reply
    source = HttpMetricsSource(settings_for(stub.url))
    with pytest.raises(error) as info:
        await source.instant("up")
    await source.aclose()
    assert type(info.value) is error
    _no_secrets(info.value, "parse error", "too many", str(stub.port))


async def test_oversized_answer_is_refused(stub: StubPrometheus) -> None:
    stub.reply = StubReply(body=b'{"status":"success","data":' + b" " * 5000 + b"}")
    source = HttpMetricsSource(settings_for(stub.url, max_response_bytes=1000))
    with pytest.raises(BackendProtocolError):
        await source.instant("up")
    await source.aclose()


async def test_bad_arguments_never_reach_prometheus(stub: StubPrometheus) -> None:
    source = HttpMetricsSource(settings_for(stub.url, chunk_bytes=100))
    with pytest.raises(InvalidInput):
        await source.instant("x" * 101)
    with pytest.raises(InvalidInput):
        await source.instant("   ")
    with pytest.raises(InvalidInput):
        await source.instant("up", at=float("nan"))
    with pytest.raises(InvalidInput):
        await source.range("up", 0, 100, 0)
    with pytest.raises(InvalidInput):
        await source.range("up", 100, 0, 1)
    with pytest.raises(InvalidInput):
        await source.range("up", 0, 100_000, 1)  # more than 11,000 points
    await source.aclose()
    assert stub.requests == []


# ---------------------------------------------------------------- real Prometheus

T0 = float(int(time.time() // 60) * 60 - 3 * 3600)


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    require_prometheus()
    om = OpenMetrics()
    for i in range(5):
        samples = [(t, float(i * 1000 + k)) for k, t in enumerate(steps(T0, T0 + 600, 15))]
        om.add("oi_test_gauge", {"i": str(i)}, samples)
    server = PrometheusServer(om).start()
    yield server
    server.cleanup()


async def test_real_instant_and_range(prometheus: PrometheusServer) -> None:
    source = HttpMetricsSource(settings_for(prometheus.url))
    try:
        inst = await source.instant('oi_test_gauge{i="3"}', at=T0 + 300)
        rng = await source.range('oi_test_gauge{i=~"1|2"}', T0, T0 + 600 - 15, 15)
        scalar = await source.instant("scalar(vector(7))", at=T0)
    finally:
        await source.aclose()
    assert inst.result_type == "vector"
    [s] = inst.series
    assert s.label("i") == "3" and s.label("__name__") == "oi_test_gauge"
    assert s.samples == (Sample(T0 + 300, 3000 + 300 / 15),)
    assert not inst.truncated
    assert rng.result_type == "matrix"
    assert [x.label("i") for x in rng.series] == ["1", "2"]
    assert [p.v for p in rng.series[0].samples] == [1000 + k for k in range(40)]
    assert scalar.result_type == "scalar" and scalar.series[0].samples[0].v == 7


async def test_real_caps_say_when_they_cut(prometheus: PrometheusServer) -> None:
    source = HttpMetricsSource(settings_for(prometheus.url, max_series=2, max_samples=50))
    try:
        few = await source.instant("oi_test_gauge", at=T0 + 300)
        cut = await source.range("oi_test_gauge", T0, T0 + 585, 15)
    finally:
        await source.aclose()
    assert [s.label("i") for s in few.series] == ["0", "1"]
    assert few.series_truncated and not few.samples_truncated
    # 40 samples per series: the first keeps 40, the second 10, the rest are dropped.
    assert [len(s.samples) for s in cut.series] == [40, 10]
    assert [s.truncated for s in cut.series] == [False, True]
    assert cut.samples_truncated and cut.series_truncated


async def test_real_bad_query_is_a_protocol_error(prometheus: PrometheusServer) -> None:
    source = HttpMetricsSource(settings_for(prometheus.url))
    with pytest.raises(BackendProtocolError):
        await source.instant("sum(")
    await source.aclose()


async def test_client_event_hooks_see_every_request(prometheus: PrometheusServer) -> None:
    seen: list[str] = []

    async def hook(request: httpx.Request) -> None:
        seen.append(request.url.path)

    async with httpx.AsyncClient(event_hooks={"request": [hook]}) as client:
        source = HttpMetricsSource(settings_for(prometheus.url), client=client)
        await source.instant("oi_test_gauge", at=T0 + 60)
        await source.aclose()  # a client passed in stays open
        await source.instant("oi_test_gauge", at=T0 + 60)
    assert seen == ["/api/v1/query", "/api/v1/query"]


# ---------------------------------------------------------------- twin


async def test_twin_records_calls_and_caps() -> None:
    def responder(call: QueryCall) -> QueryResult:
        series = [Series((("i", str(i)),), (Sample(1, i),)) for i in range(5)]
        return QueryResult("vector", tuple(series))

    twin = InMemoryMetricsSource(responder, max_series=3)
    res = await twin.instant("q", at=5)
    assert len(res.series) == 3 and res.series_truncated
    assert await InMemoryMetricsSource().range("q", 0, 10, 1) == QueryResult("matrix", ())
    with pytest.raises(InvalidInput):
        await twin.range("q", 0, 10, 0)
    assert twin.calls == [QueryCall("instant", "q", 5)]


def test_missing_prometheus_skips_locally_and_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from support import prometheus_server

    monkeypatch.setattr(prometheus_server, "PROMETHEUS", str(tmp_path / "no-prometheus"))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Prometheus is not installed"):
        prometheus_server.require_prometheus()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="Prometheus is not installed"):
        prometheus_server.require_prometheus()

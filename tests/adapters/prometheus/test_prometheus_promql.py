"""PromQL building: escaping of hostile values, identifiers, set matchers, chunking.

Checked twice: against an independent reader of PromQL strings (support.promql_parse)
and against a real Prometheus, which must read every built literal back unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import anyio
import httpx
import openrl_inspect.adapters.prometheus._promql as promql
import pytest
from hypothesis import HealthCheck, given, settings, strategies
from openrl_inspect.adapters.prometheus import GpuKey, PrometheusSettings, PromGpuMetrics, _gpu
from openrl_inspect.adapters.prometheus._http import HttpMetricsSource
from openrl_inspect.adapters.prometheus.memory import InMemoryMetricsSource
from openrl_inspect.core.errors import InvalidInput
from support.prometheus_server import PrometheusServer, require_prometheus
from support.promql_parse import ParseError, find_strings, parse_selector, read_string

HOSTILE_BITS = [
    "\\", '"', "'", "`", "\n", "\r", "\t", "\x00", "\x7f", "\x85", "\u2028", "\ufeff",
    "\ufffd", "\ufffe", "\U0001f600", "\U0010ffff", "é", "日本", "|", ".*", "^", "$",
    "(", ")", "[", "]", "{", "}", "?", "+", "\\d", ",", "=", "=~", "!~", "}[5m]) or vector(1",
    '"} or up{a="', "$1", "\\u0041", "\\x41", "%22", " ", "GPU-0",
]  # fmt: skip

NO_SURROGATES = strategies.characters(exclude_categories=["Cs"])

# Any Unicode text a Python str can hold in UTF-8 (no lone surrogates), with hostile
# fragments mixed in more often than chance would.
hostile = strategies.one_of(
    strategies.text(NO_SURROGATES, min_size=1, max_size=40),
    strategies.lists(strategies.sampled_from(HOSTILE_BITS), min_size=1, max_size=8).map("".join),
    strategies.lists(
        strategies.one_of(strategies.sampled_from(HOSTILE_BITS), NO_SURROGATES),
        min_size=1,
        max_size=12,
    ).map("".join),
)


# ---------------------------------------------------------------- offline


@given(hostile)
def test_equality_matcher_holds_exactly_the_original_value(value: str) -> None:
    query = promql.selector("DCGM_FI_DEV_GPU_UTIL", [promql.eq("UUID", value)])
    metric, matchers = parse_selector(query)
    assert metric == "DCGM_FI_DEV_GPU_UTIL"
    assert matchers == [("UUID", "=", value)]
    assert "\n" not in query


@given(strategies.lists(hostile, min_size=1, max_size=6), hostile)
def test_set_matcher_matches_exactly_its_values(values: list[str], other: str) -> None:
    query = promql.selector("m", [promql.in_set("pod", values), promql.eq("UUID", other)])
    _metric, matchers = parse_selector(query)
    assert [(lab, op) for lab, op, _ in matchers] == [("pod", "=~"), ("UUID", "=")]
    pattern = matchers[0][2]
    assert matchers[1][2] == other
    # Prometheus anchors regex matchers; RE2 and Python agree on escaped literals.
    for v in values:
        assert re.fullmatch(pattern, v, re.DOTALL)
    assert bool(re.fullmatch(pattern, other, re.DOTALL)) == (other in values)
    assert bool(re.fullmatch(pattern, other + "x", re.DOTALL)) == (other + "x" in values)


@given(hostile)
def test_quote_reads_back(value: str) -> None:
    text = promql.quote(value)
    assert read_string(text, 0) == (value, len(text))


def test_json_quoting_would_not_do() -> None:
    """The reasons ``quote`` is not ``json.dumps``: both of these break PromQL."""
    import json

    with pytest.raises(ParseError):
        read_string(json.dumps("\U0001f600"), 0)  # a surrogate pair
    with pytest.raises(ParseError):
        read_string(json.dumps("\ufffd", ensure_ascii=False), 0)
    assert read_string(promql.quote("\U0001f600\ufffd"), 0)[0] == "\U0001f600\ufffd"


def test_lone_surrogate_is_refused() -> None:
    with pytest.raises(InvalidInput):
        promql.quote("a\ud800b")


@pytest.mark.parametrize("name", ["", "1abc", "a-b", "a b", 'a"', "a{b}", "é", "up or vector(1)"])
def test_bad_metric_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidInput):
        promql.selector(name)


@pytest.mark.parametrize("name", ["", "1a", "a:b", "a-b", "a=b", "__name__ ", "é"])
def test_bad_label_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidInput):
        promql.selector("up", [promql.eq(name, "x")])


def test_good_identifiers_pass() -> None:
    assert promql.selector("vllm:num_requests_running", [promql.eq("__name__", "x")]) == (
        'vllm:num_requests_running{__name__="x"}'
    )


def test_empty_set_is_refused() -> None:
    # ``label=~""`` would select the series WITHOUT the label: never build it.
    with pytest.raises(InvalidInput):
        promql.in_set("UUID", [])


def test_regex_escape_is_quote_meta() -> None:
    assert promql.regex_escape(r"a.b+c*d?e(f)g|h[i]j{k}l^m$n\o-p") == (
        r"a\.b\+c\*d\?e\(f\)g\|h\[i\]j\{k\}l\^m\$n\\o-p"
    )


def test_duration() -> None:
    assert promql.duration(600) == "600s"
    assert promql.duration(0.25) == "250ms"
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(InvalidInput):
            promql.duration(bad)


def _two_branch(sets: dict[str, list[str]] | object) -> str:
    assert isinstance(sets, dict)
    parts = []
    if sets.get("UUID"):
        sel = promql.selector("m", [promql.in_set("UUID", sets["UUID"])])
        parts.append(f"sum(a({sel}[5m])) / sum(b({sel}[5m]))")
    if sets.get("Hostname"):
        sel = promql.selector("m", [promql.in_set("Hostname", sets["Hostname"])])
        parts.append(f"max({sel})")
    return " or ".join(parts)


@given(
    strategies.lists(hostile, min_size=1, max_size=60),
    strategies.lists(hostile, max_size=20),
    strategies.integers(min_value=400, max_value=3000),
)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_chunks_cover_every_value_once_within_budget(
    uuids: list[str], hosts: list[str], budget: int
) -> None:
    sets = {"UUID": uuids, "Hostname": hosts}
    try:
        queries = promql.chunk_values(sets, _two_branch, budget)
    except InvalidInput:
        # Only when one value alone cannot fit beside the fixed text.
        base = len(_two_branch({"UUID": ["a"], "Hostname": ["a"]}).encode())
        worst = max(
            [2 * promql.value_cost(v) for v in uuids] + [promql.value_cost(v) for v in hosts]
        )
        assert base + worst > budget
        return
    seen_uuids: list[str] = []
    seen_hosts: list[str] = []
    for q in queries:
        assert len(q.encode()) <= budget
        literals = find_strings(q)
        if q.startswith("sum("):
            assert literals[0] == literals[1]  # the same set in both halves
            seen_uuids += _unescape_all(literals[0])
            literals = literals[2:]
        assert len(literals) <= 1
        if literals:
            seen_hosts += _unescape_all(literals[0])
    assert sorted(seen_uuids) == sorted(set(uuids))
    assert sorted(seen_hosts) == sorted(set(hosts))


def _unescape_all(pattern: str) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", a, flags=re.DOTALL) for a in _alts(pattern)]


def _alts(pattern: str) -> list[str]:
    """Split an alternation of escaped literals on its unescaped ``|``."""
    out, cur, i = [], "", 0
    while i < len(pattern):
        if pattern[i] == "\\":
            cur += pattern[i : i + 2]
            i += 2
        elif pattern[i] == "|":
            out.append(cur)
            cur = ""
            i += 1
        else:
            cur += pattern[i]
            i += 1
    out.append(cur)
    return out


def test_chunking_splits_only_past_the_budget() -> None:
    values = [f"GPU-{i:08d}" for i in range(100)]

    def build(sets: object) -> str:
        assert isinstance(sets, dict)
        return promql.selector("m", [promql.in_set("UUID", sets["UUID"])])

    one = promql.chunk_values({"UUID": values}, build, 10_000)
    assert len(one) == 1
    many = promql.chunk_values({"UUID": values}, build, 300)
    assert len(many) > 1
    assert all(len(q) <= 300 for q in many)
    with pytest.raises(InvalidInput):
        promql.chunk_values({"UUID": ["x" * 500]}, build, 300)


# ---------------------------------------------------------------- real Prometheus


@pytest.fixture(scope="module")
def prometheus() -> Iterator[httpx.Client]:
    require_prometheus()
    server = PrometheusServer().start()
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client
    server.cleanup()


def _query(client: httpx.Client, query: str) -> list[dict[str, dict[str, str]]]:
    r = client.post("/api/v1/query", data={"query": query})
    body = r.json()
    assert body["status"] == "success", (query, body)
    result: list[dict[str, dict[str, str]]] = body["data"]["result"]
    return result


@given(hostile, hostile)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_real_prometheus_reads_back_every_value(
    prometheus: httpx.Client, value: str, other: str
) -> None:
    # absent() copies the equality matchers' values into its result labels.
    sel = promql.selector("oi_absent_metric", [promql.eq("l", value)])
    [row] = _query(prometheus, f"absent({sel})")
    assert row["metric"] == {"l": value}
    # label_replace runs Prometheus' own (anchored RE2) matching of the set pattern.
    pattern = promql.quote(promql.regex_alternation([value, other + "|"]))
    for probe, member in ((value, True), (other, other == value), (other + "|", True)):
        probe_sel = promql.selector("oi_absent_metric", [promql.eq("l", probe)])
        query = f'label_replace(absent({probe_sel}), "hit", "yes", "l", {pattern})'
        [row] = _query(prometheus, query)
        assert (row["metric"].get("hit") == "yes") == member, (probe, pattern)


# ---------------------------------------------------------------- the GPU layer's queries


def _alternation(literal: str) -> list[str]:
    return sorted(_unescape_all(literal))


@given(
    strategies.lists(hostile, min_size=1, max_size=5),
    strategies.lists(hostile, min_size=1, max_size=3),
    strategies.lists(hostile, min_size=1, max_size=4),
)
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_gpu_layer_queries_hold_exactly_the_given_values(
    uuids: list[str], nodes: list[str], pods: list[str]
) -> None:
    source = InMemoryMetricsSource()
    layer = PromGpuMetrics(source)
    keys = [GpuKey(u, nodes[i % len(nodes)], i) for i, u in enumerate(uuids)]
    anyio.run(layer.duty, keys, 600.0, 1.0)
    anyio.run(layer.vllm, pods, 300.0, 1.0)
    duty_calls, vllm_calls = source.calls[:2], source.calls[2:]
    assert len(duty_calls) == 2 and len(vllm_calls) == 5
    for call in duty_calls:
        lits = find_strings(call.query)
        # UUID set twice (sum and count), then Hostname set twice with UUID="" each.
        assert len(lits) == 6 and lits[0] == lits[1] and lits[2] == lits[4]
        assert lits[3] == lits[5] == ""
        assert _alternation(lits[0]) == sorted(set(uuids))
        assert _alternation(lits[2]) == sorted({k.node for k in keys if k.node})
    fixed = {"pod", "$1", "exported_pod", "(.*)", "quantile", "0.5", "0.95", ""}
    for call in vllm_calls:
        sets = [lit for lit in find_strings(call.query) if lit not in fixed]
        assert sets, call.query
        for lit in sets:
            assert _alternation(lit) == sorted(set(pods))


@given(
    strategies.lists(hostile, min_size=1, max_size=4),
    strategies.lists(hostile, min_size=1, max_size=3),
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_real_prometheus_accepts_every_gpu_layer_query(
    prometheus: httpx.Client, uuids: list[str], pods: list[str]
) -> None:
    """Hostile keys reach Prometheus, parse, and simply find nothing."""

    async def run() -> None:
        settings = PrometheusSettings(url=str(prometheus.base_url).rstrip("/"))
        source = HttpMetricsSource(settings)
        layer = PromGpuMetrics.from_settings(settings, source)
        try:
            keys = [GpuKey(u, u, i) for i, u in enumerate(uuids)]
            assert await layer.duty(keys, 600, at=1e9) == [None] * len(keys)
            assert await layer.vllm(pods, 300, at=1e9) == [None] * len(pods)
            assert await layer.xid_errors(keys, 600, at=1e9) == [None] * len(keys)
            assert await layer.activity([[_gpu.HeldInterval(k, 1e9, 1e9 + 60) for k in keys]]) != [
                None
            ]
        finally:
            await layer.aclose()  # a source passed in is the caller's to close
            await source.aclose()

    anyio.run(run)

"""The dashboard's numbers agree with each other and its error and degraded states speak
to a person: a sentence and a way back, no GraphQL words, the setting that turns a
backend on, "N more" with a way to see them, pace or how long since the last step.

Some states the demo never shows (a logs backend not set up, a page of logs cut short,
ops of a microsecond): there the API's real answer is rewritten on its way to the page,
as the API would give it in that state."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support.dashboard import UI_PATH, Browser, ask, dashboard, demo_server
from support.ports import free_port, wait_for_port
from support.redis_server import RedisServer, require_redis

pytestmark = pytest.mark.browser

# Words of the API a person should never have to read on the dashboard (an environment
# variable naming a setting, OPENRL_INSPECT_CLOUD_LOGGING_PROJECT, is no such word).
JARGON = [
    re.compile(p)
    for p in (
        r"workerLogs",
        r"\bBACKEND_",
        r"\bNOT_FOUND\b",
        r"(?<![A-Z_])CLOUD_LOGGING(?![A-Z_])",
        r"(?<![A-Z_])LIMIT\b",
        r"\):\S",
    )
]


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    with demo_server() as url:
        yield url


@pytest.fixture(scope="module")
def module_browser(demo_url: str) -> Iterator[Browser]:
    with dashboard(demo_url) as b:
        yield b


@pytest.fixture
def ui(module_browser: Browser) -> Iterator[Browser]:
    module_browser.reset()
    yield module_browser
    module_browser.page.unroute_all(behavior="ignoreErrors")
    module_browser.assert_clean()


def rewrite(ui: Browser, operation: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Every answer to the page's ``operation`` document reaches it changed by ``change``."""

    def handle(route: Any) -> None:
        query = json.loads(route.request.post_data or "{}").get("query", "")
        if f"query {operation}" not in query:
            route.continue_()
            return
        response = route.fetch()
        body = response.json()
        change(body)
        route.fulfill(response=response, json=body)

    ui.page.route("**/graphql", handle)


def reopen(ui: Browser, route: str) -> None:
    """Open ``route`` afresh: a page already there (the same model, from the test
    before) would otherwise show its last answer until the next refresh."""
    ui.open(route)
    ui.page.reload()


def shown(ui: Browser, selector: str) -> str:
    text: str = ui.page.inner_text(selector)
    return text


def no_jargon(text: str) -> None:
    for word in JARGON:
        assert not word.search(text), (word.pattern, text)


def test_an_unknown_model_is_a_sentence_and_a_way_back(ui: Browser) -> None:
    ui.open("#/model/no-such-model")
    ui.page.wait_for_selector("[data-state=error]")
    text = shown(ui, "[data-state=error]")
    assert text.startswith("There is no model “no-such-model” here. It may have ended")
    no_jargon(text)
    ui.page.click("[data-state=error] [data-link=overview]")
    ui.page.wait_for_selector("[data-page=overview]")


def test_models_that_stopped_stepping_say_so_instead_of_a_pace(ui: Browser) -> None:
    answer = ask(ui.base, "overview")
    stopped = [
        m["id"]
        for s in answer["data"]["sessions"]["nodes"]
        for m in s["models"]["nodes"]
        if m["summary"]["stepsPerMinute"] is None
        and m["summary"]["secondsSinceLastStep"] is not None
    ]
    assert stopped, "the demo has failed and stalled models"
    ui.open("#/overview")
    ui.page.wait_for_selector("[data-section=models] tbody tr")
    paces = ui.page.eval_on_selector_all(
        "[data-section=models] tbody tr",
        "rows => Object.fromEntries(rows.map(r => [r.dataset.model,"
        " r.querySelector('[data-pace]').innerText]))",
    )
    for mid in stopped:
        assert paces[mid].startswith("no step for "), (mid, paces[mid])
    ui.open(f"#/model/{stopped[0]}")
    ui.page.wait_for_selector("header [data-pace]")
    assert "no step for " in shown(ui, "header [data-pace]")


def test_a_session_without_a_stepping_model_says_so_in_words(ui: Browser) -> None:
    sid = ask(ui.base, "overview")["data"]["sessions"]["nodes"][0]["id"]

    def still(body: dict[str, Any]) -> None:
        body["data"]["session"]["summary"].update(stepsPerMinute=None, medianStepSeconds=None)

    rewrite(ui, "Session", still)
    reopen(ui, f"#/session/{sid}")
    ui.page.wait_for_selector("[data-section=summary] [data-pace]")
    text = shown(ui, "[data-section=summary]")
    assert "no model of it is stepping now" in text
    assert "—" not in text and "steps/min" not in text


def test_the_overview_says_how_many_more_need_a_person_and_shows_them(ui: Browser) -> None:
    def more(body: dict[str, Any]) -> None:
        attention = body["data"]["attention"]
        attention["needing"] = len(attention["models"]) + 20

    rewrite(ui, "Overview", more)
    reopen(ui, "#/overview")
    ui.page.wait_for_selector("[data-section=attention] [data-more]")
    assert shown(ui, "[data-more]").startswith("20 more need a person.")
    ui.page.click("[data-more] [data-link=more]")
    ui.page.wait_for_url("**verdict=ATTENTION**")
    ui.page.wait_for_selector("[data-section=models] tbody tr")
    verdicts = ui.page.eval_on_selector_all(
        "[data-section=models] tbody tr [data-verdict]", "els => els.map(e => e.dataset.verdict)"
    )
    assert verdicts and not {"PROGRESSING", "ENDED"} & set(verdicts)
    assert ui.page.input_value("select[name=verdict]") == "ATTENTION"


def test_a_backend_not_set_up_is_a_sentence_naming_its_setting(ui: Browser) -> None:
    """The model page's logs when no worker-log backend is set up, as the API says it."""

    def unset(body: dict[str, Any]) -> None:
        body["data"]["model"]["logs"] = None
        body["data"]["model"]["summary"]["unknown"] = [
            {"backend": "kubernetes", "code": "BACKEND_NOT_CONFIGURED", "message": "x"}
        ]
        body.setdefault("errors", []).append(
            {
                "message": "no worker log backend is configured (Cloud Logging or Kubernetes); "
                "ask with workerLogs: false for the client logs alone",
                "path": ["model", "logs"],
                "extensions": {"code": "BACKEND_NOT_CONFIGURED", "backend": "cloud_logging"},
            }
        )

    mid = ask(ui.base, "overview")["data"]["attention"]["models"][0]["model"]["id"]
    rewrite(ui, "Model", unset)
    reopen(ui, f"#/model/{mid}")
    ui.page.wait_for_selector("[data-banner=cloud_logging]")
    banner = shown(ui, "[data-banner=cloud_logging]")
    assert banner.startswith("Cloud Logging is not set up for this inspector, so logs are not")
    assert "--logging-project" in banner
    no_jargon(banner)
    unknown = shown(ui, "[data-unknown]")
    assert (
        unknown
        == "Some causes are unknown, not absent: Kubernetes is not set up for this inspector."
    )


def test_a_short_page_of_logs_says_why_in_words(ui: Browser) -> None:
    def cut(body: dict[str, Any]) -> None:
        logs = body["data"]["model"]["logs"]
        logs.update(truncated=True, truncatedReason="LIMIT", backend="CLOUD_LOGGING")

    mid = ask(ui.base, "overview")["data"]["attention"]["models"][0]["model"]["id"]
    rewrite(ui, "Model", cut)
    reopen(ui, f"#/model/{mid}")
    ui.page.wait_for_selector("[data-section=logs] [data-cut]")
    text = shown(ui, "[data-section=logs]")
    assert "from Cloud Logging, newest first" in text
    assert "one page shown" in shown(ui, "[data-section=logs] [data-cut]")
    no_jargon(text)


def test_ops_of_a_microsecond_are_a_sliver_on_an_axis_in_microseconds(ui: Browser) -> None:
    def instant(body: dict[str, Any]) -> None:
        for step in filter(None, body["data"]["model"]["steps"]["nodes"]):
            step["durationSeconds"] = 2e-6
            ops = [op for op in (step["ops"] or {"nodes": []})["nodes"] if op]
            for op in ops:
                op.update(durationSeconds=1e-6 / len(ops), queueWaitSeconds=0)

    mid = ask(ui.base, "overview")["data"]["attention"]["models"][0]["model"]["id"]
    rewrite(ui, "Model", instant)
    reopen(ui, f"#/model/{mid}")
    ui.page.wait_for_selector("[data-section=timeline] [data-axis-top]")
    top = ui.page.text_content("[data-section=timeline] [data-axis-top]")
    assert top == "2 µs"
    heights = ui.page.eval_on_selector_all(
        "[data-section=timeline] svg g",
        """gs => gs.map(g => [...g.querySelectorAll('rect[data-kind]')]
             .reduce((a, r) => a + Number(r.getAttribute('height')), 0))""",
    )
    full = 160 - 14
    drawn = [h for h in heights if h > 0]  # a step without ops has no bar
    assert drawn and all(abs(h - full / 2) < 1 for h in drawn), heights
    units = ui.page.evaluate(
        """async () => { const { dur } = await import('./lib.js');
             return [dur(1e-6), dur(0.0004), dur(0.0042), dur(0.25)]; }"""
    )
    assert units == ["1 µs", "400 µs", "4.2 ms", "250 ms"]


def test_the_cluster_legend_explains_every_colour_on_the_grid(ui: Browser) -> None:
    ui.open("#/cluster")
    ui.page.wait_for_selector("[data-page=cluster] [data-gpu]")
    cells = ui.page.eval_on_selector_all(
        "[data-gpu]",
        "els => els.map(e => [e.className, e.getAttribute('style') || ''])",
    )
    states = {m.group(1) for cls, _ in cells if (m := re.search(r"gpu-(\w+)", cls))}
    explained = set(
        ui.page.eval_on_selector_all(
            "[data-legend] [data-legend-state]", "els => els.map(e => e.dataset.legendState)"
        )
    )
    assert states <= explained, (states, explained)
    assert ui.page.query_selector("[data-legend] [data-legend-duty] [data-scale]")
    if any("var(--nodata)" in style for _, style in cells):
        assert "no duty samples" in shown(ui, "[data-legend] [data-legend-nodata]")
    # Held GPUs take a duty colour between idle and busy (teal among them): the scale in
    # the legend holds its stops from idle (0) to busy (1).
    scale = ui.page.get_attribute("[data-scale]", "data-scale") or ""
    hues = [int(h) for h in re.findall(r"hsl\((\d+)", scale)]
    assert len(hues) >= 5 and hues == sorted(hues, reverse=True)
    assert any(160 <= h <= 190 for h in hues), hues  # the teal a lightly used GPU shows


def test_capacity_counts_the_unhealthy_gpu_a_model_holds(ui: Browser) -> None:
    ui.open("#/cluster")
    ui.page.wait_for_selector("[data-section=capacity] tr.total [data-unhealthy]")
    cap = ask(ui.base, "cluster")["data"]["capacity"]
    red = ui.page.eval_on_selector_all("[data-gpu].gpu-unhealthy", "els => els.length")
    assert cap["unhealthyHeld"] >= 1 and red >= 1
    total = shown(ui, "[data-section=capacity] tr.total [data-unhealthy]")
    assert total == f"{cap['unhealthy']} ({cap['unhealthyHeld']} held)"


@pytest.fixture(scope="module")
def redis_only_url() -> Iterator[str]:
    """`openrl-inspect serve --redis-url`, nothing else: no Kubernetes."""
    require_redis()
    redis = RedisServer().start()
    port = free_port()
    serve = ["serve", "--port", str(port), "--redis-url", redis.url]
    proc = subprocess.Popen(
        [sys.executable, "-m", "openrl_inspect.cli", *serve],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, timeout_s=90)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(15)
        redis.cleanup()


@pytest.mark.redis_server
def test_the_cluster_page_without_kubernetes_names_the_setting(
    ui: Browser, redis_only_url: str
) -> None:
    ui.page.goto(f"{redis_only_url}{UI_PATH}#/cluster")
    ui.page.wait_for_selector("[data-state=no-kubernetes]")
    text = shown(ui, "[data-state=no-kubernetes]")
    assert "started without Kubernetes" in text
    assert "--kubeconfig" in text and "OPENRL_INSPECT_KUBERNETES_KUBECONFIG" in text
    no_jargon(text)

"""The dashboard in a real headless Chromium against the demo: every page shows the demo's
data as the API answers it, navigation, filters and deep links work, nothing leaves
127.0.0.1 and the console stays clean."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from openrl_inspect.core.domain import TimelineKind
from support.dashboard import Browser, ask, dashboard, demo_server

pytestmark = pytest.mark.browser


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
    module_browser.assert_clean()


def stable_verdicts(before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """The live demo moves on: judge only the models whose verdict held across the load."""
    return {k: v for k, v in before.items() if after.get(k) == v}


def overview_verdicts(answer: Any) -> dict[str, str]:
    data = answer["data"]
    return {
        m["id"]: m["summary"]["verdict"]
        for s in data["sessions"]["nodes"]
        for m in s["models"]["nodes"]
    }


def shown_verdicts(ui: Browser, scope: str) -> dict[str, str]:
    shown: dict[str, str] = ui.page.eval_on_selector_all(
        f"{scope} [data-model]",
        """rows => Object.fromEntries(rows.map(r => [r.dataset.model,
             r.querySelector('[data-verdict]')?.dataset.verdict]))""",
    )
    return shown


def test_overview_shows_attention_then_every_live_model(ui: Browser) -> None:
    before = ask(ui.base, "overview")
    ui.open("#/overview")
    ui.page.wait_for_selector("[data-page=overview] [data-section=models] tbody tr")
    after = ask(ui.base, "overview")
    attention = [b["model"]["id"] for b in before["data"]["attention"]["models"]]
    shown_attention = ui.page.eval_on_selector_all(
        "[data-section=attention] [data-model]", "els => els.map(e => e.dataset.model)"
    )
    assert shown_attention == attention
    rows = shown_verdicts(ui, "[data-section=models]")
    assert set(rows) == set(overview_verdicts(before))
    stable = stable_verdicts(overview_verdicts(before), overview_verdicts(after))
    assert stable, "every verdict changed during the load"
    assert {k: rows[k] for k in stable} == stable
    assert "updated" in ui.page.inner_text("[data-updated]")
    assert any(u.endswith("/graphql") for u in ui.requested)


def test_a_filter_narrows_the_table_and_back_undoes_it(ui: Browser) -> None:
    ui.open("#/overview")
    ui.page.wait_for_selector("[data-section=models] tbody tr")
    shown = list(shown_verdicts(ui, "[data-section=models]").values())
    everyone = len(shown)
    # The page holds one page of sessions: filter by its rarest verdict.
    verdict = min(sorted(set(shown)), key=shown.count)
    ui.page.select_option("select[name=verdict]", verdict)
    ui.page.wait_for_url(f"**verdict={verdict}")
    ui.page.wait_for_function(
        "v => [...document.querySelectorAll('[data-section=models] tbody tr')]"
        ".every(r => r.querySelector('[data-verdict]').dataset.verdict === v)",
        arg=verdict,
    )
    failed = shown_verdicts(ui, "[data-section=models]")
    assert 0 < len(failed) < everyone
    ui.page.go_back()
    ui.page.wait_for_function(
        f"() => document.querySelectorAll('[data-section=models] tbody tr').length === {everyone}"
    )
    assert "verdict=" not in ui.page.url


def test_a_deep_link_with_filters_opens_filtered(ui: Browser) -> None:
    answer = ask(ui.base, "overview")
    session = answer["data"]["sessions"]["nodes"][0]
    owner, ids = session["owner"], {m["id"] for m in session["models"]["nodes"]}
    ui.open(f"#/overview?owner={owner}&sort=age")
    ui.page.wait_for_selector("[data-section=models] tbody tr")
    assert set(shown_verdicts(ui, "[data-section=models]")) == ids
    assert ui.page.input_value("select[name=owner]") == owner


def test_model_page_shows_the_diagnosis_and_its_evidence(ui: Browser) -> None:
    brief = ask(ui.base, "overview")["data"]["attention"]["models"][0]
    mid = brief["model"]["id"]
    ui.open("#/overview")
    ui.page.click(f"[data-section=attention] [data-model='{mid}'] a")
    ui.page.wait_for_selector(f"[data-page=model] header[data-model='{mid}']")
    model = ask(ui.base, "model", {"id": mid})["data"]["model"]
    assert ui.page.get_attribute("header [data-verdict]", "data-verdict") == brief["verdict"]
    kinds = ui.page.eval_on_selector_all(
        "[data-section=diagnosis] [data-cause]", "els => els.map(e => e.dataset.cause)"
    )
    assert kinds == [c["kind"] for c in model["summary"]["causes"]]
    for section in (
        "timeline",
        "ops",
        "open-ops",
        "placements",
        "gpu-duty",
        "sampler",
        "events",
        "logs",
        "history",
    ):
        assert ui.page.is_visible(f"[data-section={section}]"), section
    # The history lane: the model's timeline, one row an entry (the demo ticks on, so
    # the rows are compared by kind with what the API knows, not one by one).
    shown = ui.page.eval_on_selector_all(
        "[data-lane=timeline] li", "els => els.map(e => e.dataset.kind)"
    )
    assert shown and set(shown) <= {k.value for k in TimelineKind}
    assert model["timeline"]["entries"]


def test_a_cause_links_its_pod_logs_and_node(ui: Browser) -> None:
    lost = next(
        b
        for b in ask(ui.base, "overview")["data"]["attention"]["models"]
        if b["verdict"] == "LOST_OPS"
    )
    mid = lost["model"]["id"]
    ui.open(f"#/model/{mid}")
    ui.page.wait_for_selector("[data-section=diagnosis] [data-link=pod]")
    pod = ui.page.inner_text("[data-section=diagnosis] [data-link=pod] >> nth=0").split("/")[-1]
    ui.page.click("[data-section=diagnosis] [data-link=pod] >> nth=0")
    ui.page.wait_for_url(f"**pod={pod}**")
    ui.page.wait_for_function(
        "pod => { const rows = [...document.querySelectorAll('[data-section=logs] tbody tr')];"
        " return rows.length > 0 && rows.every(r => r.innerText.includes(pod)); }",
        arg=pod,
    )
    node = ui.page.get_attribute("[data-section=diagnosis] [data-link=node] >> nth=0", "href")
    assert node is not None and node.startswith("#/cluster?node=")


def test_session_page_lists_its_models_and_summary(ui: Browser) -> None:
    sid = ask(ui.base, "overview")["data"]["sessions"]["nodes"][0]["id"]
    ui.open(f"#/session/{sid}")
    ui.page.wait_for_selector(f"header[data-session='{sid}']")
    session = ask(ui.base, "session", {"id": sid})["data"]["session"]
    ids = set(shown_verdicts(ui, "[data-section=models]"))
    assert ids == {m["id"] for m in session["models"]["nodes"]}
    counts = ui.page.eval_on_selector_all(
        "[data-section=summary] [data-count]", "els => els.map(e => e.dataset.count)"
    )
    assert counts == [c["verdict"] for c in session["summary"]["byVerdict"]]


def test_cluster_page_shows_every_node_and_gpu_and_opens_a_holder(ui: Browser) -> None:
    ui.open("#/cluster")
    ui.page.wait_for_selector("[data-page=cluster] [data-node]")
    cluster = ask(ui.base, "cluster")["data"]
    nodes = ui.page.eval_on_selector_all("[data-node]", "els => els.map(e => e.dataset.node)")
    assert nodes == [n["name"] for n in cluster["nodes"]["nodes"]]
    gpus = ui.page.eval_on_selector_all("[data-gpu]", "els => els.map(e => e.dataset.gpu)")
    assert sorted(gpus) == sorted(
        g["uuid"] for n in cluster["nodes"]["nodes"] for g in n["gpus"]["nodes"]
    )
    products = ui.page.eval_on_selector_all(
        "[data-product]", "els => els.map(e => e.dataset.product)"
    )
    assert products == [p["product"] for p in cluster["capacity"]["byProduct"]]
    holder = ui.page.get_attribute("a[data-holder] >> nth=0", "data-holder")
    ui.page.focus("a[data-holder] >> nth=0")
    ui.page.keyboard.press("Enter")
    ui.page.wait_for_selector(f"header[data-model='{holder}']")


def test_cluster_page_shows_a_partitioned_gpu_as_one_box_of_its_slices(ui: Browser) -> None:
    ui.open("#/cluster")
    ui.page.wait_for_selector("[data-page=cluster] [data-parent]")
    cluster = ask(ui.base, "cluster")["data"]
    (node,) = [n for n in cluster["nodes"]["nodes"] if n["capacity"]["partitioned"]]
    parents = sorted({g["parentUuid"] for g in node["gpus"]["nodes"] if g["kind"] == "MIG"})
    boxes = ui.page.eval_on_selector_all(
        f"[data-node='{node['name']}'] [data-parent]",
        "els => els.map(e => [e.dataset.parent, e.querySelectorAll('[data-gpu]').length])",
    )
    assert sorted(b[0] for b in boxes) == parents and {b[1] for b in boxes} == {4}
    slices = node["capacity"]["slices"]
    shown = ui.page.inner_text(f"[data-node='{node['name']}'] [data-node-slices]")
    assert shown == f"{slices['held']}/{slices['total']} MIG slices held"
    row = ui.page.inner_text("[data-section=capacity] tr.total [data-slices]")
    total = cluster["capacity"]["slices"]
    assert row == f"{total['held']} held, {total['free']} free of {total['total']}"


def test_navigation_between_pages_and_back(ui: Browser) -> None:
    ui.open("#/overview")
    ui.page.wait_for_selector("[data-page=overview]")
    ui.page.click("nav >> text=Cluster")
    ui.page.wait_for_selector("[data-page=cluster]")
    ui.page.go_back()
    ui.page.wait_for_selector("[data-page=overview]")
    assert ui.page.get_attribute("nav a[aria-current=page]", "href") == "#/overview"


def test_pause_stops_the_refresh(ui: Browser) -> None:
    ui.open("#/cluster")
    ui.page.wait_for_selector("[data-page=cluster] [data-node]")
    ui.page.click("[data-pause]")
    assert ui.page.get_attribute("[data-pause]", "aria-pressed") == "true"
    ui.requested.clear()
    # More than one refresh period passes with no GraphQL request while paused.
    ui.page.wait_for_timeout(6_500)
    assert [u for u in ui.requested if u.endswith("/graphql")] == []
    ui.page.click("[data-pause]")
    with ui.page.expect_request(lambda r: r.url.endswith("/graphql")):
        pass


def test_an_unknown_model_says_so(ui: Browser) -> None:
    ui.open("#/model/no-such-model")
    ui.page.wait_for_selector("[data-state=error]")
    assert "There is no model “no-such-model” here." in ui.page.inner_text("[data-state=error]")


# Every GraphQL answer reaches the page 7 s late (longer than the 5 s refresh), and the
# page counts how many of its GraphQL requests were ever in flight at once.
SLOW_ANSWERS = """
(() => {
  const fetch0 = window.fetch.bind(window);
  window.__inflight = 0;
  window.__mostInflight = 0;
  window.fetch = async (...args) => {
    const graphql = String(args[0]).endsWith("/graphql");
    if (!graphql) return fetch0(...args);
    window.__mostInflight = Math.max(window.__mostInflight, ++window.__inflight);
    try {
      const answer = await fetch0(...args);
      await new Promise((done) => setTimeout(done, 7000));
      return answer;
    } finally {
      window.__inflight--;
    }
  };
})();
"""


def test_an_answer_slower_than_the_refresh_is_drawn_and_not_piled_up(ui: Browser) -> None:
    page = ui.page.context.browser.new_page()
    try:
        page.add_init_script(SLOW_ANSWERS)
        page.goto(f"{ui.base}/api/v1/inspect/ui/#/overview")
        page.wait_for_selector("[data-page=overview] [data-model]", timeout=20_000)
        page.wait_for_timeout(6_000)  # past a refresh period with the next answer due
        assert page.evaluate("window.__mostInflight") == 1
    finally:
        page.close()

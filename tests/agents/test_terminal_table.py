"""The terminal summary's table: statements cut at a word's end, and the attention list
says how many more models need a person than it shows."""

from __future__ import annotations

from typing import Any

import pytest
from openrl_inspect.cli import table


def _brief(i: int, statement: str) -> dict[str, Any]:
    return {
        "model": {"id": f"model-{i}"},
        "verdict": "STUCK",
        "topCause": {"kind": "OP_STUCK", "statement": statement},
    }


def test_a_statement_is_cut_at_a_word_not_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table, "_width", lambda: 60)
    statement = "forward_backward at step 89 has run for 2h 14m on a worker that heartbeats"
    body = {"data": {"attention": {"needing": 1, "scanned": 5, "models": [_brief(1, statement)]}}}
    row = table.render("attention", body).splitlines()[-1]
    shown = row.split("OP_STUCK", 1)[1].strip()
    assert shown.endswith("…") and len(row) <= 60
    kept = shown[:-1]
    assert statement.startswith(kept) and statement[len(kept)] == " "  # a whole word


def test_the_attention_list_says_how_many_more_need_a_person() -> None:
    models = [_brief(i, "stuck") for i in range(10)]
    body = {"data": {"attention": {"needing": 30, "scanned": 120, "models": models}}}
    last = table.render("attention", body).splitlines()[-1]
    assert last.startswith("... and 20 more") and "--first 20" in last
    everything = {"data": {"attention": {"needing": 10, "scanned": 120, "models": models}}}
    assert "more" not in table.render("attention", everything).splitlines()[-1]


def _model_body(per_minute: float | None, since: float | None) -> dict[str, Any]:
    summary = {
        "verdict": "STALLED",
        "stepsPerMinute": per_minute,
        "medianStepSeconds": 5.4,
        "secondsSinceLastStep": since,
        "failedOps": 0,
        "stuckOps": 0,
        "lostOps": 0,
        "workersAlive": 1,
        "workersTotal": 1,
        "causes": [],
        "reasons": ["stalled"],
        "unknown": [],
    }
    model = {"id": "m", "sessionId": "s", "state": "ACTIVE", "summary": summary}
    return {"data": {"model": model}}


def test_a_model_without_a_pace_says_how_long_since_its_last_step() -> None:
    second = table.render("model_summary", _model_body(None, 3720)).splitlines()[1]
    assert second.startswith("no step for 1 h 2 min;") and "steps/min" not in second
    fresh = table.render("model_summary", _model_body(None, None)).splitlines()[1]
    assert fresh.startswith("no step finished yet;")
    moving = table.render("model_summary", _model_body(11.1, 2.0)).splitlines()[1]
    assert moving.startswith("pace 11.1 steps/min, median step 5.4 s;")

"""The token budget of MCP answers: lists are cut from the end and said so; a single
text too long is cut short last; what fits is left alone."""

from __future__ import annotations

from openrl_inspect.agents.mcp.answer import fitted
from openrl_inspect.agents.mcp.budget import cut, tokens
from openrl_inspect.execution import Answer
from support.types import api_types


def test_what_fits_is_left_alone() -> None:
    value = {"a": [1, 2, 3], "b": "text"}
    assert cut(value, 100) == ({"a": [1, 2, 3], "b": "text"}, [])


def test_the_longest_list_loses_its_last_items_first() -> None:
    value = {"causes": [{"n": i, "text": "x" * 200} for i in range(10)], "few": [1, 2]}
    out, notes = cut(value, 300)
    assert tokens(out) <= 300
    kept = [c["n"] for c in out["causes"]]
    assert kept == list(range(len(kept))) and 0 < len(kept) < 10  # the head stands
    assert out["few"] == [1, 2]
    assert notes == [f"causes: {10 - len(kept)} item(s) left off"]


def test_one_text_too_long_is_cut_short_last() -> None:
    value = {"model": {"failureReason": "y" * 40_000, "id": "m-1"}}
    out, notes = cut(value, 500)
    assert tokens(out) <= 500 and out["model"]["id"] == "m-1"
    assert out["model"]["failureReason"].endswith("[cut]")
    assert notes == ["model.failureReason: text cut"]


def test_an_answer_states_its_size_budget_and_cut() -> None:
    answer = Answer({"logs": [{"message": "z" * 100} for _ in range(500)]})
    fit = fitted(answer, 1000, cursor="next-page")
    assert fit.tokens <= fit.budget == 1000
    assert fit.truncated and fit.cut and fit.cursor == "next-page"
    whole = fitted(Answer({"x": [1]}), 1000)
    assert not whole.truncated and whole.cut == [] and whole.cursor is None


def test_the_tools_enums_are_the_schemas() -> None:
    from typing import get_args

    from openrl_inspect.agents.mcp import tools

    schema = api_types()
    for literal, name in (
        (tools.ModelState, "ModelState"),
        (tools.SessionState, "SessionState"),
        (tools.Severity, "LogSeverity"),
    ):
        kind = schema.get_type(name)
        assert kind is not None
        assert set(get_args(literal)) <= set(kind.values), name  # type: ignore[attr-defined]
    assert set(get_args(tools.ModelState)) == set(schema.get_type("ModelState").values)  # type: ignore[union-attr]

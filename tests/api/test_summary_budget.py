"""A summary's token budget: measured once per kept judgement, while it has room.

A dashboard polls the same summaries every few seconds; measuring one (a JSON rendering
of every field) was most of a warm poll's cost. A judgement kept between polls (the same
diagnosis object) that fitted with room for its ages to change is not measured again;
one near its budget is, every time, and one over it is trimmed as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from openrl_inspect.core.domain import Verdict
from openrl_inspect.resolvers.diagnosis import Diagnosis
from openrl_inspect.schema.summary import budget


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = budget.tokens_of

    def counting(value: Any) -> int:
        calls.append(value)
        return real(value)

    monkeypatch.setattr(budget, "tokens_of", counting)
    return calls


def _diagnosis() -> Diagnosis:
    return Diagnosis(verdict=Verdict.PROGRESSING, causes=(), left_off=0, unknown=())


def test_a_kept_judgement_with_room_is_measured_once(measured: list[Any]) -> None:
    d = _diagnosis()
    first = budget.fitted(d, lambda x: {"diagnosis": x, "age": 1.0}, 1500)
    again = budget.fitted(d, lambda x: {"diagnosis": x, "age": 2.0}, 1500)
    assert first["diagnosis"] is d and again == {"diagnosis": d, "age": 2.0}
    assert len(measured) == 1
    # Another judgement (a new object, however alike) is measured.
    budget.fitted(_diagnosis(), lambda x: {"diagnosis": x}, 1500)
    assert len(measured) == 2


def test_a_judgement_near_its_budget_is_measured_every_time(measured: list[Any]) -> None:
    d = _diagnosis()
    size = budget.tokens_of({"diagnosis": d})
    measured.clear()
    tight = size + budget.AGES_SLACK_TOKENS - 1  # fits, without room for its ages
    for _ in range(3):
        assert budget.fitted(d, lambda x: {"diagnosis": x}, tight) == {"diagnosis": d}
    assert len(measured) == 3

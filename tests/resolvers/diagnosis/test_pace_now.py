"""A model's pace is taken over a window that ends now: a model that stopped stepping
has no pace (the summary says how long since its last step), never one from old steps."""

from __future__ import annotations

from dataclasses import replace

from openrl_inspect.resolvers.diagnosis import pace
from support import diagnosis_evidence

NOW = diagnosis_evidence.NOW


def test_a_stepping_model_has_its_pace() -> None:
    evidence = diagnosis_evidence.healthy()
    steps = evidence.state.steps
    per_minute = pace.steps_per_minute(evidence)
    first = min(s.started_at or NOW for s in steps)
    assert per_minute is not None
    assert per_minute == len(steps) / (NOW - first) * 60


def test_the_window_ends_now_not_at_the_last_step() -> None:
    evidence = diagnosis_evidence.healthy()
    fresh = pace.steps_per_minute(evidence)
    later = pace.steps_per_minute(replace(evidence, now=NOW + 60))  # within the stall limit
    assert fresh is not None and later is not None and later < fresh


def test_a_stalled_model_has_no_pace() -> None:
    # The same fifty steps, their last an hour before now.
    stalled = diagnosis_evidence.healthy(diagnosis_evidence.history(end=NOW - 3600))
    assert pace.is_stalled(stalled)
    assert pace.steps_per_minute(stalled) is None


def test_a_failed_or_ended_model_has_no_pace() -> None:
    evidence = diagnosis_evidence.healthy()
    for state in ("failed", "ended"):
        over = diagnosis_evidence.with_state(
            evidence, model=diagnosis_evidence.model(state, at=NOW - 30, latest_step=49)
        )
        assert pace.steps_per_minute(over) is None, state


def test_a_model_without_a_finished_step_has_no_pace() -> None:
    none = diagnosis_evidence.with_state(diagnosis_evidence.healthy(), steps=())
    assert pace.steps_per_minute(none) is None

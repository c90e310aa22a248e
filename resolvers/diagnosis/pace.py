"""Step pace from the recent steps: durations, the last finished step, the stall test.

Shared by the verdict and the rules, so both call a model stalled on the same numbers
(the same test as the summary's verdict).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from openrl_inspect.core.domain import TERMINAL_STATES
from openrl_inspect.resolvers.diagnosis.evidence import ModelEvidence, Thresholds
from openrl_inspect.state.records import StepRecord


def finished(steps: Sequence[StepRecord]) -> list[StepRecord]:
    """Finished steps with both ends known, oldest first."""
    done = [s for s in steps if s.started_at is not None and s.finished_at is not None]
    return sorted(done, key=lambda s: s.step)


def durations(steps: Sequence[StepRecord]) -> list[float]:
    return [
        s.finished_at - s.started_at
        for s in finished(steps)
        if s.finished_at is not None and s.started_at is not None
    ]


def last_finished(steps: Sequence[StepRecord]) -> StepRecord | None:
    done = finished(steps)
    return max(done, key=lambda s: s.finished_at or 0.0) if done else None


def median_step(steps: Sequence[StepRecord]) -> float | None:
    values = durations(steps)
    return statistics.median(values) if values else None


def stall_limit(median: float | None, t: Thresholds) -> float:
    """Seconds without a finished step after which a model is stalled."""
    return max(t.stall_factor * (median or 0.0), t.stall_min_s)


def since_last_step(evidence: ModelEvidence) -> float | None:
    last = last_finished(evidence.state.steps)
    if last is None or last.finished_at is None:
        return None
    return max(0.0, evidence.now - last.finished_at)


def is_stalled(evidence: ModelEvidence) -> bool:
    since = since_last_step(evidence)
    median = median_step(evidence.state.steps)
    return since is not None and since > stall_limit(median, evidence.thresholds)


def steps_per_minute(evidence: ModelEvidence) -> float | None:
    """Finished steps per minute over a window that ends now (from the start of the
    oldest step considered): a model that stops stepping slows down on it at once.

    None, for no pace, when the model no longer runs (failed or ended), has finished no
    step, or is stalled (no step for longer than the stall limit): a pace taken from old
    steps read "11.1/min" beside a model that had stepped nothing for an hour.
    ``seconds_since_last_step`` then says how long it has been.
    """
    if evidence.model.state in TERMINAL_STATES or is_stalled(evidence):
        return None
    done = finished(evidence.state.steps)
    starts = [s.started_at for s in done if s.started_at is not None]
    if not starts:
        return None
    span = evidence.now - min(starts)
    return len(done) / span * 60 if span > 0 else None

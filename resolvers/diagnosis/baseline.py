"""A model against its own past: the recent median against the earlier median.

Medians, not means: one slow step (a checkpoint, a retry) moves neither, while a real
slowdown moves most of the recent window. Without enough earlier samples there is no
baseline and so no verdict of slow.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from openrl_inspect.resolvers.diagnosis.evidence import Thresholds


@dataclass(frozen=True, slots=True)
class Shift:
    """The recent median against the baseline median; ``ratio`` recent / baseline."""

    recent: float
    baseline: float
    recent_n: int
    baseline_n: int

    @property
    def ratio(self) -> float:
        return self.recent / self.baseline if self.baseline > 0 else float("inf")


def shift(values: Sequence[float], t: Thresholds) -> Shift | None:
    """Split ``values`` (oldest first) into the baseline and the last
    ``recent_samples``; None when either side is too short."""
    recent_n = t.recent_samples
    if recent_n < 1 or len(values) < recent_n + t.baseline_min_samples:
        return None
    baseline, recent = values[:-recent_n], values[-recent_n:]
    return Shift(statistics.median(recent), statistics.median(baseline), recent_n, len(baseline))


def slower(values: Sequence[float], t: Thresholds, floor_s: float | None = None) -> Shift | None:
    """The shift when the recent times are slower than the baseline by the slow factor
    (and by ``floor_s`` at least, default ``min_slowdown_s``), else None."""
    s = shift(values, t)
    floor = t.min_slowdown_s if floor_s is None else floor_s
    if s is None or s.baseline <= 0:
        return None
    if s.recent >= t.slow_factor * s.baseline and s.recent - s.baseline >= floor:
        return s
    return None


def lower(values: Sequence[float], t: Thresholds) -> Shift | None:
    """The shift when recent rates (throughputs) fell below baseline / slow factor."""
    s = shift(values, t)
    if s is None or s.baseline <= 0:
        return None
    return s if s.recent * t.slow_factor <= s.baseline else None

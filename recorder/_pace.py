"""A model's pace against its own past, kept as step finishes are written (``oi:models:pace``).

The index lets the inspector's ``attention`` find the live models that keep moving but
slowly, without judging every model (docs/redis-schema.md, "Model indexes"). Its score
is the median of a model's newest ``RECENT`` step times over the median of the earlier
ones (at least ``BASELINE``), a step's time being the interval between the finishes of
consecutive steps. The threshold that makes a model a candidate is the inspector's; the
candidate is then judged in full by the model's summary, so a score that errs costs one
judgement, never a verdict.

A recorder remembers the finishes of the steps it recorded (``Paces``): one deque of
floats per model, for at most ``MAX_MODELS`` models (the least recently finished
forgotten). A step finish recorded again (a replayed batch) leaves the memory as it was
and yields the same score, so the index stays idempotent; an older one is ignored; a
gap in the step numbers starts the model's memory afresh. Only runs of consecutive steps
one recorder saw are scored: a model whose step finishes are recorded by several
processes in turn may go unscored (attention then finds it only once it is quiet, as
before). ``reindex`` scores the stored data with the same function (``score``) over the
steps' rollup entries.
"""

from __future__ import annotations

import itertools
import statistics
from array import array
from collections.abc import Sequence

RECENT = 3  # the newest step times compared
BASELINE = 4  # the fewest earlier step times a comparison needs
KEPT = 16  # step finishes remembered per model (15 step times)
MAX_MODELS = 65_536  # models whose finishes a recorder remembers


def score(finishes: Sequence[float]) -> float | None:
    """Recent step time over earlier step time, from the finish times of consecutive
    steps (oldest first); None without enough history or with no earlier time."""
    times = [b - a for a, b in itertools.pairwise(finishes)]
    if len(times) < RECENT + BASELINE:
        return None
    baseline = statistics.median(times[:-RECENT])
    if baseline <= 0:
        return None
    return statistics.median(times[-RECENT:]) / baseline


class Paces:
    """The step finishes a recorder saw, per model, for ``oi:models:pace``."""

    __slots__ = ("_models",)

    def __init__(self) -> None:
        # model id -> (its newest finished step, finishes of consecutive steps up to it)
        self._models: dict[str, tuple[int, array[float]]] = {}

    def __len__(self) -> int:
        return len(self._models)

    def finished(self, mid: str, step: int, at: float) -> float | None:
        """Note that ``step`` of ``mid`` finished at ``at``; the model's score now."""
        kept = self._models.pop(mid, None)
        if kept is None or step > kept[0] + 1:
            kept = (step, array("d", [at]))  # new, or a gap: the run starts again
        elif step == kept[0] + 1:
            kept[1].append(at)
            if len(kept[1]) > KEPT:
                del kept[1][0]
            kept = (step, kept[1])
        elif step == kept[0]:
            kept[1][-1] = at  # the same finish again (a replay): the same score
        else:
            self._models[mid] = kept  # an older step finishing late: nothing moves
            return None
        self._models[mid] = kept
        if len(self._models) > MAX_MODELS:
            del self._models[next(iter(self._models))]  # the least recently finished
        return score(kept[1])

    def forget(self, mid: str) -> None:
        self._models.pop(mid, None)

"""A model's judgement, computed once per version of what it is judged from.

A dashboard polls the same hundred summaries every few seconds, and most models have not
changed between two polls. ``Judgements`` keeps the last summaries (bounded, least
recently used out first), each under the version of its inputs: the model's record, its
rollup (every recorded op moves it), the Kubernetes evidence read from the watch cache
(in memory: the watch cache's snapshot as far as this model is concerned), the clock's
minute, the thresholds, the window and what the asker may see. A request whose versions
match is answered with the kept summary, its ages (``seconds since``) taken again at the
request's own now; anything else is judged afresh, and kept.

Shared across requests and across principals who see alike (the same role and owners):
the model record a request reaches is already one its principal may see.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from openrl_inspect.state.records import ModelRecord
from openrl_inspect.state.rollup import ModelRollup

# Models whose summaries are kept: a dashboard's pages and an attention list, with room.
MAX_KEPT = 4096


class Judgements:
    """A bounded memo of summaries by the version of their inputs; counts hits."""

    def __init__(self, max_kept: int = MAX_KEPT, period_s: float = 60.0) -> None:
        self.max_kept = max_kept
        # The clock's part of the version: a judgement is kept for this period at most.
        self.period_s = period_s
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()
        # The REST routes and MCP run in the app's one loop; the terminal in its own.
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Any:
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                self.misses += 1
                return None
            self._kept.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._kept[key] = value
            self._kept.move_to_end(key)
            while len(self._kept) > self.max_kept:
                self._kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)


def fingerprint(*parts: object) -> Hashable | None:
    """``parts`` as a key: themselves when hashable, else their ``repr``; ``None`` when
    neither says what they are."""
    try:
        hash(parts)
        return parts
    except TypeError:
        pass
    try:
        return repr(parts)
    except Exception:
        return None


def model_version(rec: ModelRecord) -> Hashable:
    """What of the model's record a judgement reads (its settings and LoRA are not)."""
    return (
        rec.id,
        rec.session_id,
        rec.base_model,
        rec.state,
        rec.state_at,
        rec.created_at,
        tuple(sorted(rec.transitions.items())),
        rec.failure_reason,
        rec.latest_step,
        rec.kept_steps,
    )


def rollup_version(rollup: ModelRollup) -> Hashable:
    """The rollup's version: its lifetime counters and its step entries as stored (a new,
    started, finished or failed op rewrites its step's entry). Read off the stored text,
    not the decoded steps: a poll of 100 models is 8,000 ops."""
    return (rollup.complete, tuple(sorted(rollup.counters.items())), rollup.entries)

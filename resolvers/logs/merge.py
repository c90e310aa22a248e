"""The k-way merge of the sides' pages into one answer, in time order, within a budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from openrl_inspect.adapters.logs import LogEntry, entry_size
from openrl_inspect.resolvers.logs.args import LogLimit
from openrl_inspect.resolvers.logs.sides import ClientSide, Key, Side, WorkerSide

# The merged answer's byte budget (entry text, as the adapters count it).
MAX_LOG_BYTES = 262_144


def merge(
    workers: list[WorkerSide],
    clients: list[ClientSide],
    out: list[LogEntry],
    used: int,
    size: int,
    newest_first: bool,
    taken: Callable[[], None] | None = None,
) -> tuple[LogLimit | None, int, list[Side]]:
    """Move entries from the sides' pages to ``out`` in time order; ``taken`` is called
    after each one moved (the sides then stand just past it).

    Returns why it stopped (None: every side ran out), the bytes used, and the sides
    that ran out of read entries while having more (reading those again may go on).
    """
    sides: list[Side] = [*workers, *clients]

    def later(a: Key, b: Key) -> bool:
        return a < b if newest_first else a > b

    while True:
        if len(out) >= size:
            return LogLimit.LIMIT, used, []
        heads: list[tuple[Key, Side, LogEntry]] = []
        blocked: list[Side] = []
        for side in sides:
            entry = side.head()
            if entry is not None:
                key = side.key_of(entry) if isinstance(side, WorkerSide) else side.head_key()
                heads.append((key, side, entry))
            elif side.more():
                blocked.append(side)
        if not heads:
            if not blocked:
                return None, used, []
            return _reason(blocked), used, blocked
        key, side, entry = heads[0]
        for candidate in heads[1:]:
            if later(key, candidate[0]):
                key, side, entry = candidate
        for other in blocked:
            horizon = other.horizon()
            if horizon is None or later(key, horizon):
                return _reason(blocked), used, blocked
        cost = entry_size(entry)
        if out and used + cost > MAX_LOG_BYTES:
            return LogLimit.MAX_BYTES, used, []
        out.append(entry)
        used += cost
        _advance(side)
        if taken is not None:
            taken()


def _advance(side: Side) -> None:
    """Move ``side`` past its head entry."""
    if isinstance(side, WorkerSide):
        side.pos += 1
    else:
        side.taken()


def _reason(blocked: Sequence[Side]) -> LogLimit:
    for side in blocked:
        if isinstance(side, WorkerSide):
            return side.reason()
    return LogLimit.SCAN_BUDGET

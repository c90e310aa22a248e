"""A filtered list of models, read from the model indexes (docs/redis-schema.md).

``ModelQuery`` names the filters (state, owners, session, base model) and the page
wanted; the store answers with every matching model counted (an exact ``total``) and
the page after the cursor, full unless it is the last. The order is the one cursor
codec's: newest first by the time the model entered ``state`` when a state is given,
else by its creation, ties by id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from openrl_inspect.state.paging import Position

# The most models one filtered list reads before answering (its smallest index): past
# it the caller is asked to narrow the filter rather than given a short answer.
MAX_CANDIDATES = 200_000


@dataclass(frozen=True, slots=True)
class ModelQuery:
    """Models matching every given filter; ``owners`` None is any owner, a tuple is
    "one of these" (a viewer's owners, or one asked for), empty matches nothing."""

    first: int
    after: Position | None = None
    state: str | None = None
    owners: tuple[str, ...] | None = None
    session: str | None = None
    base_model: str | None = None

    @property
    def indexed(self) -> bool:
        """Whether the answer needs the indexes the recorder added (owner, base)."""
        return self.owners is not None or self.base_model is not None


def after(pos: Position | None, items: list[Position]) -> list[Position]:
    """``items`` (newest first) strictly after ``pos``."""
    if pos is None:
        return items
    return [
        p for p in items if p.score < pos.score or (p.score == pos.score and p.member < pos.member)
    ]


@dataclass(frozen=True, slots=True)
class SessionQuery:
    """The sessions of ``owners`` (one of them) in the live or the closed index, newest
    first by their score there (created, or closed), ties by id; counted exactly."""

    first: int
    owners: tuple[str, ...]
    live: bool = True
    after: Position | None = None


@dataclass(frozen=True, slots=True)
class LiveAsk:
    """What attention reads of the live, failed, failing and pace indexes
    (``StateStore.live_models``). The thresholds are the inspector's; the indexes only
    order the models (docs/redis-schema.md, "Model indexes")."""

    quiet_before: float  # live models whose last progress is older than this
    failed_since: float  # failed models that failed at or after this
    cap: int  # the most of each
    failing_since: float = float("inf")  # models with an op failed at or after this
    slow_above: float = float("inf")  # models whose pace score is above this
    open_before: float = -float("inf")  # ops (any model's) still open, accepted before this


@dataclass(frozen=True, slots=True)
class LiveModels:
    live: int  # every live model
    quiet: list[Position]  # longest quiet first
    failed: list[Position]  # newest failure first
    # Models that keep moving but may need a person; their entries may outlive the
    # model's life (a late record), so the caller keeps only the live ones.
    failing: list[Position] = field(default_factory=list)  # newest failed op first
    slow: list[Position] = field(default_factory=list)  # slowest against its past first
    # ops, not models (``oi:opidx`` names the model): the newest accepted first
    open_ops: list[Position] = field(default_factory=list)

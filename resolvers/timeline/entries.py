"""A timeline's entries, and what each source answers for one model."""

from __future__ import annotations

from dataclasses import dataclass, field

from openrl_inspect.core.domain import TimelineKind, TimelineSource
from openrl_inspect.resolvers.diagnosis import Lookup, Unknown

# Entries per source and model before the merge (the merged answer is cut again).
PER_SOURCE = 200


@dataclass(frozen=True, slots=True)
class Entry:
    """One moment of a model's history. ``refs`` name the objects (and log entries'
    insertIds) it is about; ``next`` where to look."""

    at: float
    source: TimelineSource
    kind: TimelineKind
    statement: str
    model_id: str
    refs: tuple[str, ...] = ()
    next: Lookup = field(default_factory=Lookup)

    @property
    def key(self) -> str:
        """A stable tie-break among entries of one moment (for the order and cursors)."""
        first = self.refs[0] if self.refs else ""
        return f"{self.model_id}|{self.source}|{self.kind}|{first}|{self.statement}"


@dataclass(frozen=True, slots=True)
class Found:
    """A source's entries for one model; ``truncated`` when it had more."""

    entries: list[Entry]
    truncated: bool = False
    unavailable: tuple[tuple[TimelineSource, Unknown], ...] = ()


def cut(entries: list[Entry], since: float, until: float) -> Found:
    inside = [e for e in entries if since <= e.at <= until]
    inside.sort(key=lambda e: (-e.at, e.key))
    return Found(inside[:PER_SOURCE], len(inside) > PER_SOURCE)

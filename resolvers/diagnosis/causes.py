"""What the engine answers: a verdict and ranked causes, each with its evidence and where
to look next. Plain frozen records; the schema maps them."""

from __future__ import annotations

from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.core.domain import CauseKind, Verdict
from openrl_inspect.resolvers.diagnosis.evidence import Unknown

FactValue = str | int | float | None


@dataclass(frozen=True, slots=True)
class Fact:
    """One piece of evidence: a number, an id or a time (``unit`` ``unix_s``)."""

    name: str
    value: FactValue
    unit: str | None = None


@dataclass(frozen=True, slots=True)
class LogSearch:
    """Where to read logs next, around the cause: the caller renders it into a Cloud
    Logging filter (or a pod-log read) and a Logs Explorer link.

    ``severity`` is a floor (a ``LogSeverity`` name); ``start``/``end`` are POSIX
    seconds; ``include_events`` asks for the Kubernetes Events of those pods too.
    """

    pods: tuple[ObjectKey, ...]
    start: float
    end: float
    containers: tuple[str, ...] = ()
    severity: str | None = None
    text: str | None = None
    include_events: bool = False


@dataclass(frozen=True, slots=True)
class Lookup:
    """What to open next: logs, pods, nodes, and a GraphQL query to drill in."""

    logs: LogSearch | None = None
    pods: tuple[ObjectKey, ...] = ()
    nodes: tuple[str, ...] = ()
    graphql: str | None = None


@dataclass(frozen=True, slots=True, order=True)
class CauseLink:
    """Another cause of the same diagnosis, by its kind and the object it is about."""

    kind: CauseKind
    object: str | None


@dataclass(frozen=True, slots=True)
class Cause:
    """One reason, ``rank`` 1 the most blocking. ``statement`` is one line with its
    numbers; ``since`` when it began (POSIX seconds); ``refs`` the objects it is about
    (``Pod ns/name``, ``op op-12``, ``Node n-1``...). ``explained_by`` names the causes
    that explain it (its roots), ``explains`` those it explains (its effects)."""

    kind: CauseKind
    rank: int
    statement: str
    since: float | None
    facts: tuple[Fact, ...]
    refs: tuple[str, ...]
    next: Lookup
    explained_by: tuple[CauseLink, ...] = ()
    explains: tuple[CauseLink, ...] = ()


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """``causes`` ranked and bounded; ``left_off`` counts the ones cut; ``unknown`` the
    backends whose causes could not be judged."""

    verdict: Verdict
    causes: tuple[Cause, ...]
    left_off: int
    unknown: tuple[Unknown, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """A cause found by a rule, not ranked yet. ``stage`` orders causes of one tier
    (the wait stage for waiting causes), before ``since``."""

    kind: CauseKind
    statement: str
    since: float | None
    facts: tuple[Fact, ...] = ()
    refs: tuple[str, ...] = ()
    next: Lookup = Lookup()
    stage: int = 0
    # For linking roots to effects (``roots``): the object it is about (a ref, as in
    # ``refs``); the span it covers (an op's run, a worker's silence); the pods it
    # concerns; and its text as an effect (``headline``: "forward_backward at step 89
    # failed") or as a root (``clause``: "its sampler pod was OOMKilled 7 times").
    about: str | None = None
    window: tuple[float, float] | None = None
    pods: tuple[str, ...] = ()
    headline: str | None = None
    clause: str | None = None

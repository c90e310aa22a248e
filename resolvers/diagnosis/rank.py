"""Ranking: what blocks most comes first, then what has stood longest.

Tiers follow the blocking order: dead or failed (nothing runs until it is fixed),
lost (work is gone), stuck, stalled (the symptom: a stuck op explains it), waiting
for GPUs (by the stage on the way to them: a cause earlier on the path blocks the
later ones), slow. Within a tier the longer-standing cause comes first, a root
before its effect on a tie (a lost worker before the ops lost with it); the slow
causes share one window, so there the more specific comes first (a slow trainer
explains a pace regression, not the other way round).
"""

from __future__ import annotations

from collections.abc import Sequence

from openrl_inspect.core.domain import CauseKind
from openrl_inspect.resolvers.diagnosis import roots
from openrl_inspect.resolvers.diagnosis.causes import Cause, Finding

DEAD, LOST, STUCK, STALL, WAITING, SLOW = range(6)
TIERS: dict[CauseKind, int] = {
    CauseKind.EVICTED_BY_DEVICE_TAINT: DEAD,
    CauseKind.NODE_LOST: DEAD,
    CauseKind.MODEL_FAILED: DEAD,
    CauseKind.OOM_KILLED: DEAD,
    CauseKind.CRASH_LOOP: DEAD,
    CauseKind.IMAGE_PULL: DEAD,
    CauseKind.CONTAINER_CONFIG: DEAD,
    CauseKind.POD_FAILED: DEAD,
    CauseKind.OP_FAILED: DEAD,
    CauseKind.WORKER_LOST: LOST,
    CauseKind.OPS_LOST: LOST,
    CauseKind.GPU_UNHEALTHY: LOST,
    CauseKind.OP_STUCK: STUCK,
    CauseKind.STALLED: STALL,
    CauseKind.NOT_QUEUED: WAITING,
    CauseKind.WORKLOAD_INACTIVE: WAITING,
    CauseKind.PREEMPTED: WAITING,
    CauseKind.EVICTED: WAITING,
    CauseKind.INADMISSIBLE: WAITING,
    CauseKind.QUOTA: WAITING,
    CauseKind.ADMISSION_CHECK: WAITING,
    CauseKind.UNSCHEDULABLE: WAITING,
    CauseKind.CLAIM_UNALLOCATED: WAITING,
    CauseKind.WAITING_OTHER: WAITING,
    CauseKind.IDLE_RESERVATION: SLOW,
    CauseKind.TRAINER_SLOW: SLOW,
    CauseKind.SAMPLER_SLOW: SLOW,
    CauseKind.CLIENT_BOUND: SLOW,
    CauseKind.PACE_REGRESSION: SLOW,
}
MAX_CAUSES = 6
MAX_PER_KIND = 2  # eight pods crash-looping alike are one story, not eight causes


_ORDER = {kind: i for i, kind in enumerate(TIERS)}  # ties: the root before its effect


def _key(f: Finding) -> tuple[int, float, float, int, str]:
    tier = TIERS[f.kind]
    since = f.since if f.since is not None else float("inf")
    if tier == SLOW:
        return tier, _ORDER[f.kind], since, f.stage, f.statement
    return tier, f.stage, since, _ORDER[f.kind], f.statement


def rank(findings: Sequence[Finding], limit: int = MAX_CAUSES) -> tuple[tuple[Cause, ...], int]:
    """The causes, most blocking first (a root just before what it explains), at most
    ``limit`` and ``MAX_PER_KIND`` of a kind; and how many were left off."""
    ordered, links = roots.order(sorted(findings, key=_key))
    kept: list[int] = []
    per_kind: dict[CauseKind, int] = {}
    for i, f in enumerate(ordered):
        per_kind[f.kind] = per_kind.get(f.kind, 0) + 1
        if per_kind[f.kind] <= MAX_PER_KIND and len(kept) < limit:
            kept.append(i)
    chosen = set(kept)
    by: dict[int, list[int]] = {i: [r for r in links.get(i, []) if r in chosen] for i in kept}
    of: dict[int, list[int]] = {i: [e for e in kept if i in by[e]] for i in kept}
    causes = tuple(
        Cause(
            f.kind,
            n,
            f.statement,
            f.since,
            f.facts,
            f.refs,
            f.next,
            explained_by=tuple(roots.link_of(ordered[r]) for r in by[i]),
            explains=tuple(roots.link_of(ordered[e]) for e in of[i]),
        )
        for n, (i, f) in enumerate(((i, ordered[i]) for i in kept), start=1)
    )
    return causes, len(findings) - len(causes)

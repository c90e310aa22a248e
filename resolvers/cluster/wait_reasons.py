"""A likely cause of a model's wait (``WaitReason``) and how causes rank.

Every wait kind has a stage on the path a model takes to its GPUs and the component
that reports it; a cause at an earlier stage blocks everything after it, so it ranks
first. ``Causes`` collects what ``waiting.why_waiting`` finds and ranks it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from openrl_inspect.core.domain import WaitKind

# kind -> (stage, source). Lower stages block later ones, so they rank first.
KINDS: dict[WaitKind, tuple[int, str]] = {
    WaitKind.NO_WORKLOAD: (5, "kueue"),
    WaitKind.WORKLOAD_FINISHED: (8, "kueue"),
    WaitKind.WORKLOAD_INACTIVE: (10, "kueue"),
    WaitKind.EVICTED: (20, "kueue"),
    WaitKind.PREEMPTED: (21, "kueue"),
    WaitKind.INADMISSIBLE: (25, "kueue"),
    WaitKind.QUOTA: (30, "kueue"),
    WaitKind.PENDING: (32, "kueue"),
    WaitKind.REQUEUED: (35, "kueue"),
    WaitKind.ADMISSION_CHECK: (40, "kueue"),
    WaitKind.NO_PODS: (50, "kubernetes"),
    WaitKind.POD_GATED: (55, "scheduler"),
    WaitKind.UNSCHEDULABLE: (60, "scheduler"),
    WaitKind.CLAIM_UNALLOCATED: (65, "dra"),
    WaitKind.CONTAINER_ERROR: (68, "kubelet"),
    WaitKind.POD_FAILED: (69, "kubelet"),
    WaitKind.CONTAINER_WAITING: (70, "kubelet"),
    WaitKind.NO_WORKLOAD_FOR_PODS: (80, "kueue"),
    WaitKind.NOTHING_FOUND: (99, "inspector"),
}
# A requeue is history once the Workload is admitted again.
REQUEUED_HISTORY_STAGE = 90


@dataclass(frozen=True, slots=True)
class WaitReason:
    """One likely cause. ``rank`` is 1 for the most likely; ``object`` names the
    Kubernetes object it comes from (``Workload ns/name``, ``Pod ns/name``...)."""

    kind: WaitKind
    source: str
    reason: str | None
    message: str
    object: str | None
    since: float | None
    waited_seconds: float | None
    rank: int = 0
    resource: str | None = None
    flavor: str | None = None
    shortfall: int | None = None
    queue_position: int | None = None
    queue_length: int | None = None


@dataclass(frozen=True, slots=True)
class _Cause:
    stage: int
    reason: WaitReason


class Causes:
    """The causes found so far, ranked on demand: by stage, then the longest-standing."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.causes: list[_Cause] = []

    def add(
        self,
        kind: WaitKind,
        message: str,
        *,
        obj: str | None,
        reason: str | None = None,
        since: float | None = None,
        stage: int | None = None,
        quota: tuple[str | None, str | None, int | None] = (None, None, None),
        position: tuple[int, int] | None = None,
    ) -> None:
        default_stage, source = KINDS[kind]
        waited = None if since is None else max(0.0, self.now - since)
        record = WaitReason(
            kind=kind,
            source=source,
            reason=reason,
            message=message,
            object=obj,
            since=since,
            waited_seconds=waited,
            resource=quota[0],
            flavor=quota[1],
            shortfall=quota[2],
            queue_position=position[0] if position else None,
            queue_length=position[1] if position else None,
        )
        self.causes.append(_Cause(default_stage if stage is None else stage, record))

    def ranked(self) -> list[WaitReason]:
        ordered = sorted(
            self.causes,
            key=lambda c: (
                c.stage,
                c.reason.since if c.reason.since is not None else float("inf"),
                c.reason.object or "",
                c.reason.kind,
            ),
        )
        return [replace(c.reason, rank=i) for i, c in enumerate(ordered, start=1)]

"""The diagnosis in GraphQL: ranked causes, their evidence, and where to look next."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import strawberry
from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.adapters.logs import LogQuery
from openrl_inspect.core import domain
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.resolvers.diagnosis import Cause as CauseRecord
from openrl_inspect.resolvers.diagnosis import CauseLink as CauseLinkRecord
from openrl_inspect.resolvers.diagnosis import Fact as FactRecord
from openrl_inspect.resolvers.diagnosis import LogSearch, Lookup, Unknown
from openrl_inspect.schema.common import as_json, domain_enum, ts
from strawberry.scalars import JSON

CauseKind = domain.CauseKind
domain_enum(
    CauseKind,
    name="CauseKind",
    description="What a cause is: why a model is slow, stuck, waiting or dead "
    "(the README's table of causes says what each means and carries).",
    values={
        CauseKind.NOT_QUEUED: "No Kueue Workload for the model's job, or only finished "
        "ones (Kubernetes).",
        CauseKind.WORKLOAD_INACTIVE: "Its Kueue Workload is deactivated (`spec.active` false).",
        CauseKind.QUOTA: "Short of quota in its ClusterQueue (the Workload's QuotaReserved "
        "condition): resource, flavor, shortfall, queue position.",
        CauseKind.INADMISSIBLE: "Kueue cannot admit its Workload (no such queue, a stopped "
        "ClusterQueue...).",
        CauseKind.ADMISSION_CHECK: "Quota is reserved; the Workload's admission checks are "
        "pending.",
        CauseKind.PREEMPTED: "Kueue preempted its Workload (Preempted condition) and took "
        "its GPUs back.",
        CauseKind.EVICTED: "Its Workload was evicted (Evicted condition).",
        CauseKind.EVICTED_BY_DEVICE_TAINT: "A pod of it was evicted by a NoExecute device "
        "taint on a GPU it held (a DeviceTaintRule or the driver's taint, with the Xid), "
        "read from the Events even once the pod is gone.",
        CauseKind.NODE_LOST: "The node it ran on went away or stopped reporting (NotReady, "
        "deleted) while it held GPUs there.",
        CauseKind.UNSCHEDULABLE: "The scheduler cannot place a pod (PodScheduled false, "
        "Unschedulable).",
        CauseKind.CLAIM_UNALLOCATED: "A DRA ResourceClaim of its pods is not allocated.",
        CauseKind.WAITING_OTHER: "Pending, gated or starting: the top wait reason's message.",
        CauseKind.OOM_KILLED: "A container was killed for memory (OOMKilled, exit 137), "
        "from the pod's container statuses and the node's events.",
        CauseKind.CRASH_LOOP: "A container keeps exiting (CrashLoopBackOff, or restarts past a "
        "threshold).",
        CauseKind.IMAGE_PULL: "A container's image cannot be pulled (ErrImagePull, "
        "ImagePullBackOff).",
        CauseKind.CONTAINER_CONFIG: "A container cannot be created or started "
        "(CreateContainerConfigError, CreateContainerError, RunContainerError).",
        CauseKind.POD_FAILED: "A pod is in phase Failed.",
        CauseKind.GPU_UNHEALTHY: "A GPU under the model carries a DRA device taint "
        "(ResourceSlice or DeviceTaintRule).",
        CauseKind.MODEL_FAILED: "OpenRL marked the model failed (Redis).",
        CauseKind.WORKER_LOST: "A worker stopped heartbeating and none replaced it (Redis).",
        CauseKind.OPS_LOST: "Open ops on a silent worker: nobody will finish them (Redis).",
        CauseKind.OP_STUCK: "Ops running past the stuck threshold on a live worker (Redis).",
        CauseKind.OP_FAILED: "Ops failed in the recent steps (Redis).",
        CauseKind.STALLED: "No step for far longer than the model's steps take (Redis).",
        CauseKind.IDLE_RESERVATION: "GPUs held while their DCGM duty stays low and no op "
        "runs (Redis placements, Prometheus).",
        CauseKind.SAMPLER_SLOW: "Sampler tokens/s below its own baseline (Redis sampler batches).",
        CauseKind.TRAINER_SLOW: "`forward_backward` or `optim_step` slower than the model's "
        "own baseline (Redis ops).",
        CauseKind.CLIENT_BOUND: "Workers idle between ops, waiting on the client (Redis ops).",
        CauseKind.PACE_REGRESSION: "Recent steps slower than the model's earlier steps "
        "(Redis steps).",
    },
)

Describe = Callable[[LogQuery], tuple[str, str | None]]


def facts_json(facts: tuple[FactRecord, ...]) -> JSON:
    """The facts as one object, name -> value: compact for agents. Times (unit
    ``unix_s``) become ISO 8601; other units are in the names (``_s`` seconds) or
    ratios (0..1)."""
    out: dict[str, Any] = {}
    for f in facts:
        value: Any = f.value
        if f.unit == "unix_s" and isinstance(value, int | float):
            moment = ts(float(value))
            value = None if moment is None else moment.isoformat()
        out[f.name] = value
    return as_json(out)


@strawberry.type(description="A pod, by namespace and name.")
class PodRef:
    namespace: str = strawberry.field(description="The pod's Kubernetes namespace.")
    name: str = strawberry.field(description="The pod's name.")

    @classmethod
    def of(cls, key: ObjectKey) -> PodRef:
        return cls(namespace=key.namespace, name=key.name)


@strawberry.type(
    description="Where to read logs next: the window around the cause, over the cause's pods "
    "(`next.pods`)."
)
class LogHint:
    start: datetime = strawberry.field(description="The window's start (UTC): pass as `since`.")
    end: datetime = strawberry.field(description="The window's end (UTC): pass as `until`.")
    containers: list[str] = strawberry.field(
        description="The containers whose lines matter; empty: all of them."
    )
    severity: str | None = strawberry.field(description="A severity floor, when one helps.")
    include_events: bool = strawberry.field(
        description="The pods' Kubernetes Events belong with the lines (`logs(events: true)`)."
    )
    filter: str | None = strawberry.field(
        description="The Cloud Logging filter for it; null when Cloud Logging is not configured."
    )
    explorer_url: str | None = strawberry.field(
        description="The Logs Explorer link for that filter and window (needs a project)."
    )


def log_hint(model_id: str, s: LogSearch, describe: Describe | None) -> LogHint:
    start, end = ts(s.start), ts(s.end)
    assert start is not None and end is not None
    filter_ = link = None
    if describe is not None:
        query = LogQuery(
            start=start,
            end=max(end, start + timedelta(seconds=1)),
            model_id=model_id,
            model_pods=tuple(p.name for p in s.pods),
            severity_floor=s.severity,
            text=s.text,
            event_objects=tuple(("Pod", p.namespace, p.name) for p in s.pods)
            if s.include_events
            else (),
        )
        # A search the backend would refuse: the window and pods still say where to look.
        with contextlib.suppress(InvalidInput):
            filter_, link = describe(query)
    return LogHint(
        start=start,
        end=end,
        containers=list(s.containers),
        severity=s.severity,
        include_events=s.include_events,
        filter=filter_,
        explorer_url=link,
    )


@strawberry.type(description="What to open next to confirm a cause.")
class NextLook:
    logs: LogHint | None = strawberry.field(
        description="Where to read logs next; null when logs would not help."
    )
    pods: list[PodRef] = strawberry.field(description="The pods to look at (Kubernetes).")
    nodes: list[str] = strawberry.field(description="The nodes to look at (Kubernetes).")
    graphql: str | None = strawberry.field(description="A query of this API that drills in.")

    @classmethod
    def from_record(cls, model_id: str, n: Lookup, describe: Describe | None) -> NextLook:
        return cls(
            logs=None if n.logs is None else log_hint(model_id, n.logs, describe),
            pods=[PodRef.of(p) for p in n.pods],
            nodes=list(n.nodes),
            graphql=n.graphql,
        )


@strawberry.type(description="Another cause of the same diagnosis, by kind and object.")
class CauseRef:
    kind: CauseKind = strawberry.field(description="The other cause's kind.")
    object: str | None = strawberry.field(
        description='The object it is about ("Pod ns/name", "op op-12"), as in its refs.'
    )

    @classmethod
    def of(cls, link: CauseLinkRecord) -> CauseRef:
        return cls(kind=link.kind, object=link.object)


@strawberry.type(description="One reason a model is slow, stuck, waiting or dead.")
class Cause:
    kind: CauseKind = strawberry.field(description="What the cause is.")
    rank: int = strawberry.field(description="1 is the most blocking.")
    statement: str = strawberry.field(description="One line, with its numbers.")
    since: datetime | None = strawberry.field(
        description="Since when it holds (UTC); null when unknown."
    )
    facts: JSON = strawberry.field(
        description="Its evidence, name -> value: ids, numbers, times (ISO 8601); names "
        "ending in `_s` are seconds, `ratio`/`share`/`duty` 0..1."
    )
    refs: list[str] = strawberry.field(description='The objects it is about ("Pod ns/name").')
    next: NextLook = strawberry.field(description="What to open next to confirm it.")
    explained_by: list[CauseRef] = strawberry.field(
        description="The causes that explain this one (its roots: the OOM kill behind a "
        "failed op, the preemption behind a stall); a root is ranked just before it."
    )
    explains: list[CauseRef] = strawberry.field(
        description="The causes this one explains (its effects); its statement says the chain."
    )

    @classmethod
    def from_record(cls, model_id: str, c: CauseRecord, describe: Describe | None) -> Cause:
        return cls(
            kind=c.kind,
            rank=c.rank,
            statement=c.statement,
            since=ts(c.since),
            facts=facts_json(c.facts),
            refs=list(c.refs),
            next=NextLook.from_record(model_id, c.next, describe),
            explained_by=[CauseRef.of(x) for x in c.explained_by],
            explains=[CauseRef.of(x) for x in c.explains],
        )


@strawberry.type(description="A backend whose causes could not be judged, and why.")
class UnknownBackend:
    backend: str = strawberry.field(
        description="The backend: redis, kubernetes, prometheus or cloud_logging."
    )
    code: str = strawberry.field(
        description="The error code a field of that backend would give "
        "(BACKEND_NOT_CONFIGURED, BACKEND_UNAVAILABLE...)."
    )
    message: str = strawberry.field(description="Why, in words (at most 160 characters).")

    @classmethod
    def from_record(cls, u: Unknown) -> UnknownBackend:
        return cls(backend=u.backend, code=u.code, message=u.message)

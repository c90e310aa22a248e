"""Pieces shared by the cluster types: live connections, conditions, taints, status."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Generic, TypeVar, cast

import strawberry
from openrl_inspect.adapters.kubernetes import Condition, KindStatus, SourceStatus, Taint
from openrl_inspect.resolvers.cluster.reads import LivePage
from openrl_inspect.schema.common import ts
from openrl_inspect.schema.connection import Edge, PageInfo

T = TypeVar("T")
R = TypeVar("R")

LIVE = "kubernetes"
SOURCE_DESCRIPTION = (
    "Where this came from: `kubernetes` (live state, read from the inspector's watch "
    "cache of the API server; gone once the object is deleted)."
)
DEGRADED_DESCRIPTION = (
    "True when this kind's watch cache was not in sync when answering (not listed yet, "
    "or its watch failing): the object may be stale."
)


@strawberry.type(
    description="A page of live Kubernetes objects from the watch cache. `truncated` is "
    "true when more exist past it; `degraded` when the cache was not in sync for them."
)
class LiveConnection(Generic[T]):
    edges: list[Edge[T]] = strawberry.field(description="The page's items with cursors.")
    page_info: PageInfo = strawberry.field(description="Where the page sits; cursors to go on.")
    total_count: int | None = strawberry.field(
        description="Items in the whole list, known only when this page holds all of "
        "them (no `after`, not truncated): the cache answers pages, not counts."
    )
    truncated: bool = strawberry.field(
        description="True when this page does not hold every item after the cursor."
    )
    degraded: bool = strawberry.field(
        description="True when the answer came from a cache that was not in sync (a "
        "bounded direct read, or a cache whose watch is failing): it may be stale or "
        "incomplete."
    )

    @strawberry.field(description="The nodes of `edges`, without cursors.")
    def nodes(self) -> list[T]:
        return [cast(T, edge._node) for edge in self.edges]

    @classmethod
    def of(cls, page: LivePage[R], make: Callable[[R], T]) -> LiveConnection[T]:
        edges: list[Edge[T]] = [Edge(_cursor=cursor, _node=make(rec)) for cursor, rec in page.items]
        return cls(
            edges=edges,
            page_info=PageInfo(
                has_next_page=page.truncated,
                has_previous_page=page.has_previous,
                start_cursor=str(edges[0]._cursor) if edges else None,
                end_cursor=str(edges[-1]._cursor) if edges else None,
            ),
            total_count=page.total,
            truncated=page.truncated,
            degraded=page.degraded,
        )


@strawberry.type(description="A Kubernetes status condition.")
class KubeCondition:
    type: str = strawberry.field(description="The condition's type (Ready, PodScheduled...).")
    status: str = strawberry.field(description="True, False or Unknown.")
    reason: str | None = strawberry.field(description="Its machine-readable reason.")
    message: str | None = strawberry.field(description="Its message, verbatim.")
    last_transition_at: datetime | None = strawberry.field(
        description="`lastTransitionTime` (UTC): when `status` last changed."
    )

    @classmethod
    def from_record(cls, rec: Condition) -> KubeCondition:
        return cls(
            type=rec.type,
            status=rec.status,
            reason=rec.reason,
            message=rec.message,
            last_transition_at=ts(rec.last_transition),
        )


def conditions(recs: tuple[Condition, ...]) -> list[KubeCondition]:
    return [KubeCondition.from_record(c) for c in recs]


@strawberry.type(name="NodeTaint", description="A taint of a node (`spec.taints`).")
class TaintType:
    key: str = strawberry.field(description="The taint's key.")
    value: str | None = strawberry.field(description="The taint's value, if any.")
    effect: str = strawberry.field(description="NoSchedule, PreferNoSchedule or NoExecute.")

    @classmethod
    def from_record(cls, rec: Taint) -> TaintType:
        return cls(key=rec.key, value=rec.value, effect=rec.effect)


@strawberry.type(description="One kind's watch cache.")
class KubernetesKindStatus:
    kind: str = strawberry.field(description="The resource (pods, nodes, workloads...).")
    group: str = strawberry.field(
        description="Its API group (empty for the core API: pods, nodes)."
    )
    served: bool = strawberry.field(description="False when the cluster does not serve it.")
    version: str | None = strawberry.field(
        description="The API version it is read at: the newest the cluster serves among "
        "those this inspector understands (discovery, checked again on every relist); "
        "null while unknown, not served or unsupported."
    )
    unsupported: bool = strawberry.field(
        description="The cluster serves it only at versions this inspector does not "
        "read (`versionsSeen`): it holds nothing and the fields that need it fail with "
        "API_VERSION_UNSUPPORTED."
    )
    versions_seen: list[str] = strawberry.field(
        description="When unsupported: the versions the cluster serves it at."
    )
    versions_understood: list[str] = strawberry.field(
        description="The versions this inspector reads it at, newest first."
    )
    synced: bool = strawberry.field(description="Listed at least once since the start.")
    degraded: bool = strawberry.field(description="Not synced yet, or its watch is failing.")
    objects: int = strawberry.field(description="Objects it holds now.")
    list_age_seconds: float | None = strawberry.field(description="Since the last full LIST.")
    error_age_seconds: float | None = strawberry.field(description="How long it has failed.")
    last_error: str | None = strawberry.field(
        description="Its last LIST or watch error; null when none."
    )
    relists: int = strawberry.field(description="Full LISTs since the start.")
    watch_restarts: int = strawberry.field(description="Watches restarted since the start.")
    evicted: int = strawberry.field(
        description="Objects a bounded cache dropped to stay within its bounds (events: "
        "OPENRL_INSPECT_KUBERNETES_MAX_EVENTS and _EVENT_MAX_AGE_S), oldest first."
    )

    @classmethod
    def from_record(cls, rec: KindStatus) -> KubernetesKindStatus:
        return cls(
            kind=rec.kind,
            group=rec.group,
            served=rec.served,
            version=rec.version,
            unsupported=rec.unsupported,
            versions_seen=list(rec.unsupported_versions),
            versions_understood=list(rec.understood),
            synced=rec.synced,
            degraded=rec.degraded,
            objects=rec.objects,
            list_age_seconds=rec.list_age_s,
            error_age_seconds=rec.error_age_s,
            last_error=rec.last_error,
            relists=rec.relists,
            watch_restarts=rec.watch_restarts,
            evicted=rec.evicted,
        )


@strawberry.type(description="The inspector's watch cache of the Kubernetes API server.")
class KubernetesStatus:
    ready: bool = strawberry.field(description="Every served kind has synced.")
    degraded: bool = strawberry.field(description="Some kind is not synced or failing.")
    kinds: list[KubernetesKindStatus] = strawberry.field(description="Each kind it watches.")

    @classmethod
    def from_record(cls, rec: SourceStatus) -> KubernetesStatus:
        return cls(
            ready=rec.ready,
            degraded=rec.degraded,
            kinds=[KubernetesKindStatus.from_record(k) for k in rec.kinds],
        )

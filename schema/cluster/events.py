"""Kubernetes Events: their type, and the mixins adding ``events`` to Pod, Workload, Node
and Model.

Events say what the controllers did or could not do (FailedScheduling, Preempted,
Evicted, BackOff, Kueue's Pending...), which conditions only summarise. They come from
the inspector's bounded events cache, so only recent ones are seen (the API server keeps
them an hour by default); for older ones ask a model's ``logs`` with ``events: true``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, cast

import strawberry
from openrl_inspect.adapters.kubernetes import EventRecord, ObjectRef
from openrl_inspect.resolvers.cluster import events as cluster_events
from openrl_inspect.schema.common import Info, ts

if TYPE_CHECKING:
    from openrl_inspect.schema.cluster.node import Node
    from openrl_inspect.schema.cluster.pod import Pod
    from openrl_inspect.schema.cluster.workload import Workload
    from openrl_inspect.schema.state.model import Model

First = Annotated[
    int | None,
    strawberry.argument(description="At most this many, newest first (default 20, at most 100)."),
]
LIVE_EVENTS = (
    "Live, from Kubernetes: the Events regarding it that the API server still holds (an "
    "hour by default) and the inspector's bounded events cache kept, newest first by when "
    "last seen."
)


@strawberry.type(description="The object an Event is about (or related to).")
class EventObject:
    kind: str = strawberry.field(description="Pod, Workload, Node...")
    namespace: str | None = strawberry.field(description="Null for cluster-scoped kinds.")
    name: str = strawberry.field(description="The object's name.")

    @classmethod
    def from_record(cls, rec: ObjectRef) -> EventObject:
        return cls(kind=rec.kind, namespace=rec.namespace or None, name=rec.name)


@strawberry.type(description="A Kubernetes Event (events.k8s.io/v1), live from the cache.")
class Event:
    namespace: str = strawberry.field(description="The Event's own namespace.")
    name: str = strawberry.field(description="The Event's own name.")
    type: str | None = strawberry.field(description="Normal or Warning.")
    reason: str | None = strawberry.field(
        description="Why: FailedScheduling, Preempted, Evicted, BackOff, Pending..."
    )
    note: str | None = strawberry.field(description="The message (capped at 1024 chars).")
    action: str | None = strawberry.field(description="What was done or tried (new API).")
    regarding: EventObject = strawberry.field(description="The object it is about.")
    related: EventObject | None = strawberry.field(description="A second object involved.")
    reporting_controller: str | None = strawberry.field(
        description="Who reported it: default-scheduler, kubelet, kueue-admission..."
    )
    reporting_instance: str | None = strawberry.field(description="Which instance of it.")
    count: int = strawberry.field(description="Times seen (a series, or the old count).")
    first_at: datetime | None = strawberry.field(description="First seen.")
    last_at: datetime | None = strawberry.field(description="Last seen.")

    @classmethod
    def from_record(cls, rec: EventRecord) -> Event:
        return cls(
            namespace=rec.namespace,
            name=rec.name,
            type=rec.type,
            reason=rec.reason,
            note=rec.note,
            action=rec.action,
            regarding=EventObject.from_record(rec.regarding),
            related=EventObject.from_record(rec.related) if rec.related else None,
            reporting_controller=rec.reporting_controller,
            reporting_instance=rec.reporting_instance,
            count=rec.count,
            first_at=ts(rec.first_at),
            last_at=ts(rec.last_at),
        )


@strawberry.type(
    description="Events newest first, bounded: `truncated` when more exist than listed."
)
class EventList:
    nodes: list[Event] = strawberry.field(description="The events, newest first by last seen.")
    truncated: bool = strawberry.field(description="More events exist than listed.")
    degraded: bool = strawberry.field(
        description="The events cache was not in sync: a bounded direct read, or a cache "
        "whose watch is failing; events may be missing or stale."
    )

    @classmethod
    def of(cls, page: cluster_events.EventPage) -> EventList:
        return cls(
            nodes=[Event.from_record(e) for e in page.items],
            truncated=page.truncated,
            degraded=page.degraded,
        )


@strawberry.type
class PodEventFields:
    """``Pod.events``."""

    @strawberry.field(description=LIVE_EVENTS)
    async def events(self, info: Info, first: First = None) -> EventList | None:
        pod = cast("Pod", self)
        return EventList.of(
            await cluster_events.object_events(
                info.context, cluster_events.POD, pod.namespace, pod.name, first
            )
        )


@strawberry.type
class WorkloadEventFields:
    """``Workload.events``."""

    @strawberry.field(description=LIVE_EVENTS + " Kueue's own (Pending, QuotaReserved...).")
    async def events(self, info: Info, first: First = None) -> EventList | None:
        wl = cast("Workload", self)
        return EventList.of(
            await cluster_events.object_events(
                info.context, cluster_events.WORKLOAD, wl.namespace, wl.name, first
            )
        )


@strawberry.type
class NodeEventFields:
    """``Node.events``."""

    @strawberry.field(
        description=LIVE_EVENTS + " A node's events are kept in namespace `default`: "
        "seen only when OPENRL_INSPECT_KUBERNETES_NAMESPACES is empty or names it."
    )
    async def events(self, info: Info, first: First = None) -> EventList | None:
        node = cast("Node", self)
        return EventList.of(
            await cluster_events.object_events(
                info.context, cluster_events.NODE, "", node.name, first
            )
        )


@strawberry.type
class ModelEventFields:
    """``Model.events``."""

    @strawberry.field(
        description=LIVE_EVENTS + " Those of its pods and Kueue Workloads, merged; a pod "
        "already deleted is not among them (its events stay in Cloud Logging: see `logs`)."
    )
    async def events(self, info: Info, first: First = None) -> EventList | None:
        mid = cast("Model", self).id
        return EventList.of(await cluster_events.model_events(info.context, mid, first))

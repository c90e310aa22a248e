"""The timeline in GraphQL: ``Model.timeline`` and ``Session.timeline``, newest first."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, cast

import strawberry
from openrl_inspect.core import domain
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.timeline import build
from openrl_inspect.resolvers.timeline.sources import Entry
from openrl_inspect.schema.common import Info, domain_enum, ts
from openrl_inspect.schema.connection import After, PageInfo
from openrl_inspect.schema.summary.diagnosis import Describe, NextLook

if TYPE_CHECKING:
    from openrl_inspect.schema.state.model import Model
    from openrl_inspect.schema.state.session import Session

TimelineSource = domain.TimelineSource
domain_enum(
    TimelineSource,
    name="TimelineSource",
    description="Where a timeline entry comes from: OpenRL's record (Redis), Kubernetes "
    "(the watch cache, then Cloud Logging's events log), Prometheus (DCGM), Cloud Logging.",
    values={
        TimelineSource.REDIS: "OpenRL's own record: states, steps, ops, workers, placements.",
        TimelineSource.KUBERNETES: "Workload conditions and Events: the watch cache, then "
        "Cloud Logging's events log past the API server's one-hour Event TTL.",
        TimelineSource.PROMETHEUS: "DCGM GPU duty: idle spans on the model's GPUs.",
        TimelineSource.CLOUD_LOGGING: "Worker logs: the first ERROR or CRITICAL line of each "
        "distinct message.",
    },
)
TimelineKind = domain.TimelineKind
domain_enum(
    TimelineKind,
    name="TimelineKind",
    description="What a timeline entry records.",
    values={
        TimelineKind.STATE: "The model entered a state (Redis).",
        TimelineKind.FIRST_STEP: "Its first step finished (Redis).",
        TimelineKind.LAST_STEP: "Its newest finished step (Redis).",
        TimelineKind.OP_FAILED: "An op failed, with its error (Redis).",
        TimelineKind.WORKER_LOST: "A worker's last heartbeat, with none since (Redis).",
        TimelineKind.WORKER_BACK: "A worker started or came back (Redis).",
        TimelineKind.PLACEMENT_ADMITTED: "Kueue admitted a placement: node and GPUs (Redis, "
        "as the placement tracker recorded it).",
        TimelineKind.PLACEMENT_RELEASED: "A placement was released (Redis).",
        TimelineKind.WORKLOAD_CONDITION: "A Workload condition: QuotaReserved, Admitted, "
        "Evicted, Preempted, Requeued, Finished (Kubernetes).",
        TimelineKind.POD_EVENT: "An Event about one of its pods: scheduled, started, killed, "
        "OOMKilled, BackOff, evicted (Kubernetes).",
        TimelineKind.WORKLOAD_EVENT: "An Event about one of its Workloads (Kubernetes).",
        TimelineKind.NODE_EVENT: "An Event about a node it ran on (Kubernetes).",
        TimelineKind.DEVICE_TAINT: "A GPU it held was tainted: DRA device taint or "
        "DeviceTaintRule (Kubernetes).",
        TimelineKind.GPU_IDLE: "Its GPUs' DCGM duty stayed under the idle threshold for "
        "minutes (Prometheus).",
        TimelineKind.LOG_ERROR: "The first ERROR or CRITICAL line of a distinct message "
        "(Cloud Logging).",
    },
)
Since = Annotated[
    datetime | None,
    strawberry.argument(description="From this time (UTC); default: the model's creation."),
]
Until = Annotated[
    datetime | None,
    strawberry.argument(description="Up to this time (UTC); default: now."),
]
Sources = Annotated[
    list[TimelineSource] | None,
    strawberry.argument(description="Only entries from these sources; default: all."),
]
FirstEntries = Annotated[
    int | None,
    strawberry.argument(description="Entries per page, 1 to 500; default 50."),
]


@strawberry.type(description="One moment of a model's history.")
class TimelineEntry:
    at: datetime = strawberry.field(description="When it happened (UTC).")
    source: TimelineSource = strawberry.field(description="The backend it was read from.")
    kind: TimelineKind = strawberry.field(description="What it records.")
    model_id: strawberry.ID = strawberry.field(description="The model it is about.")
    statement: str = strawberry.field(description="One line, with its numbers.")
    refs: list[str] = strawberry.field(
        description='The objects it is about ("Pod ns/name", "op op-12") and, for an entry '
        'read from Cloud Logging, its insertId ("insertId abc").'
    )
    next: NextLook = strawberry.field(
        description="Where to look: logs around it (filter, Logs Explorer link), the pods and "
        "nodes, and a query of this API that drills in."
    )

    @classmethod
    def from_record(cls, e: Entry, describe: Describe | None) -> TimelineEntry:
        at = ts(e.at)
        assert at is not None
        return cls(
            at=at,
            source=e.source,
            kind=e.kind,
            model_id=strawberry.ID(e.model_id),
            statement=e.statement,
            refs=list(e.refs),
            next=NextLook.from_record(e.model_id, e.next, describe),
        )


@strawberry.type(description="A source the timeline could not read, and why.")
class UnavailableSource:
    source: TimelineSource = strawberry.field(description="The source not read.")
    code: str = strawberry.field(
        description="Its error code (BACKEND_NOT_CONFIGURED, BACKEND_UNAVAILABLE...)."
    )
    message: str = strawberry.field(description="Why, in words.")


@strawberry.type(
    description="A timeline page, newest first: at most `first` entries (default 50, at most "
    "500). `truncated` when more exist (past the page, or a source had more than it gave); "
    "`unavailable` names the sources that could not be read."
)
class TimelineConnection:
    entries: list[TimelineEntry] = strawberry.field(description="This page, newest first.")
    page_info: PageInfo = strawberry.field(
        description="`endCursor` as `after` gives the next page (it keeps this page's `until`)."
    )
    truncated: bool = strawberry.field(
        description="More entries exist than this page holds (past the page, or a source "
        "had more than it gave)."
    )
    truncated_sources: list[TimelineSource] = strawberry.field(
        description="The sources that had more entries than they gave."
    )
    unavailable: list[UnavailableSource] = strawberry.field(
        description="The sources that could not be read: their entries are unknown, not absent."
    )
    since: datetime = strawberry.field(description="The window's start (UTC).")
    until: datetime = strawberry.field(description="The window's end (UTC).")

    @classmethod
    def of(cls, t: build.Timeline, describe: Describe | None) -> TimelineConnection:
        since, until = ts(t.since), ts(t.until)
        assert since is not None and until is not None
        return cls(
            entries=[TimelineEntry.from_record(e, describe) for e in t.entries],
            page_info=PageInfo(
                has_next_page=t.has_next,
                has_previous_page=False,
                start_cursor=None,
                end_cursor=t.end_cursor,
            ),
            truncated=t.truncated,
            truncated_sources=list(t.truncated_sources),
            unavailable=[
                UnavailableSource(source=s, code=u.code, message=u.message)
                for s, u in t.unavailable
            ],
            since=since,
            until=until,
        )


TIMELINE = (
    "What happened to it, newest first, from every backend: states, steps, failed ops, "
    "workers, placements (Redis); Workload conditions and the Events of its pods, Workloads, "
    "nodes and GPUs, also those long deleted (Kubernetes, then Cloud Logging's events log); "
    "idle spans on its GPUs (Prometheus); the first ERROR or CRITICAL line of each distinct "
    "message (Cloud Logging). `since` defaults to its creation, `until` to now."
)


@strawberry.type
class ModelTimelineFields:
    """``Model.timeline``."""

    @strawberry.field(description=TIMELINE)
    async def timeline(
        self,
        info: Info,
        since: Since = None,
        until: Until = None,
        sources: Sources = None,
        first: FirstEntries = None,
        after: After = None,
    ) -> TimelineConnection:
        ctx = info.context
        mid = cast("Model", self).id
        rec = await state_reads.model(ctx, mid)
        found = await build.model_timeline(ctx, rec, since, until, sources, first, after)
        return TimelineConnection.of(found, ctx.logs.describe)


@strawberry.type
class SessionTimelineFields:
    """``Session.timeline``."""

    @strawberry.field(
        description="Its models' timelines merged, newest first (its newest "
        f"{build.SESSION_MODELS} models; more: `truncated`). " + TIMELINE.split(". ", 1)[1]
    )
    async def timeline(
        self,
        info: Info,
        since: Since = None,
        until: Until = None,
        sources: Sources = None,
        first: FirstEntries = None,
        after: After = None,
    ) -> TimelineConnection:
        ctx = info.context
        session = cast("Session", self)
        created = session.created_at.timestamp() if session.created_at else None
        found = await build.session_timeline(
            ctx, session.id, created, since, until, sources, first, after
        )
        return TimelineConnection.of(found, ctx.logs.describe)

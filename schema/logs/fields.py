"""The ``logs`` fields of Model, Session and Pod, and their arguments (the types they
answer with are in ``types``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, cast

import strawberry
from openrl_inspect.resolvers.logs import reads as logs_reads
from openrl_inspect.schema.common import Info
from openrl_inspect.schema.logs.types import LogConnection, LogOrder, LogSeverity

if TYPE_CHECKING:
    from openrl_inspect.schema.cluster.pod import Pod
    from openrl_inspect.schema.state.model import Model
    from openrl_inspect.schema.state.session import Session


# --------------------------------------------------------------------------- arguments

Since = Annotated[
    datetime | None,
    strawberry.argument(
        description="Window start (with a zone). Default: 10 min before a failed model's "
        "failure, an hour before an end, else an hour ago."
    ),
]
Until = Annotated[
    datetime | None,
    strawberry.argument(description="Window end (default: 2 min after a failure/end, or now)."),
]
Severity = Annotated[
    LogSeverity | None, strawberry.argument(description="Only lines at least this severe.")
]
Text = Annotated[
    str | None,
    strawberry.argument(description="Only lines whose message contains this (any case)."),
]
Role = Annotated[
    str | None, strawberry.argument(description="Only this worker role (no client lines).")
]
PodName = Annotated[str | None, strawberry.argument(description="Only this pod (no client lines).")]
First = Annotated[
    int | None, strawberry.argument(description="Lines per page (default and maximum 100).")
]
Order = Annotated[LogOrder, strawberry.argument(description="Oldest or newest line first.")]
After = Annotated[
    str | None,
    strawberry.argument(
        description="Resume after this cursor (`pageInfo.endCursor` or an edge's `cursor` "
        "of the same logs with the same filters); default: from the window's start (or "
        "end, newest first)."
    ),
]
WorkerLogs = Annotated[bool, strawberry.argument(description="Include the workers' logs.")]
ClientLogs = Annotated[bool, strawberry.argument(description="Include the client's lines.")]
Events = Annotated[
    bool,
    strawberry.argument(
        description="Include the Kubernetes Events of its pods and Workloads (live ones, "
        "and those its placements recorded) in the same order and pages: from Cloud "
        "Logging's `events` log (GKE exports them there), else from the Kubernetes events "
        "cache (recent ones only). Needs the worker logs."
    ),
]


def _args(
    since: datetime | None,
    until: datetime | None,
    severity: LogSeverity | None,
    text: str | None,
    order: LogOrder,
    first: int | None,
    after: str | None,
    role: str | None = None,
    pod: str | None = None,
    worker_logs: bool = True,
    client_logs: bool = True,
    events: bool = False,
) -> logs_reads.LogArgs:
    return logs_reads.LogArgs(
        since=since,
        until=until,
        # strawberry.enum made each value its plain string (typed as its enum_value).
        severity=cast(str, severity.value) if severity is not None else None,
        text=text,
        role=role,
        pod=pod,
        newest_first=order is LogOrder.NEWEST_FIRST,
        first=first,
        after=after,
        worker_logs=worker_logs,
        client_logs=client_logs,
        events=events,
    )


MODEL_LOGS = (
    "Its worker logs (Cloud Logging, or its pods' logs) and client lines, merged in time "
    "order; for a failed model, by default the minutes around its failure."
)


@strawberry.type
class ModelLogFields:
    """``Model.logs``."""

    @strawberry.field(description=MODEL_LOGS)
    async def logs(
        self,
        info: Info,
        since: Since = None,
        until: Until = None,
        severity: Severity = None,
        text: Text = None,
        role: Role = None,
        pod: PodName = None,
        order: Order = LogOrder.OLDEST_FIRST,
        first: First = None,
        after: After = None,
        worker_logs: WorkerLogs = True,
        client_logs: ClientLogs = True,
        events: Events = False,
    ) -> LogConnection | None:
        args = _args(
            since,
            until,
            severity,
            text,
            order,
            first,
            after,
            role,
            pod,
            worker_logs,
            client_logs,
            events,
        )
        mid = cast("Model", self).id
        return LogConnection.from_answer(await logs_reads.model_logs(info.context, mid, args))


@strawberry.type
class SessionLogFields:
    """``Session.logs``."""

    @strawberry.field(
        description="The logs of its models (the newest ten), merged in time order; by "
        "default the last hour (or the hour before it closed)."
    )
    async def logs(
        self,
        info: Info,
        since: Since = None,
        until: Until = None,
        severity: Severity = None,
        text: Text = None,
        role: Role = None,
        pod: PodName = None,
        order: Order = LogOrder.OLDEST_FIRST,
        first: First = None,
        after: After = None,
        worker_logs: WorkerLogs = True,
        client_logs: ClientLogs = True,
    ) -> LogConnection | None:
        args = _args(
            since, until, severity, text, order, first, after, role, pod, worker_logs, client_logs
        )
        sid = cast("Session", self).id
        return LogConnection.from_answer(await logs_reads.session_logs(info.context, sid, args))


@strawberry.type
class PodLogFields:
    """``Pod.logs``."""

    @strawberry.field(
        description="Its logs (Cloud Logging, or read from the Kubernetes API), by default "
        "the last hour."
    )
    async def logs(
        self,
        info: Info,
        since: Since = None,
        until: Until = None,
        severity: Severity = None,
        text: Text = None,
        order: Order = LogOrder.OLDEST_FIRST,
        first: First = None,
        after: After = None,
    ) -> LogConnection | None:
        args = _args(since, until, severity, text, order, first, after)
        pod = cast("Pod", self)
        return LogConnection.from_answer(
            await logs_reads.pod_logs(info.context, pod.namespace, pod.name, args)
        )

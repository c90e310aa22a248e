"""A pod's containers as the kubelet reports them, their terminations, and OOM kills."""

from __future__ import annotations

from datetime import datetime

import strawberry
from openrl_inspect.adapters.kubernetes import ContainerState, Termination
from openrl_inspect.resolvers.cluster import terminations
from openrl_inspect.schema.common import ts


@strawberry.type(
    description="How a container run ended (the kubelet's `terminated` state): `reason` "
    "OOMKilled, Error, Completed...; exit code 137 is a SIGKILL (the OOM killer's)."
)
class ContainerTermination:
    reason: str | None = strawberry.field(description="OOMKilled, Error, Completed...")
    exit_code: int | None = strawberry.field(description="Its exit code (137: SIGKILL).")
    signal: int | None = strawberry.field(description="The signal that ended it, if reported.")
    message: str | None = strawberry.field(description="The kubelet's message, verbatim.")
    started_at: datetime | None = strawberry.field(description="When the run started (UTC).")
    finished_at: datetime | None = strawberry.field(description="When the run ended (UTC).")
    oom_killed: bool = strawberry.field(description="The kernel's OOM killer ended it.")

    @classmethod
    def from_record(cls, rec: Termination) -> ContainerTermination:
        return cls(
            reason=rec.reason,
            exit_code=rec.exit_code,
            signal=rec.signal,
            message=rec.message,
            started_at=ts(rec.started_at),
            finished_at=ts(rec.finished_at),
            oom_killed=rec.oom_killed,
        )


@strawberry.type(
    description="A container of a pod (live, from its status): its current state and how "
    "its previous run ended. A sampler killed for memory shows as `waitingReason` "
    "CrashLoopBackOff with `lastTermination.oomKilled`."
)
class Container:
    name: str = strawberry.field(description="The container's name.")
    init: bool = strawberry.field(description="An init container.")
    state: str = strawberry.field(
        description="The container's state: waiting, running, terminated or unknown."
    )
    ready: bool = strawberry.field(description="It passes its readiness probe (`ready`).")
    restarts: int = strawberry.field(description="Times the kubelet restarted it.")
    restart_count: int = strawberry.field(
        description="Times the kubelet restarted it.", deprecation_reason="Use `restarts`."
    )
    image: str | None = strawberry.field(description="Its image (from the spec if unknown).")
    waiting_reason: str | None = strawberry.field(
        description="Why it waits: CrashLoopBackOff, ImagePullBackOff, "
        "CreateContainerConfigError, ContainerCreating..."
    )
    reason: str | None = strawberry.field(
        description="The current state's reason (waiting or terminated)."
    )
    message: str | None = strawberry.field(description="The current state's message.")
    exit_code: int | None = strawberry.field(description="Of a current termination.")
    signal: int | None = strawberry.field(description="Of a current termination.")
    started_at: datetime | None = strawberry.field(
        description="When the current run started (running or terminated), UTC."
    )
    finished_at: datetime | None = strawberry.field(description="Of a current termination.")
    last_termination: ContainerTermination | None = strawberry.field(
        description="How its previous run ended (`lastState.terminated`); null before "
        "its first restart."
    )

    @classmethod
    def from_record(cls, rec: ContainerState) -> Container:
        last = rec.last_termination
        return cls(
            name=rec.name,
            init=rec.init,
            state=rec.state,
            ready=rec.ready,
            restarts=rec.restart_count,
            restart_count=rec.restart_count,
            image=rec.image,
            waiting_reason=rec.reason if rec.state == "waiting" else None,
            reason=rec.reason,
            message=rec.message,
            exit_code=rec.exit_code,
            signal=rec.signal,
            started_at=ts(rec.started_at),
            finished_at=ts(rec.finished_at),
            last_termination=ContainerTermination.from_record(last) if last else None,
        )


@strawberry.type(description="One OOM-killed run of a container, as the kubelet still shows it.")
class OomKill:
    namespace: str = strawberry.field(description="The pod's namespace.")
    pod: str = strawberry.field(description="The pod's name.")
    container: str = strawberry.field(description="The container's name.")
    init: bool = strawberry.field(description="An init container.")
    at: datetime | None = strawberry.field(description="When the run ended (finishedAt).")
    exit_code: int | None = strawberry.field(description="Its exit code (137 for SIGKILL).")
    restarts: int = strawberry.field(description="The container's restarts so far.")
    current: bool = strawberry.field(
        description="True: the container is still terminated by it; false: it is its "
        "last termination (the container has been restarted since)."
    )

    @classmethod
    def from_record(cls, rec: terminations.OomKill) -> OomKill:
        return cls(
            namespace=rec.namespace,
            pod=rec.pod,
            container=rec.container,
            init=rec.init,
            at=ts(rec.at),
            exit_code=rec.exit_code,
            restarts=rec.restarts,
            current=rec.current,
        )


@strawberry.type(
    description="OOM kills the cluster still shows (each container's current state and "
    "last termination: not a history), most recent first. `truncated` when more exist "
    "than returned; `degraded` when the pods came from a cache not in sync."
)
class OomKills:
    kills: list[OomKill] = strawberry.field(description="The kills, most recent first.")
    truncated: bool = strawberry.field(description="More kills exist than returned.")
    degraded: bool = strawberry.field(
        description="The pods came from a watch cache not in sync: may be stale."
    )

    @classmethod
    def from_record(cls, rec: terminations.OomKills) -> OomKills:
        return cls(
            kills=[OomKill.from_record(k) for k in rec.items],
            truncated=rec.truncated,
            degraded=rec.degraded,
        )

"""Container terminations: a pod's restarts and OOM kills, and the OOM kills of a
placement's or a model's pods.

The kubelet keeps only the current state and the last termination of each container, so
an OOM kill is visible while the container is still terminated by it (``state``) or
until its next run ends (``lastState``): these are the OOM kills the cluster still
shows, not a history (Events and the logs keep that).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes import ContainerState, PodRecord
from openrl_inspect.resolvers.cluster import links as cluster_links
from openrl_inspect.resolvers.cluster.reads import PER_OBJECT, kind_degraded
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.paging import page_size
from openrl_inspect.state.records import PlacementRecord

OOM_KILLED = "OOMKilled"


@dataclass(frozen=True, slots=True)
class OomKill:
    """One OOM-killed run of a container. ``current``: the container is still in that
    terminated state (not restarted yet); otherwise it is its last termination."""

    namespace: str
    pod: str
    container: str
    init: bool
    at: float | None  # the run's finishedAt
    exit_code: int | None
    restarts: int
    current: bool


@dataclass(frozen=True, slots=True)
class OomKills:
    """OOM kills, most recent first, at most the limit asked for (``truncated`` if more);
    ``degraded`` when the pods came from a cache not in sync."""

    items: tuple[OomKill, ...]
    truncated: bool
    degraded: bool


def restarts(pod: PodRecord) -> int:
    """Restarts of all its containers, init containers included (as ``kubectl`` counts)."""
    return sum(c.restart_count for c in pod.containers)


def _current_oom(c: ContainerState) -> bool:
    return c.state == "terminated" and c.reason == OOM_KILLED


def oom_killed(pod: PodRecord) -> bool:
    """Whether any container's current state or last termination is an OOM kill."""
    return any(
        _current_oom(c) or (c.last_termination is not None and c.last_termination.oom_killed)
        for c in pod.containers
    )


def pod_oom_kills(pod: PodRecord) -> list[OomKill]:
    out = []
    for c in pod.containers:
        if _current_oom(c):
            out.append(
                OomKill(pod.namespace, pod.name, c.name, c.init, c.finished_at,
                        c.exit_code, c.restart_count, current=True)
            )  # fmt: skip
        last = c.last_termination
        if last is not None and last.oom_killed:
            out.append(
                OomKill(pod.namespace, pod.name, c.name, c.init, last.finished_at,
                        last.exit_code, c.restart_count, current=False)
            )  # fmt: skip
    return out


def oom_kills(pods: Iterable[PodRecord], limit: int, degraded: bool = False) -> OomKills:
    """The pods' OOM kills, most recent first (unknown times last), then by pod and
    container; at most ``limit``."""
    found = [k for p in pods for k in pod_oom_kills(p)]
    found.sort(key=lambda k: (k.at is None, -(k.at or 0.0), k.namespace, k.pod, k.container))
    return OomKills(tuple(found[:limit]), len(found) > limit, degraded)


async def placement_oom_kills(ctx: Context, rec: PlacementRecord, first: int | None) -> OomKills:
    limit = page_size(ctx, first)
    pods = await cluster_links.placement_pods(ctx, rec)
    return oom_kills(pods, limit, await kind_degraded(ctx, "pods"))


async def model_oom_kills(ctx: Context, mid: str, first: int | None) -> OomKills:
    """Over the model's pods (at most ``PER_OBJECT`` of them: ``truncated`` past it)."""
    limit = page_size(ctx, first)
    listing = await ctx.kube.pods_by_model.load((mid, PER_OBJECT))
    kills = oom_kills(listing.items, limit, listing.degraded)
    if listing.truncated and not kills.truncated:
        return OomKills(kills.items, True, kills.degraded)
    return kills

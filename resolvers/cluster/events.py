"""The Kubernetes Events regarding a pod, a Workload, a node, or all of a model's objects.

Events come from the inspector's bounded events cache (``ctx.kube.events_for``): only
those the API server still holds (an hour by default) and the cache kept. Every answer
is newest first (by when last seen), at most ``first`` long, and says when more exist.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes import EventRecord, Listing, Regarding, newest_event_first
from openrl_inspect.resolvers import scope
from openrl_inspect.resolvers.cluster.reads import PER_OBJECT
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.paging import page_size

POD, WORKLOAD, NODE = "Pod", "Workload", "Node"


@dataclass(frozen=True)
class EventPage:
    """Events newest first; ``truncated`` when more exist (or objects were left out)."""

    items: list[EventRecord]
    truncated: bool
    degraded: bool


async def object_events(
    ctx: Context, kind: str, namespace: str, name: str, first: int | None
) -> EventPage:
    """The events regarding one object (``namespace`` "" for a node). A node's events
    can name any owner's pods and processes: a viewer gets none of them."""
    limit = page_size(ctx, first)
    if kind == NODE and not scope.sees_everything(ctx):
        return EventPage([], False, False)
    listing = await ctx.kube.events_for.load(((kind, namespace, name), limit))
    return EventPage(list(listing.items), listing.truncated, listing.degraded)


async def model_events(ctx: Context, mid: str, first: int | None) -> EventPage:
    """The events of a model's pods and Workloads, merged newest first."""
    limit = page_size(ctx, first)
    pods, workloads = await asyncio.gather(
        ctx.kube.pods_by_model.load((mid, PER_OBJECT)),
        ctx.kube.workloads_by_model.load((mid, PER_OBJECT)),
    )
    objects: list[Regarding] = [(POD, p.namespace, p.name) for p in pods.items]
    objects += [(WORKLOAD, w.namespace, w.name) for w in workloads.items]
    listings = await ctx.kube.events_for.load_many([(o, limit) for o in objects])
    return merge(
        listings, limit, pods.truncated or workloads.truncated, pods.degraded or workloads.degraded
    )


def merge(
    listings: list[Listing[EventRecord]], limit: int, objects_left_out: bool, degraded: bool
) -> EventPage:
    """The newest ``limit`` events of several objects' listings.

    Each listing holds its object's newest events, so the newest ``limit`` overall are
    among them: the merge is exact, and more exist when it overflows or a listing did.
    """
    seen: set[tuple[str, str]] = set()
    merged: list[EventRecord] = []
    for listing in listings:
        for event in listing.items:
            if (event.namespace, event.name) not in seen:
                seen.add((event.namespace, event.name))
                merged.append(event)
    merged.sort(key=newest_event_first)
    return EventPage(
        merged[:limit],
        truncated=len(merged) > limit
        or objects_left_out
        or any(listing.truncated for listing in listings),
        degraded=degraded or any(listing.degraded for listing in listings),
    )

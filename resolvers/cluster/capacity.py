"""GPU capacity from the live cluster: per node, per page of nodes, for the cluster.

The watch cache keeps every node's capacity and the cluster's counters up to date per
event (``adapters.kubernetes._gpu_views``); these read the request's snapshot of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from openrl_inspect.adapters.kubernetes import NodeRecord, PodRecord
from openrl_inspect.resolvers.cluster import counting
from openrl_inspect.resolvers.cluster.reads import PER_NODE, LivePage, gpu_views, nodes
from openrl_inspect.resolvers.context import Context

# The kinds the counts are made of (pods only matter on device-plugin nodes, and a
# capacity never said degraded for them).
_COUNTED_KINDS = frozenset({"nodes", "resourceslices", "devicetaintrules", "resourceclaims"})


async def node_capacity(ctx: Context, rec: NodeRecord) -> counting.NodeCapacity:
    found = (await gpu_views(ctx)).snapshot.node_capacity(rec.name)
    if found is not None:
        return found
    # The Node arrived after the snapshot was taken: count it alone (it publishes no
    # devices the snapshot knows of).
    pods_here: Sequence[PodRecord] = ()
    if rec.gpu_capacity or rec.gpu_allocatable:
        pods_here = (await ctx.kube.pods_by_node.load((rec.name, PER_NODE))).items
    return counting.node_capacity(rec.name, rec, (), set(), pods_here)


async def capacity_by_node(
    ctx: Context, first: int | None, after: str | None
) -> LivePage[counting.NodeCapacity]:
    page = await nodes(ctx, first, after)
    items = [(cursor, await node_capacity(ctx, rec)) for cursor, rec in page.items]
    return LivePage(items, page.truncated, page.degraded, page.has_previous, page.total)


async def cluster_capacity(ctx: Context) -> counting.ClusterCapacity:
    views = await gpu_views(ctx)
    snap = views.snapshot
    degraded = bool(views.degraded & _COUNTED_KINDS)
    return counting.ClusterCapacity(
        snap.total,
        snap.by_product,
        snap.node_count,
        degraded,
        views.truncated,
        slices=snap.slices,
        partitioned=snap.partitioned,
    )

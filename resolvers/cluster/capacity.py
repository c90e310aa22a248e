"""GPU capacity from the live cluster: per node, per page of nodes, for the cluster.

The counting itself is pure (``resolvers.capacity``); this gathers its inputs through
the per-request loaders.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from openrl_inspect.adapters.kubernetes import DeviceKey, GpuDevice, NodeRecord, PodRecord
from openrl_inspect.context import Context
from openrl_inspect.loaders.kubernetes import GpuPage, NodePage
from openrl_inspect.resolvers.cluster import counting as C
from openrl_inspect.resolvers.cluster.reads import (
    PER_NODE,
    PER_OBJECT,
    WHOLE_CLUSTER,
    LivePage,
    kind_degraded,
    nodes,
)


async def _held(ctx: Context, devices: Sequence[GpuDevice]) -> set[DeviceKey]:
    listings = await ctx.kube.claims_by_device.load_many([(g.key, PER_OBJECT) for g in devices])
    return {g.key for g, listing in zip(devices, listings, strict=True) if listing.items}


async def node_capacity(ctx: Context, rec: NodeRecord) -> C.NodeCapacity:
    devices = (await ctx.kube.gpus_by_node.load((rec.name, PER_NODE))).items
    held = await _held(ctx, devices)
    pods_here: Sequence[PodRecord] = ()
    if not devices and (rec.gpu_capacity or rec.gpu_allocatable):
        pods_here = (await ctx.kube.pods_by_node.load((rec.name, PER_NODE))).items
    return C.node_capacity(rec.name, rec, devices, held, pods_here)


async def capacity_by_node(
    ctx: Context, first: int | None, after: str | None
) -> LivePage[C.NodeCapacity]:
    page = await nodes(ctx, first, after)
    caps = await asyncio.gather(*(node_capacity(ctx, rec) for _, rec in page.items))
    items = [(cursor, cap) for (cursor, _), cap in zip(page.items, caps, strict=True)]
    return LivePage(items, page.truncated, page.degraded, page.has_previous, page.total)


async def cluster_capacity(ctx: Context) -> C.ClusterCapacity:
    node_listing, gpu_listing = await asyncio.gather(
        ctx.kube.node_pages.load(NodePage(None, WHOLE_CLUSTER)),
        ctx.kube.gpu_pages.load(GpuPage(None, None, WHOLE_CLUSTER)),
    )
    devices = gpu_listing.items
    held = await _held(ctx, devices)
    by_node: dict[str, list[GpuDevice]] = {}
    for g in devices:
        by_node.setdefault(g.node_name or "", []).append(g)
    plugin = [
        n for n in node_listing.items
        if n.name not in by_node and (n.gpu_capacity or n.gpu_allocatable)
    ]  # fmt: skip
    plugin_pods = await ctx.kube.pods_by_node.load_many([(n.name, PER_NODE) for n in plugin])
    pods_of = {n.name: listing.items for n, listing in zip(plugin, plugin_pods, strict=True)}
    nodes_by_name = {n.name: n for n in node_listing.items}
    names = sorted(set(nodes_by_name) | {name for name in by_node if name})
    per_node = [
        C.node_capacity(
            name, nodes_by_name.get(name), by_node.get(name, []), held, pods_of.get(name, ())
        )
        for name in names
    ]
    conditions = {c.node: c.condition for c in per_node}
    total = sum((c.counts for c in per_node), C.CapacityCounts())
    products = C.by_product(per_node, devices, held, conditions)
    truncated = node_listing.truncated or gpu_listing.truncated
    degraded = (
        node_listing.degraded or gpu_listing.degraded or await kind_degraded(ctx, "resourceclaims")
    )
    return C.ClusterCapacity(total, products, len(names), degraded, truncated)

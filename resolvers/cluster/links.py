"""Live Kubernetes state behind the Redis types: a placement's pods, node, GPUs and
Workload as they are now, a worker's pod, and why a model waits."""

from __future__ import annotations

import asyncio

from openrl_inspect.adapters.kubernetes import GpuDevice, ObjectKey, PodRecord, WorkloadRecord
from openrl_inspect.core.domain import WAITING_STATES
from openrl_inspect.loaders.kubernetes import WorkloadPage
from openrl_inspect.resolvers.cluster.names import valid_dns_label, valid_dns_name
from openrl_inspect.resolvers.cluster.reads import PER_OBJECT, QUEUE_PEERS
from openrl_inspect.resolvers.cluster.wait_reasons import WaitReason
from openrl_inspect.resolvers.cluster.waiting import why_waiting
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.state.keys import valid_id
from openrl_inspect.state.records import PlacementRecord, WorkerRecord

# -- Redis records, seen live -------------------------------------------------------------


async def placement_pods(ctx: Context, rec: PlacementRecord) -> list[PodRecord]:
    """The recorded pods that still exist (absent once gone)."""
    if not rec.namespace or not valid_dns_label(rec.namespace):
        return []
    names = [n for n in rec.pods if valid_dns_name(n)]
    found = await ctx.kube.pods.load_many([ObjectKey(rec.namespace, n) for n in names])
    return [p for p in found if p is not None]


async def placement_gpus(ctx: Context, rec: PlacementRecord) -> list[GpuDevice]:
    found = await ctx.kube.gpus_by_uuid.load_many(rec.gpu_ids)
    return [g for g in found if g is not None]


async def placement_workload(ctx: Context, rec: PlacementRecord) -> WorkloadRecord | None:
    """The Workload the placement recorded, by its namespace and name (placements
    recorded before namespaces were kept are looked up among the model's)."""
    if not rec.workload or not valid_dns_name(rec.workload):
        return None
    if rec.namespace:
        if not valid_dns_label(rec.namespace):
            return None
        return await ctx.kube.workloads.load(ObjectKey(rec.namespace, rec.workload))
    if not valid_id(rec.model_id):
        return None
    listing = await ctx.kube.workloads_by_model.load((rec.model_id, PER_OBJECT))
    for w in listing.items:
        if w.name == rec.workload and (not rec.namespace or w.namespace == rec.namespace):
            return w
    return None


async def worker_pod(ctx: Context, rec: WorkerRecord) -> PodRecord | None:
    """The worker's pod, found among its model's pods by name (workers do not record
    their namespace)."""
    if not rec.model_id or not rec.pod:
        return None
    listing = await ctx.kube.pods_by_model.load((rec.model_id, PER_OBJECT))
    return next((p for p in listing.items if p.name == rec.pod), None)


# -- why waiting ------------------------------------------------------------------------------


async def model_why_waiting(ctx: Context, mid: str) -> list[WaitReason]:
    model = await state_reads.model(ctx, mid)
    if model.state not in WAITING_STATES:
        return []
    wl_listing, pod_listing = await asyncio.gather(
        ctx.kube.workloads_by_model.load((mid, PER_OBJECT)),
        ctx.kube.pods_by_model.load((mid, PER_OBJECT)),
    )
    claim_listings = await ctx.kube.claims_for_pods.load_many(
        [(p.key, PER_OBJECT) for p in pod_listing.items]
    )
    claims = {c.key: c for listing in claim_listings for c in listing.items}
    namespaces = sorted({w.namespace for w in wl_listing.items if w.queue_name})
    peer_listings = await ctx.kube.workload_pages.load_many(
        [WorkloadPage(ns, None, None, QUEUE_PEERS) for ns in namespaces]
    )
    peers = [w for listing in peer_listings for w in listing.items]
    return why_waiting(
        model, wl_listing.items, pod_listing.items, list(claims.values()), ctx.now, peers
    )

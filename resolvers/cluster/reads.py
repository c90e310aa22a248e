"""Resolvers for the cluster graph: pods, nodes, GPUs, Kueue Workloads, claims.

Live state comes from Kubernetes (the watch cache, through ``ctx.kube`` loaders); the
history of placements from Redis (``ctx.state``). Lists are ``LivePage``s: a page of
records with cursors, ``truncated`` when more exist, ``degraded`` when the watch cache
was not in sync for the kinds it needed. The live fields of the Redis types are in
``cluster_model``, capacity in ``cluster_capacity``, the checks of names in ``names``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from openrl_inspect.adapters.kubernetes import (
    ClaimRecord,
    DeviceKey,
    GpuDevice,
    GpuViewRead,
    Listing,
    NodeRecord,
    ObjectKey,
    PodRecord,
    SourceStatus,
    WorkloadRecord,
)
from openrl_inspect.core import cursor as codec
from openrl_inspect.core.errors import InvalidInput, NotFound
from openrl_inspect.loaders.batch import BatchLoader
from openrl_inspect.loaders.kubernetes import GpuPage, NodePage, PodPage, WorkloadPage
from openrl_inspect.resolvers import scope
from openrl_inspect.resolvers.cluster.names import (
    check_device_id,
    check_model_id,
    check_name,
    check_namespace,
)
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.paging import Cursor, page_size
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.state.keys import valid_id
from openrl_inspect.state.records import ModelRecord

R = TypeVar("R")
Owned = TypeVar("Owned", PodRecord, WorkloadRecord)

# Bounds on the lists the resolvers read for themselves (not pages a client asks for).
PER_OBJECT = 256  # claims of a pod, claims of a device, pods/workloads of a model
PER_NODE = 1024  # pods on one node, for its capacity when the views lag its Node
QUEUE_PEERS = 1000  # Workloads of a namespace, for a position in the queue


# -- pages and cursors --------------------------------------------------------------------


@dataclass(frozen=True)
class LivePage(Generic[R]):
    """One page of live records, each with the cursor that resumes after it (encoded
    when read: the cluster view selects none of its 9,000)."""

    items: list[tuple[str | Cursor, R]]
    truncated: bool
    degraded: bool
    has_previous: bool
    # Only known when the page holds the whole list (no cursor, not truncated).
    total: int | None


def encode_cursor(kind: str, parts: Sequence[str]) -> str:
    return codec.encode(kind, *parts)


def decode_cursor(kind: str, cursor: str, size: int) -> list[str]:
    parts = codec.decode(kind, cursor, size, "invalid cursor")
    if not all(isinstance(v, str) for v in parts):
        raise InvalidInput("invalid cursor")
    return parts


def _page(
    kind: str, listing: Listing[R], parts: Callable[[R], Sequence[str]], after: str | None
) -> LivePage[R]:
    items: list[tuple[str | Cursor, R]] = [
        (Cursor(_item_cursor, kind, parts, r), r) for r in listing.items
    ]
    whole = after is None and not listing.truncated
    return LivePage(
        items, listing.truncated, listing.degraded, after is not None, len(items) if whole else None
    )


def _item_cursor(kind: str, parts: Callable[[R], Sequence[str]], rec: R) -> str:
    return encode_cursor(kind, parts(rec))


def _node_parts(n: NodeRecord) -> list[str]:
    return [n.name]


def _key_parts(r: PodRecord | WorkloadRecord) -> list[str]:
    return [r.namespace, r.name]


def _gpu_parts(g: GpuDevice) -> list[str]:
    return list(g.key)


def _object_after(kind: str, after: str | None) -> ObjectKey | None:
    return None if after is None else ObjectKey(*decode_cursor(kind, after, 2))


# -- status -----------------------------------------------------------------------------------


async def status(ctx: Context) -> SourceStatus:
    return await ctx.kube.status.load("")


async def gpu_views(ctx: Context) -> GpuViewRead:
    """The request's one snapshot of the GPU views (each node's GPUs, their holders, the
    capacity counters), which the watch cache keeps: every read of it is a lookup."""
    return await ctx.kube.gpu_views.load("")


async def kind_degraded(ctx: Context, kind: str) -> bool:
    """True when ``kind``'s cache is not in sync: objects of it may be stale."""
    st = (await status(ctx)).kind(kind)
    return st is not None and st.degraded


# -- root lookups and lists -----------------------------------------------------------------


async def nodes(ctx: Context, first: int | None, after: str | None) -> LivePage[NodeRecord]:
    start = None if after is None else decode_cursor("node", after, 1)[0]
    listing = await ctx.kube.node_pages.load(NodePage(start, page_size(ctx, first)))
    return _page("node", listing, _node_parts, after)


async def node(ctx: Context, name: str) -> NodeRecord:
    rec = await ctx.kube.nodes.load(check_name("node", name))
    if rec is None:
        raise NotFound("node", name)
    return rec


async def gpus(
    ctx: Context, node_name: str | None, first: int | None, after: str | None
) -> LivePage[GpuDevice]:
    if node_name is not None:
        check_name("node", node_name)
    start = None if after is None else DeviceKey(*decode_cursor("gpu", after, 3))
    listing = await ctx.kube.gpu_pages.load(GpuPage(node_name, start, page_size(ctx, first)))
    return _page("gpu", listing, _gpu_parts, after)


async def gpu(ctx: Context, uuid: str) -> GpuDevice:
    rec = await ctx.kube.gpus_by_uuid.load(check_device_id(uuid))
    if rec is None:
        raise NotFound("GPU", uuid)
    return rec


async def pod(ctx: Context, namespace: str, name: str) -> PodRecord:
    key = ObjectKey(check_namespace(namespace), check_name("pod", name))
    rec = await ctx.kube.pods.load(key)
    if rec is None or not await scope.model_id_visible(ctx, rec.model_id):
        raise NotFound("pod", f"{namespace}/{name}")
    return rec


async def pods(
    ctx: Context,
    *,
    model_id: str | None,
    namespace: str | None,
    node_name: str | None,
    phase: str | None,
    first: int | None,
    after: str | None,
) -> LivePage[PodRecord]:
    if namespace is not None:
        check_namespace(namespace)
    if model_id is not None:
        check_model_id(model_id)
    if node_name is not None:
        check_name("node", node_name)
    start, size = _object_after("pod", after), page_size(ctx, first)
    if not scope.sees_everything(ctx):

        def pod_matches(p: PodRecord) -> bool:
            return (
                (namespace is None or p.namespace == namespace)
                and (node_name is None or p.node_name == node_name)
                and (phase is None or p.phase == phase)
            )

        found = await _of_viewer(ctx, ctx.kube.pods_by_model, model_id, pod_matches, start, size)
        return _page("pod", found, _key_parts, after)
    request = PodPage(model_id, namespace, node_name, phase, start, size)
    listing = await ctx.kube.pod_pages.load(request)
    return _page("pod", listing, _key_parts, after)


async def workloads(
    ctx: Context,
    namespace: str | None,
    model_id: str | None,
    first: int | None,
    after: str | None,
) -> LivePage[WorkloadRecord]:
    if namespace is not None:
        check_namespace(namespace)
    if model_id is not None:
        check_model_id(model_id)
    start, size = _object_after("workload", after), page_size(ctx, first)
    if not scope.sees_everything(ctx):

        def workload_matches(w: WorkloadRecord) -> bool:
            return namespace is None or w.namespace == namespace

        found = await _of_viewer(
            ctx, ctx.kube.workloads_by_model, model_id, workload_matches, start, size
        )
        return _page("workload", found, _key_parts, after)
    listing = await ctx.kube.workload_pages.load(WorkloadPage(namespace, model_id, start, size))
    return _page("workload", listing, _key_parts, after)


async def _visible(ctx: Context, listing: Listing[Owned]) -> Listing[Owned]:
    """The listing's pods or Workloads of models the principal may see."""
    if scope.sees_everything(ctx):
        return listing
    kept = await scope.keep_visible(ctx, listing.items, lambda r: r.model_id)
    return replace(listing, items=tuple(kept))


async def _of_viewer(
    ctx: Context,
    by_model: BatchLoader[tuple[str, int], Listing[Owned]],
    model_id: str | None,
    matches: Callable[[Owned], bool],
    after: ObjectKey | None,
    size: int,
) -> Listing[Owned]:
    """A viewer's pods or Workloads: those of its owners' models (read from their
    indexes), filtered, merged in key order and cut after the filters, so a page is
    full unless it is the last. ``truncated`` also when a model had more than
    ``PER_OBJECT`` of them (its listing was cut: the merge cannot be known whole)."""
    mids = await state_reads.viewer_model_ids(ctx)
    if model_id is not None:
        mids = [m for m in mids if m == model_id]
    listings = await asyncio.gather(*(by_model.load((m, PER_OBJECT)) for m in mids))
    found = {
        r.key: r
        for listing in listings
        for r in listing.items
        if (after is None or r.key > after) and matches(r)
    }
    ordered = [found[k] for k in sorted(found)]
    return Listing(
        tuple(ordered[:size]),
        truncated=len(ordered) > size or any(x.truncated for x in listings),
        degraded=any(x.degraded for x in listings),
    )


# -- nested lists ---------------------------------------------------------------------------


async def node_gpus(
    ctx: Context, node_name: str, first: int | None, after: str | None
) -> LivePage[GpuDevice]:
    if after is not None:
        return await gpus(ctx, node_name, first, after)
    size = page_size(ctx, first)
    views = await gpu_views(ctx)
    devices = views.snapshot.gpus_on(node_name)
    listing = Listing(
        devices[:size],
        truncated=len(devices) > size or views.truncated,
        # A GPU's taints come from the DeviceTaintRules as well as its slice.
        degraded=bool(views.degraded & {"resourceslices", "devicetaintrules"}),
    )
    return _page("gpu", listing, _gpu_parts, after)


async def node_pods(
    ctx: Context, node_name: str, first: int | None, after: str | None
) -> LivePage[PodRecord]:
    if after is not None:
        return await pods(
            ctx, model_id=None, namespace=None, node_name=node_name, phase=None,
            first=first, after=after,
        )  # fmt: skip
    listing = await ctx.kube.pods_by_node.load((node_name, page_size(ctx, first)))
    return _page("pod", await _visible(ctx, listing), _key_parts, after)


async def model_pods(
    ctx: Context, mid: str, first: int | None, after: str | None
) -> LivePage[PodRecord]:
    if after is not None:
        return await pods(
            ctx, model_id=mid, namespace=None, node_name=None, phase=None,
            first=first, after=after,
        )  # fmt: skip
    listing = await ctx.kube.pods_by_model.load((mid, page_size(ctx, first)))
    return _page("pod", listing, _key_parts, after)


async def model_workloads(
    ctx: Context, mid: str, first: int | None, after: str | None
) -> LivePage[WorkloadRecord]:
    if after is not None:
        return await workloads(ctx, None, mid, first, after)
    listing = await ctx.kube.workloads_by_model.load((mid, page_size(ctx, first)))
    return _page("workload", listing, _key_parts, after)


# -- links ------------------------------------------------------------------------------------


async def workload_pods(
    ctx: Context, rec: WorkloadRecord, first: int | None, after: str | None = None
) -> LivePage[PodRecord]:
    """The pods of the Workload's job, by ownership, in key order, a page at a time.

    Ownership has no index to start a page from: a later page reads the first
    ``PER_OBJECT`` pods again and goes on after the cursor's key.
    """
    size = page_size(ctx, first)
    if after is None:
        listing = await ctx.kube.pods_for_workloads.load((rec.key, size))
        return _page("pod", await _visible(ctx, listing), _key_parts, None)
    start = _object_after("pod", after)
    read = await _visible(ctx, await ctx.kube.pods_for_workloads.load((rec.key, PER_OBJECT)))
    rest = [p for p in read.items if start is None or p.key > start]
    truncated = len(rest) > size or (read.truncated and bool(rest))
    return _page(
        "pod", replace(read, items=tuple(rest[:size]), truncated=truncated), _key_parts, after
    )


async def node_of(ctx: Context, name: str | None) -> NodeRecord | None:
    return await ctx.kube.nodes.load(name) if name else None


async def model_by_label(ctx: Context, model_id: str | None) -> ModelRecord | None:
    """The Redis model a Kubernetes object belongs to (by label or ownership), when the
    principal may see it."""
    if not model_id or not valid_id(model_id):
        return None
    return await state_reads.model_of(ctx, model_id)


async def pod_claims(ctx: Context, rec: PodRecord) -> list[ClaimRecord]:
    return list((await ctx.kube.claims_for_pods.load((rec.key, PER_OBJECT))).items)


async def device_gpu(ctx: Context, key: DeviceKey) -> GpuDevice | None:
    return await ctx.kube.gpus_by_device.load(key)


async def pod_gpus(ctx: Context, rec: PodRecord) -> list[GpuDevice]:
    """GPUs allocated to the pod's ResourceClaims, in claim then device order."""
    keys: list[DeviceKey] = []
    for claim in await pod_claims(ctx, rec):
        if claim.allocated:
            keys.extend(d.key for d in claim.devices if d.key not in keys)
    found = await ctx.kube.gpus_by_device.load_many(keys)
    return [g for g in found if g is not None]

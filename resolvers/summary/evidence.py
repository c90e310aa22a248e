"""Evidence for the diagnosis, gathered from every backend through the request's loaders.

Each backend's part is gathered on its own: a backend that is not configured or fails
becomes an ``Unknown`` with its error code, and the causes that need it are said to be
unknown; the others stand. Every read goes through a DataLoader and the models of a
request are gathered side by side, so a level costs the same backend calls for 10
models as for 200.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from openrl_inspect.adapters.kubernetes import (
    EventRecord,
    GpuDevice,
    NodeRecord,
    PodRecord,
    WorkloadRecord,
)
from openrl_inspect.adapters.redis import SamplerBatchRequest
from openrl_inspect.core.domain import WAITING_STATES
from openrl_inspect.core.errors import BackendError
from openrl_inspect.loaders.kubernetes import WorkloadPage
from openrl_inspect.resolvers import scope
from openrl_inspect.resolvers.cluster.reads import PER_OBJECT, QUEUE_PEERS
from openrl_inspect.resolvers.cluster.waiting import why_waiting
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis.evidence import (
    DutyEvidence,
    KubeEvidence,
    SamplingEvidence,
    Unknown,
)
from openrl_inspect.resolvers.metrics.reads import gpu_key
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.summary import past
from openrl_inspect.state.records import ModelRecord, SamplerBatchRecord, WorkerRecord

# The newest placements the diagnosis sees.
PLACEMENTS_JUDGED = 20
# Per model: events per object, the sampler batches judged, the duty window.
EVENTS_PER_OBJECT = 20
SAMPLER_BATCHES = 200
DUTY_WINDOW_S = 600.0


def unknown(backend: str, exc: BackendError) -> Unknown:
    """The backend's part is missing: said, with the code the API would give."""
    return Unknown(backend, exc.code, exc.message)


async def queue_peers(ctx: Context, workloads: Sequence[WorkloadRecord]) -> list[WorkloadRecord]:
    """Other Workloads of the same namespaces, for a position in the queue."""
    namespaces = sorted({w.namespace for w in workloads if w.queue_name})
    listings = await ctx.kube.workload_pages.load_many(
        [WorkloadPage(ns, None, None, QUEUE_PEERS) for ns in namespaces]
    )
    return [w for listing in listings for w in listing.items]


async def _events(
    ctx: Context,
    pods: Sequence[PodRecord],
    workloads: Sequence[WorkloadRecord],
    nodes: list[str],
    gone: past.Recorded,
) -> list[EventRecord]:
    """The events regarding the model's pods, Workloads and the nodes its pods run on,
    and the recorded ones that are gone (and their nodes), oldest first, at most
    ``EVENTS_PER_OBJECT`` (the newest) per object."""
    regarding = [("Pod", p.namespace, p.name) for p in pods]
    regarding += [("Workload", w.namespace, w.name) for w in workloads]
    regarding += [("Pod", ns, n) for ns, n in gone.gone_pods]
    regarding += [("Workload", ns, n) for ns, n in gone.gone_workloads]
    if scope.sees_everything(ctx):  # a node's events can name any owner's pods
        regarding += [("Node", "", n) for n in dict.fromkeys([*nodes, *gone.nodes])]
    listings = await ctx.kube.events_for.load_many([(r, EVENTS_PER_OBJECT) for r in regarding])
    found = {e.key: e for listing in listings for e in listing.items}
    return sorted(found.values(), key=lambda e: e.last_at or e.first_at or 0.0)


async def kube_evidence(
    ctx: Context, model: ModelRecord
) -> tuple[KubeEvidence | Unknown, Unknown | None]:
    """Three loader levels for every model alike (a model with fewer objects must not
    reach a level earlier, or the level's batch splits): its Workloads, pods and
    recorded placements; their claims, events, nodes, recorded GPUs, queue peers and
    the events log; the GPUs its claims hold. With what the events log could not say."""
    waiting = model.state in WAITING_STATES
    try:
        workloads, pods, placements = await asyncio.gather(
            ctx.kube.workloads_by_model.load((model.id, PER_OBJECT)),
            ctx.kube.pods_by_model.load((model.id, PER_OBJECT)),
            state_reads.placements(ctx, model.id, PLACEMENTS_JUDGED, None),
        )
        gone = past.recorded(placements.readable(), pods.items, workloads.items, ctx.now)
        node_names = sorted({p.node_name for p in pods.items if p.node_name})
        all_nodes = sorted({*node_names, *gone.nodes})
        claim_lists, events, nodes, recorded_gpus, peers, logged = await asyncio.gather(
            ctx.kube.claims_for_pods.load_many([(p.key, PER_OBJECT) for p in pods.items]),
            _events(ctx, pods.items, workloads.items, node_names, gone),
            ctx.kube.nodes.load_many(all_nodes),
            ctx.kube.gpus_by_uuid.load_many(gone.gpu_uuids),
            queue_peers(ctx, workloads.items) if waiting else _nothing(),
            past.events_log(ctx, gone),
        )
        claims = list({c.key: c for listing in claim_lists for c in listing.items}.values())
        devices = sorted({d.key for c in claims for d in c.devices})
        gpus = await ctx.kube.gpus_by_device.load_many(devices)
    except BackendError as exc:
        return unknown("kubernetes", exc), None
    reasons = (
        why_waiting(model, workloads.items, pods.items, claims, ctx.now, peers) if waiting else []
    )
    found = {n.name: n for n in nodes if isinstance(n, NodeRecord)}
    log_events, log_unknown = logged
    return KubeEvidence(
        workloads=workloads.items,
        pods=pods.items,
        claims=claims,
        events=past.merged(events, log_events),
        nodes=[found[n] for n in node_names if n in found],
        gpus=[g for g in gpus if isinstance(g, GpuDevice)],
        wait_reasons=reasons,
        placement_nodes=[found[n] for n in gone.nodes if n in found],
        nodes_gone=[n for n in gone.nodes if n not in found],
        placement_gpus=[g for g in recorded_gpus if isinstance(g, GpuDevice)],
        gone_pods=gone.gone_pods,
    ), log_unknown


async def _nothing() -> list[WorkloadRecord]:
    return []


def gpu_uuids(workers: Sequence[WorkerRecord], kube: KubeEvidence | Unknown) -> list[str]:
    """The GPUs the model runs on: its workers' and those allocated to its claims."""
    uuids = [u for w in workers for u in w.gpu_ids]
    if isinstance(kube, KubeEvidence):
        uuids += [g.uuid for g in kube.gpus if g.uuid]
    return list(dict.fromkeys(u for u in uuids if u))


async def duty_evidence(ctx: Context, uuids: Sequence[str]) -> DutyEvidence | Unknown:
    try:
        ctx.metrics.require()
        keys = [(gpu_key(u), DUTY_WINDOW_S, ctx.now) for u in uuids]
        duties = await ctx.metrics.duty.load_many(keys)
    except BackendError as exc:
        return unknown("prometheus", exc)
    by_uuid = {u: (d.value if d is not None else None) for u, d in zip(uuids, duties, strict=True)}
    return DutyEvidence(DUTY_WINDOW_S, by_uuid)


async def sampling_evidence(ctx: Context, mid: str) -> SamplingEvidence | Unknown:
    try:
        found = await ctx.state.sampler_batches.load(
            SamplerBatchRequest(mid, limit=SAMPLER_BATCHES)
        )
    except BackendError as exc:
        return unknown("redis", exc)
    if found.problem is not None:  # the model's batches are stored as something else
        return Unknown("redis", found.problem.code, found.problem.message)
    batches = [e.record for e in found.entries if isinstance(e.record, SamplerBatchRecord)]
    return SamplingEvidence(tuple(reversed(batches)))

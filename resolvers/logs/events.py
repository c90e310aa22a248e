"""Which objects' Kubernetes Events a logs answer with ``events: true`` includes.

A model's: its pods and Workloads as Kubernetes has them now (``ctx.kube``, best effort:
without Kubernetes only the recorded ones), and those its newest placements recorded in
Redis, which names pods long deleted whose events Cloud Logging still keeps (a failed
model's evicted or preempted pods are exactly those). A pod's: the pod. A ``pod``
filter keeps only that pod; a ``role`` filter only the live pods of that role (neither
Workloads nor recorded pods carry a role).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from openrl_inspect.adapters.kubernetes import Listing, PodRecord, Regarding, WorkloadRecord
from openrl_inspect.adapters.logs import MAX_EVENT_OBJECTS
from openrl_inspect.core.errors import BackendError
from openrl_inspect.resolvers.cluster.names import valid_dns_label, valid_dns_name
from openrl_inspect.resolvers.cluster.reads import PER_OBJECT
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.logs.args import LogArgs
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.state.records import PlacementRecord

if TYPE_CHECKING:
    from openrl_inspect.resolvers.logs.sides import Target

POD, WORKLOAD = "Pod", "Workload"
# The newest placements of a model whose recorded pods and Workload are included.
RECORDED_PLACEMENTS = 10


async def event_objects(
    ctx: Context, targets: Sequence[Target], args: LogArgs
) -> dict[str, tuple[Regarding, ...]]:
    """For each target's key, the objects whose events its worker read includes."""
    out: dict[str, tuple[Regarding, ...]] = {}
    mids = [t.model_id for t in targets if t.model_id is not None and t.pod is None]
    live = await _live(ctx, mids)
    recorded = await asyncio.gather(*(_recorded(ctx, mid) for mid in mids))
    found = dict(zip(mids, zip(live, recorded, strict=True), strict=True))
    for target in targets:
        if target.pod is not None:
            out[target.key] = ((POD, target.pod.namespace, target.pod.name),)
        elif target.model_id is not None:
            (pods, workloads), history = found[target.model_id]
            out[target.key] = _chosen(pods, workloads, history, args)
    return out


async def _live(
    ctx: Context, mids: list[str]
) -> list[tuple[Listing[PodRecord], Listing[WorkloadRecord]]]:
    empty: tuple[Listing[PodRecord], Listing[WorkloadRecord]] = (Listing(()), Listing(()))
    if not mids:
        return []
    try:
        pods, workloads = await asyncio.gather(
            ctx.kube.pods_by_model.load_many([(m, PER_OBJECT) for m in mids]),
            ctx.kube.workloads_by_model.load_many([(m, PER_OBJECT) for m in mids]),
        )
    except BackendError:
        return [empty for _ in mids]  # what Redis recorded still names objects
    return list(zip(pods, workloads, strict=True))


async def _recorded(ctx: Context, mid: str) -> list[PlacementRecord]:
    page = await state_reads.placements(ctx, mid, RECORDED_PLACEMENTS, None)
    return page.readable()


def _chosen(
    pods: Listing[PodRecord],
    workloads: Listing[WorkloadRecord],
    history: Sequence[PlacementRecord],
    args: LogArgs,
) -> tuple[Regarding, ...]:
    objects: list[Regarding] = []
    live_pods = [p for p in pods.items if args.role is None or p.worker_role == args.role]
    objects += [(POD, p.namespace, p.name) for p in live_pods]
    if args.role is None:
        objects += [(WORKLOAD, w.namespace, w.name) for w in workloads.items]
        for placement in history:
            # Recorded by OpenRL, not checked by an API server: a name that cannot be
            # one is left out rather than spoil the query.
            if not valid_dns_label(placement.namespace):
                continue
            if valid_dns_name(placement.workload):
                objects.append((WORKLOAD, placement.namespace, placement.workload))
            names = [n for n in placement.pods if valid_dns_name(n)]
            objects += [(POD, placement.namespace, name) for name in names]
    if args.pod is not None:
        objects = [o for o in objects if o[0] == POD and o[2] == args.pod]
    return tuple(dict.fromkeys(objects))[:MAX_EVENT_OBJECTS]

"""The timeline from the cluster: Workload conditions, the Events of the model's pods,
Workloads, nodes and GPUs (the watch cache, then Cloud Logging's events log, as the
diagnosis reads them), device taints, and idle spans on its GPUs (DCGM duty)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from openrl_inspect.adapters.kubernetes import EventRecord, ObjectKey
from openrl_inspect.core.domain import TimelineKind, TimelineSource
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis import Unknown, lookups
from openrl_inspect.resolvers.diagnosis.evidence import KubeEvidence
from openrl_inspect.resolvers.diagnosis.text import clip, dur, ref, statement
from openrl_inspect.resolvers.metrics.reads import gpu_series
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.summary import evidence as summary_evidence
from openrl_inspect.resolvers.timeline.entries import Entry, Found, cut
from openrl_inspect.state.records import ModelRecord, PlacementRecord

# Idle GPUs: DCGM duty under IDLE_DUTY for at least IDLE_MIN_S, on at most this many
# GPUs of the model's newest placements.
IDLE_DUTY = 0.05
IDLE_MIN_S = 300.0
IDLE_GPUS = 8


# --- Kubernetes ------------------------------------------------------------------------------

_EVENT_KINDS = {
    "Pod": TimelineKind.POD_EVENT,
    "Workload": TimelineKind.WORKLOAD_EVENT,
    "Node": TimelineKind.NODE_EVENT,
}


def _event_entry(mid: str, e: EventRecord) -> Entry:
    r = e.regarding
    count = f" (x{e.count})" if e.count > 1 else ""
    text = statement(f"{r.kind} {r.name}: {e.reason or '?'}{count}: {clip(e.note or '', 100)}")
    key = ObjectKey(r.namespace, r.name)
    refs: tuple[str, ...] = (ref(r.kind, r.namespace, r.name),)
    if e.uid and e.name == e.uid:  # read from the events log: named by its insertId
        refs += (f"insertId {e.uid}",)
    at = e.last_at or e.first_at or 0.0
    next_ = (
        lookups.lookup(lookups.pod_query(key), pods=(key,))
        if r.kind == "Pod"
        else lookups.lookup(lookups.node_query(r.name), nodes=[r.name])
        if r.kind == "Node"
        else lookups.lookup(lookups.workloads_query(mid))
    )
    kind = _EVENT_KINDS.get(r.kind, TimelineKind.POD_EVENT)
    return Entry(at, TimelineSource.KUBERNETES, kind, text, mid, refs, next_)


async def kubernetes(ctx: Context, rec: ModelRecord, since: float, until: float) -> Found:
    kube, log_unknown = await summary_evidence.kube_evidence(ctx, rec)
    if isinstance(kube, Unknown):
        return Found([], unavailable=((TimelineSource.KUBERNETES, kube),))
    page = await state_reads.placements(ctx, rec.id, summary_evidence.PLACEMENTS_JUDGED, None)
    ours = _ours(ctx, kube, page.readable(), since)
    out = [_event_entry(rec.id, e) for e in kube.events if ours(e)]
    out += _conditions(rec.id, kube) + _taints(rec.id, kube)
    found = cut(out, since, until)
    if log_unknown is not None:
        return Found(found.entries, found.truncated, ((TimelineSource.CLOUD_LOGGING, log_unknown),))
    return found


def _ours(
    ctx: Context, kube: KubeEvidence, placements: list[PlacementRecord], since: float
) -> Callable[[EventRecord], bool]:
    """Whether an Event is the model's: a node's only while the model ran there (a node
    outlives it, and its later Events are another model's)."""
    on_node: dict[str, list[tuple[float, float]]] = {}
    for p in placements:
        begin = (p.admitted_at or since) - 120.0
        on_node.setdefault(p.node, []).append((begin, (p.released_at or ctx.now) + 900.0))
    live = {pod.node_name for pod in kube.pods if pod.node_name}

    def ours(e: EventRecord) -> bool:
        name, at = e.regarding.name, e.last_at or 0.0
        if e.regarding.kind != "Node" or name in live:
            return True
        return any(a <= at <= b for a, b in on_node.get(name, ()))

    return ours


def _conditions(mid: str, kube: KubeEvidence) -> list[Entry]:
    out = []
    for w in kube.workloads:
        for c in w.conditions:
            if c.last_transition is None:
                continue
            why = f" ({c.reason})" if c.reason else ""
            note = f": {clip(c.message, 90)}" if c.message else ""
            text = statement(f"Workload {w.name} {c.type}={c.status}{why}{note}")
            refs = (ref("Workload", w.namespace, w.name),)
            look = lookups.lookup(lookups.workloads_query(mid))
            kind = TimelineKind.WORKLOAD_CONDITION
            out.append(
                Entry(c.last_transition, TimelineSource.KUBERNETES, kind, text, mid, refs, look)
            )
    return out


def _taints(mid: str, kube: KubeEvidence) -> list[Entry]:
    out = []
    seen: set[tuple[str, str]] = set()
    for g in (*kube.gpus, *kube.placement_gpus):
        for t in g.taints:
            if t.time_added is None or (g.device, t.key) in seen:
                continue
            seen.add((g.device, t.key))
            value = f"={t.value}" if t.value else ""
            by = f" by DeviceTaintRule {t.rule}" if t.rule else ""
            gpu = g.uuid or g.device
            text = statement(
                f"GPU {gpu} on {g.node_name or '?'} tainted {t.key}{value}:{t.effect}{by}"
            )
            refs = (f"GPU {gpu}", *((ref("DeviceTaintRule", "", t.rule),) if t.rule else ()))
            look = lookups.lookup(
                lookups.gpu_query(g.uuid) if g.uuid else None, nodes=[g.node_name]
            )
            kind = TimelineKind.DEVICE_TAINT
            out.append(Entry(t.time_added, TimelineSource.KUBERNETES, kind, text, mid, refs, look))
    return out


# --- Prometheus ------------------------------------------------------------------------------


async def prometheus(ctx: Context, rec: ModelRecord, since: float, until: float) -> Found:
    ctx.metrics.require()  # not configured is said, whatever the model's placements
    page = await state_reads.placements(ctx, rec.id, summary_evidence.PLACEMENTS_JUDGED, None)
    spans: list[tuple[str, str, float, float]] = []  # (uuid, node, start, end)
    for p in page.readable():
        start = max(since, p.admitted_at or since)
        end = min(until, p.released_at or ctx.now)
        if end - start >= IDLE_MIN_S:
            spans += [(u, p.node, start, end) for u in p.gpu_ids if u]
    spans = spans[:IDLE_GPUS]
    if not spans:
        return Found([])
    series = await asyncio.gather(
        *(gpu_series(ctx, u, "duty", s, e, max(60.0, (e - s) / 200)) for u, _, s, e in spans)
    )
    out = []
    for (uuid, node, _, _), got in zip(spans, series, strict=True):
        points = got.series.points if got.series is not None else ()
        run: list[float] = []
        for point in (*points, None):
            if point is not None and point.v < IDLE_DUTY:
                run.append(point.t)
                continue
            if run and run[-1] - run[0] >= IDLE_MIN_S:
                out.append(
                    Entry(
                        run[0],
                        TimelineSource.PROMETHEUS,
                        TimelineKind.GPU_IDLE,
                        f"GPU {uuid} on {node} idle (DCGM duty under "
                        f"{IDLE_DUTY:.0%}) for {dur(run[-1] - run[0])}",
                        rec.id,
                        (f"GPU {uuid}", f"Node {node}"),
                        lookups.lookup(lookups.gpu_query(uuid), nodes=[node]),
                    )
                )
            run = []
    return cut(out, since, until)

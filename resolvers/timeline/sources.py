"""A model's timeline, one backend at a time: what each says happened, and when.

Each source reads through the request's loaders (the very reads a summary makes, so a
timeline beside a summary costs little more) and answers its entries, or raises the
backend's error: the timeline then says that source was unavailable and keeps the rest.
Each source is bounded on its own (``PER_SOURCE`` entries) and says when it was cut.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from openrl_inspect.adapters.kubernetes import EventRecord, ObjectKey
from openrl_inspect.adapters.logs import LogQuery
from openrl_inspect.core.domain import OpStatus, TimelineKind, TimelineSource
from openrl_inspect.core.errors import BackendError, BackendNotConfigured
from openrl_inspect.loaders.logs import WorkerRead
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis import LogSearch, Lookup, Unknown, lookups
from openrl_inspect.resolvers.diagnosis.text import clip, dur, ref, statement
from openrl_inspect.resolvers.metrics.reads import gpu_series
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.resolvers.summary import evidence as summary_evidence
from openrl_inspect.state.records import ModelRecord

# Entries per source and model before the merge (the merged answer is cut again).
PER_SOURCE = 200
# The recent steps read for ops that failed and the last step.
STEPS_READ = 50
# Idle GPUs: DCGM duty under IDLE_DUTY for at least IDLE_MIN_S, on at most this many
# GPUs of the model's newest placements.
IDLE_DUTY = 0.05
IDLE_MIN_S = 300.0
IDLE_GPUS = 8
# Error lines read from Cloud Logging per model, oldest first; distinct messages kept.
LOG_LINES = 200
LOG_MESSAGES = 20
_DIGITS = re.compile(r"\d+")
# A traceback's frames and header, shipped a line an entry: its last line says it.
_CONTINUATION = re.compile(r'^(\s|File "|Traceback \(most recent call last\))')


@dataclass(frozen=True, slots=True)
class Entry:
    """One moment of a model's history. ``refs`` name the objects (and log entries'
    insertIds) it is about; ``next`` where to look."""

    at: float
    source: TimelineSource
    kind: TimelineKind
    statement: str
    model_id: str
    refs: tuple[str, ...] = ()
    next: Lookup = field(default_factory=Lookup)

    @property
    def key(self) -> str:
        """A stable tie-break among entries of one moment (for the order and cursors)."""
        first = self.refs[0] if self.refs else ""
        return f"{self.model_id}|{self.source}|{self.kind}|{first}|{self.statement}"


@dataclass(frozen=True, slots=True)
class Found:
    """A source's entries for one model; ``truncated`` when it had more."""

    entries: list[Entry]
    truncated: bool = False
    unavailable: tuple[tuple[TimelineSource, Unknown], ...] = ()


def _cut(entries: list[Entry], since: float, until: float) -> Found:
    inside = [e for e in entries if since <= e.at <= until]
    inside.sort(key=lambda e: (-e.at, e.key))
    return Found(inside[:PER_SOURCE], len(inside) > PER_SOURCE)


# --- Redis ---------------------------------------------------------------------------------


async def redis(ctx: Context, rec: ModelRecord, since: float, until: float) -> Found:
    mid = rec.id
    steps_page, first_step, workers_page, placements_page = await asyncio.gather(
        state_reads.model_steps(ctx, mid, STEPS_READ, None),
        state_reads.model_step(ctx, mid, 0),
        state_reads.model_workers(ctx, mid, ctx.bounds.max_page_size, None),
        state_reads.placements(ctx, mid, summary_evidence.PLACEMENTS_JUDGED, None),
    )
    steps = steps_page.readable()
    op_pages = await asyncio.gather(
        *(state_reads.step_ops(ctx, mid, s.step, ctx.bounds.max_page_size, None) for s in steps)
    )
    out: list[Entry] = []
    model = f"model {mid}"
    for state, at in rec.transitions.items():
        reason = (
            f": {clip(rec.failure_reason, 90)}" if state == "FAILED" and rec.failure_reason else ""
        )
        out.append(
            Entry(
                at,
                TimelineSource.REDIS,
                TimelineKind.STATE,
                statement(f"Model {state.lower()}{reason}"),
                mid,
                (model,),
                lookups.lookup(lookups.summary_query(mid)),
            )
        )
    if first_step is not None and first_step.finished_at is not None:
        out.append(
            Entry(
                first_step.finished_at,
                TimelineSource.REDIS,
                TimelineKind.FIRST_STEP,
                "First step finished (step 0)",
                mid,
                (model,),
                lookups.lookup(lookups.steps_query(mid)),
            )
        )
    done = [s for s in steps if s.finished_at is not None]
    if done:
        last = max(done, key=lambda s: s.step)
        out.append(
            Entry(
                last.finished_at or 0.0,
                TimelineSource.REDIS,
                TimelineKind.LAST_STEP,
                f"Last step finished (step {last.step})",
                mid,
                (model,),
                lookups.lookup(lookups.step_ops_query(mid, last.step)),
            )
        )
    for page in op_pages:
        for op in page.readable():
            if op.status != OpStatus.FAILED or op.finished_at is None:
                continue
            error = clip(op.error or "no error recorded", 100)
            where = f" at step {op.step}" if op.step is not None else ""
            out.append(
                Entry(
                    op.finished_at,
                    TimelineSource.REDIS,
                    TimelineKind.OP_FAILED,
                    statement(f"{clip(op.kind, 40)}{where} failed: {error}"),
                    mid,
                    (f"op {op.id}",),
                    lookups.lookup(lookups.op_query(op.id)),
                )
            )
    for w in workers_page.readable():
        worker = (f"worker {w.id}", f"Node {w.node}")
        if w.started_at is not None:
            out.append(
                Entry(
                    w.started_at,
                    TimelineSource.REDIS,
                    TimelineKind.WORKER_BACK,
                    f"{w.role} worker {w.id} started on {w.node}",
                    mid,
                    worker,
                    lookups.lookup(lookups.worker_query(w.id)),
                )
            )
        if not state_reads.worker_alive(ctx, w) and w.last_heartbeat_at is not None:
            out.append(
                Entry(
                    w.last_heartbeat_at,
                    TimelineSource.REDIS,
                    TimelineKind.WORKER_LOST,
                    f"{w.role} worker {w.id} last heartbeat (silent since)",
                    mid,
                    worker,
                    lookups.lookup(lookups.worker_query(w.id)),
                )
            )
    for p in placements_page.readable():
        refs = (ref("Workload", p.namespace, p.workload), f"Node {p.node}")
        if p.admitted_at is not None:
            out.append(
                Entry(
                    p.admitted_at,
                    TimelineSource.REDIS,
                    TimelineKind.PLACEMENT_ADMITTED,
                    statement(
                        f"Placed on {p.node}: {len(p.gpu_ids)} GPU(s), pods {', '.join(p.pods[:2])}"
                    ),
                    mid,
                    refs,
                    lookups.lookup(lookups.node_query(p.node), nodes=[p.node]),
                )
            )
        if p.released_at is not None:
            held = f" after {dur(p.released_at - p.admitted_at)}" if p.admitted_at else ""
            out.append(
                Entry(
                    p.released_at,
                    TimelineSource.REDIS,
                    TimelineKind.PLACEMENT_RELEASED,
                    f"Released its GPUs on {p.node}{held}",
                    mid,
                    refs,
                    lookups.lookup(lookups.node_query(p.node), nodes=[p.node]),
                )
            )
    return _cut(out, since, until)


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
    mid = rec.id
    # A node's Events belong to the model while it ran there (a node outlives it).
    page = await state_reads.placements(ctx, mid, summary_evidence.PLACEMENTS_JUDGED, None)
    on_node: dict[str, list[tuple[float, float]]] = {}
    for p in page.readable():
        begin = (p.admitted_at or since) - 120.0
        on_node.setdefault(p.node, []).append((begin, (p.released_at or ctx.now) + 900.0))
    live = {pod.node_name for pod in kube.pods if pod.node_name}
    out = [
        _event_entry(mid, e)
        for e in kube.events
        if e.regarding.kind != "Node"
        or e.regarding.name in live
        or any(a <= (e.last_at or 0.0) <= b for a, b in on_node.get(e.regarding.name, ()))
    ]
    for w in kube.workloads:
        for c in w.conditions:
            if c.last_transition is None:
                continue
            why = f" ({c.reason})" if c.reason else ""
            note = f": {clip(c.message, 90)}" if c.message else ""
            out.append(
                Entry(
                    c.last_transition,
                    TimelineSource.KUBERNETES,
                    TimelineKind.WORKLOAD_CONDITION,
                    statement(f"Workload {w.name} {c.type}={c.status}{why}{note}"),
                    mid,
                    (ref("Workload", w.namespace, w.name),),
                    lookups.lookup(lookups.workloads_query(mid)),
                )
            )
    seen: set[tuple[str, str]] = set()
    for g in (*kube.gpus, *kube.placement_gpus):
        for t in g.taints:
            if t.time_added is None or (g.device, t.key) in seen:
                continue
            seen.add((g.device, t.key))
            value = f"={t.value}" if t.value else ""
            by = f" by DeviceTaintRule {t.rule}" if t.rule else ""
            rule_refs = (ref("DeviceTaintRule", "", t.rule),) if t.rule else ()
            gpu = g.uuid or g.device
            out.append(
                Entry(
                    t.time_added,
                    TimelineSource.KUBERNETES,
                    TimelineKind.DEVICE_TAINT,
                    statement(
                        f"GPU {gpu} on {g.node_name or '?'} tainted {t.key}{value}:{t.effect}{by}"
                    ),
                    mid,
                    (f"GPU {gpu}", *rule_refs),
                    lookups.lookup(
                        lookups.gpu_query(g.uuid) if g.uuid else None, nodes=[g.node_name]
                    ),
                )
            )
    found = _cut(out, since, until)
    if log_unknown is not None:
        return Found(found.entries, found.truncated, ((TimelineSource.CLOUD_LOGGING, log_unknown),))
    return found


# --- Prometheus ------------------------------------------------------------------------------


async def prometheus(ctx: Context, rec: ModelRecord, since: float, until: float) -> Found:
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
    return _cut(out, since, until)


# --- Cloud Logging ---------------------------------------------------------------------------


def _shape(message: str) -> str:
    """A message with its numbers masked: lines differing only in ids, counts or times
    are one message."""
    return _DIGITS.sub("#", " ".join(message.split()))[:160]


async def cloud_logging(ctx: Context, rec: ModelRecord, since: float, until: float) -> Found:
    if not ctx.logs.cloud_logging:
        raise BackendNotConfigured("cloud_logging", "Cloud Logging is not configured")
    query = LogQuery(
        start=datetime.fromtimestamp(since, tz=UTC),
        end=datetime.fromtimestamp(max(until, since + 1.0), tz=UTC),
        model_id=rec.id,
        severity_floor="ERROR",
        newest_first=False,
        limit=LOG_LINES,
    )
    page = await ctx.logs.worker.load(WorkerRead("cloud_logging", query))
    firsts: dict[str, Entry] = {}
    for line in page.entries:
        shape = _shape(line.message)
        if shape in firsts or _CONTINUATION.match(line.message):
            continue
        at = line.timestamp.timestamp()
        pods = (ObjectKey("", line.pod),) if line.pod else ()
        search = LogSearch(pods=(), start=at - 60.0, end=at + 60.0, severity="ERROR")
        refs = tuple(
            x
            for x in (
                f"insertId {line.insert_id}" if line.insert_id else None,
                f"pod {line.pod}" if line.pod else None,
            )
            if x
        )
        firsts[shape] = Entry(
            at,
            TimelineSource.CLOUD_LOGGING,
            TimelineKind.LOG_ERROR,
            statement(f"{line.severity} {line.role or 'worker'}: {clip(line.message, 120)}"),
            rec.id,
            refs,
            Lookup(logs=search, pods=pods),
        )
        if len(firsts) >= LOG_MESSAGES:
            break
    found = _cut(list(firsts.values()), since, until)
    return Found(found.entries, found.truncated or page.truncated)


SOURCES = {
    TimelineSource.REDIS: redis,
    TimelineSource.KUBERNETES: kubernetes,
    TimelineSource.PROMETHEUS: prometheus,
    TimelineSource.CLOUD_LOGGING: cloud_logging,
}


async def gather(
    ctx: Context, rec: ModelRecord, since: float, until: float, sources: Sequence[TimelineSource]
) -> list[Found]:
    """Every asked source's entries for one model; a failing source is said, not raised."""

    async def one(source: TimelineSource) -> Found:
        try:
            return await SOURCES[source](ctx, rec, since, until)
        except BackendError as exc:
            return Found([], unavailable=((source, summary_evidence.unknown(exc.backend, exc)),))

    return list(await asyncio.gather(*(one(s) for s in sources)))

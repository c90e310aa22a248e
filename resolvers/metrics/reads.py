"""Resolvers for GPU activity (DCGM) and serving (vLLM) metrics.

GPUs are identified by their device UUID, as OpenRL records them in placements and
workers (``gpu_ids``) and as DCGM labels its series (``UUID``); a caller that also knows
a GPU's node and index passes a ``GpuKey`` to get the exporter's Hostname + gpu
fallback join. Every function fetches through ``ctx.metrics`` (per-request loaders that
make one metrics call per window and metric, whatever the number of GPUs) and returns
records, never schema types.

Other areas (the Kubernetes GPU and Node types) reuse ``gpu_duty``, ``gpu_series`` and
``node_duty``: call them from field resolvers at any depth, and a whole query level
still costs one metrics call.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from openrl_inspect.adapters.prometheus import (
    CHART_METRICS,
    Activity,
    Duty,
    GpuKey,
    GpuSeries,
    HeldInterval,
    NodeDuty,
    RawAnswer,
    VllmStats,
    check_metric,
    check_window,
)
from openrl_inspect.adapters.prometheus import (
    # Re-exported: the entries publish it as the bound of `windowSeconds` (agents.limits).
    MAX_WINDOW_S as MAX_WINDOW_S,
)
from openrl_inspect.core.errors import Forbidden, InvalidInput
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.state.records import PlacementRecord

# The most GPUs or nodes one root field may name.
MAX_GPUS = 10_000
MAX_ID_CHARS = 256
DEFAULT_SERIES_S = 3600.0


@dataclass(frozen=True)
class GpuDutyRecord:
    uuid: str
    window_s: float
    at: float  # the window is (at - window_s, at]
    duty: Duty | None  # None: no DCGM samples for the GPU in the window


@dataclass(frozen=True)
class NodeDutyRecord:
    node: str
    window_s: float
    at: float
    duty: NodeDuty | None


@dataclass(frozen=True)
class GpuSeriesRecord:
    uuid: str
    requested: str  # the metric asked for (``duty`` or a DCGM name)
    start: float
    end: float
    series: GpuSeries | None


@dataclass(frozen=True)
class HeldSpan:
    """A GPU held by a model's placement over [start, end], clipped to the window."""

    model_id: str
    placement_id: str
    start: float
    end: float


@dataclass(frozen=True)
class HeldGpu:
    uuid: str
    node: str | None
    spans: tuple[HeldSpan, ...]
    activity: Activity | None  # this GPU's duty weighted over its held spans

    @property
    def held_s(self) -> float:
        return sum(s.end - s.start for s in self.spans)


@dataclass(frozen=True)
class GpuActivityRecord:
    """What a model (or session) held over a window, and how busy it was."""

    window_s: float
    start: float
    end: float
    activity: Activity | None  # all GPUs together, weighted by time held
    gpus: tuple[HeldGpu, ...]
    # More placements (or models) than one page: the oldest were left out.
    truncated: bool


@dataclass(frozen=True)
class SamplerRecord:
    pod: str
    worker_id: str | None
    window_s: float
    stats: VllmStats | None


# ---------------------------------------------------------------- validation


def _check_name(kind: str, value: str) -> str:
    if not value or len(value) > MAX_ID_CHARS:
        raise InvalidInput(f"a {kind} must be 1 to {MAX_ID_CHARS} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"a {kind} must be valid Unicode") from None
    return value


def _check_count(kind: str, n: int) -> None:
    if n > MAX_GPUS:
        raise InvalidInput(f"at most {MAX_GPUS} {kind} per field")


def gpu_key(gpu: str | GpuKey) -> GpuKey:
    """A UUID as a ``GpuKey`` (validated); a ``GpuKey`` as itself (its UUID validated)."""
    if isinstance(gpu, GpuKey):
        if gpu.uuid:
            _check_name("GPU UUID", gpu.uuid)
        return gpu
    return GpuKey(_check_name("GPU UUID", gpu))


# ---------------------------------------------------------------- per GPU / node


async def gpu_duty(
    ctx: Context, gpus: Sequence[str | GpuKey], window_s: float, at: float | None = None
) -> list[GpuDutyRecord]:
    """Mean duty (0..1) of each GPU over ``(at - window_s, at]`` (``at``: the request's
    now), in the order given. Batch-friendly: all calls of one query level with the same
    window and ``at`` share one metrics call."""
    w = check_window(window_s)
    when = ctx.now if at is None else at
    if not math.isfinite(when):
        raise InvalidInput("time must be finite")
    _check_count("GPUs", len(gpus))
    keys = [gpu_key(g) for g in gpus]
    ctx.metrics.require()
    duties = await ctx.metrics.duty.load_many([(k, w, when) for k in keys])
    return [GpuDutyRecord(k.uuid, w, when, d) for k, d in zip(keys, duties, strict=True)]


async def node_duty(ctx: Context, nodes: Sequence[str], window_s: float) -> list[NodeDutyRecord]:
    """Mean duty of each node's GPUs over the window (DCGM ``Hostname``), in order."""
    w = check_window(window_s)
    _check_count("nodes", len(nodes))
    names = [_check_name("node name", n) for n in nodes]
    ctx.metrics.require()
    found = await ctx.metrics.node_duty.load_many([(n, w, ctx.now) for n in names])
    return [NodeDutyRecord(n, w, ctx.now, d) for n, d in zip(names, found, strict=True)]


async def gpu_series(
    ctx: Context,
    gpu: str | GpuKey,
    metric: str,
    start: float | None = None,
    end: float | None = None,
    step: float | None = None,
) -> GpuSeriesRecord:
    """One GPU's ``metric`` (``duty`` or a DCGM metric) from ``start`` (default an hour
    before ``end``) to ``end`` (default now), one point per ``step`` (raised to keep
    the point and sample caps)."""
    key = gpu_key(gpu)
    check_metric(metric, CHART_METRICS)
    t1 = ctx.now if end is None else end
    t0 = t1 - DEFAULT_SERIES_S if start is None else start
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0:
        raise InvalidInput("range end must be after its start")
    if t1 - t0 > MAX_WINDOW_S:
        raise InvalidInput("range must be at most 31 days")
    if step is not None and not (math.isfinite(step) and step > 0):
        raise InvalidInput("step must be a positive number of seconds")
    ctx.metrics.require()
    series = await ctx.metrics.series.load((key, metric, t0, t1, step))
    return GpuSeriesRecord(key.uuid, metric, t0, t1, series)


def device_key(uuid: str | None, node: str | None, index: int | None) -> GpuKey | None:
    """A GPU known by its UUID and/or its node and index (as Kubernetes publishes it);
    None when neither identifies it."""
    if uuid:
        return GpuKey(uuid, node or None, index)
    if node and index is not None:
        return GpuKey("", node, index)
    return None


async def device_duty(
    ctx: Context, uuid: str | None, node: str | None, index: int | None, window_s: float
) -> GpuDutyRecord | None:
    """``gpu_duty`` for one device (batched with every other caller of the level)."""
    key = device_key(uuid, node, index)
    if key is None:
        check_window(window_s)
        return None
    return (await gpu_duty(ctx, [key], window_s))[0]


async def gpus_duty(
    ctx: Context, uuids: Iterable[str], window_s: float, at: float | None = None
) -> list[GpuDutyRecord]:
    """``gpu_duty`` over recorded ``gpu_ids`` (duplicates and blanks dropped)."""
    return await gpu_duty(ctx, [u for u in dict.fromkeys(uuids) if u], window_s, at)


async def placement_gpu_duty(
    ctx: Context,
    gpu_ids: Sequence[str],
    admitted_at: float | None,
    released_at: float | None,
    window_s: float,
) -> list[GpuDutyRecord]:
    """Each GPU of a placement, over the last ``window_s`` seconds it held them: the
    window ends at the release (now while held) and starts no earlier than the
    admission. Time-weighted through the activity loader, so the placements of a whole
    query level (released at different times) still share one metrics call."""
    w = check_window(window_s)
    ctx.metrics.require()
    end = ctx.now if released_at is None else min(released_at, ctx.now)
    start = end - w if admitted_at is None else max(admitted_at, end - w)
    uuids = [gpu_key(u).uuid for u in dict.fromkeys(gpu_ids) if u]
    if end <= start:
        return [GpuDutyRecord(u, w, end, None) for u in uuids]
    groups = [((HeldInterval(GpuKey(u), start, end),), w) for u in uuids]
    found = await ctx.metrics.activity.load_many(groups)
    return [GpuDutyRecord(u, w, end, _duty(a)) for u, a in zip(uuids, found, strict=True)]


def _duty(act: Activity | None) -> Duty | None:
    if act is None or act.duty is None or not act.metrics:
        return None
    return Duty(act.duty, act.metrics[0], "uuid")


# ---------------------------------------------------------------- activity


def held_spans(
    placements: Iterable[PlacementRecord], lo: float, hi: float
) -> dict[str, tuple[str | None, list[HeldSpan]]]:
    """Per GPU UUID (first held first, then by UUID): its node and the spans it was
    held within ``[lo, hi]``, oldest first; a placement not yet released is held until
    ``hi``."""
    out: dict[str, tuple[str | None, list[HeldSpan]]] = {}
    for p in placements:
        if p.admitted_at is None:
            continue
        start = max(p.admitted_at, lo)
        end = min(hi if p.released_at is None else p.released_at, hi)
        if end <= start:
            continue
        for uuid in dict.fromkeys(p.gpu_ids):
            if not uuid:
                continue
            _, spans = out.setdefault(uuid, (p.node or None, []))
            spans.append(HeldSpan(p.model_id, p.id, start, end))
    for _, spans in out.values():
        spans.sort(key=lambda s: (s.start, s.end, s.placement_id))
    return dict(sorted(out.items(), key=lambda kv: (kv[1][1][0].start, kv[0])))


def _intervals(uuid: str, spans: Iterable[HeldSpan]) -> tuple[HeldInterval, ...]:
    key = GpuKey(uuid)
    return tuple(HeldInterval(key, s.start, s.end) for s in spans)


async def activity_of(
    ctx: Context, placements: Sequence[PlacementRecord], window_s: float, truncated: bool
) -> GpuActivityRecord:
    """Time-weighted duty of the GPUs ``placements`` held over the window: all of them
    together and each one; one activity call for every caller of the query level."""
    lo, hi = ctx.now - window_s, ctx.now
    ctx.metrics.require()
    held = held_spans(placements, lo, hi)
    if not held:
        return GpuActivityRecord(window_s, lo, hi, None, (), truncated)
    per_gpu = [(u, node, spans, _intervals(u, spans)) for u, (node, spans) in held.items()]
    whole = tuple(iv for *_, ivs in per_gpu for iv in ivs)
    keys = [(whole, window_s), *[(ivs, window_s) for *_, ivs in per_gpu]]
    found = await ctx.metrics.activity.load_many(keys)
    gpus = tuple(
        HeldGpu(u, node, tuple(spans), act)
        for (u, node, spans, _), act in zip(per_gpu, found[1:], strict=True)
    )
    return GpuActivityRecord(window_s, lo, hi, found[0], gpus, truncated)


async def model_gpu_activity(ctx: Context, mid: str, window_s: float) -> GpuActivityRecord:
    """The GPUs the model's placements (Redis history) held over the last
    ``window_s`` seconds, with their duty weighted by the time held."""
    w = check_window(window_s)
    ctx.metrics.require()
    page = await state_reads.placements(ctx, mid, ctx.bounds.max_page_size, None)
    return await activity_of(ctx, page.readable(), w, page.has_next)


async def session_gpu_activity(ctx: Context, sid: str, window_s: float) -> GpuActivityRecord:
    """The same over every model of the session (one page of its newest models)."""
    w = check_window(window_s)
    ctx.metrics.require()
    size = ctx.bounds.max_page_size
    models = await state_reads.session_models(ctx, sid, size, None)
    pages = await asyncio.gather(
        *(state_reads.placements(ctx, rec.id, size, None) for rec in models.readable())
    )
    placements = [rec for page in pages for rec in page.readable()]
    truncated = models.has_next or any(p.has_next for p in pages)
    return await activity_of(ctx, placements, w, truncated)


# ---------------------------------------------------------------- vLLM


async def model_sampling(ctx: Context, mid: str, window_s: float) -> list[SamplerRecord]:
    """vLLM stats of the model's sampler pods: its workers with role ``sampler``; when
    Redis names none, the pods of its placements that export vLLM metrics."""
    w = check_window(window_s)
    ctx.metrics.require()
    size = ctx.bounds.max_page_size
    workers = await state_reads.model_workers(ctx, mid, size, None)
    samplers = {rec.pod: rec.id for rec in workers.readable() if rec.role == "sampler" and rec.pod}
    if samplers:
        pods = list(samplers)
        found = await ctx.metrics.vllm.load_many([(p, w, ctx.now) for p in pods])
        return [SamplerRecord(p, samplers[p], w, s) for p, s in zip(pods, found, strict=True)]
    placements = await state_reads.placements(ctx, mid, size, None)
    pods = list(dict.fromkeys(p for rec in placements.readable() for p in rec.pods if p))
    found = await ctx.metrics.vllm.load_many([(p, w, ctx.now) for p in pods])
    return [SamplerRecord(p, None, w, s) for p, s in zip(pods, found, strict=True) if s is not None]


async def pod_vllm(ctx: Context, pod: str, window_s: float) -> VllmStats | None:
    w = check_window(window_s)
    ctx.metrics.require()
    if not pod:
        return None
    return await ctx.metrics.vllm.load((pod, w, ctx.now))


# ---------------------------------------------------------------- raw


async def prometheus_query(
    ctx: Context,
    query: str,
    at: float | None,
    start: float | None,
    end: float | None,
    step: float | None,
) -> RawAnswer:
    """The operators' raw PromQL (off unless enabled; capped)."""
    if not ctx.principal.operator:
        # Checked before the switch, so a viewer does not learn whether it is on.
        raise Forbidden("prometheusQuery is for operators only.")
    return await ctx.metrics.raw.run(query, now=ctx.now, at=at, start=start, end=end, step=step)

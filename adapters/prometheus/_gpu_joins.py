"""The pure functions both GPU layers share: joining answers to GPUs, time weighting.

Joining DCGM series to GPUs: by the ``UUID`` label; for a ``GpuKey`` that also names its
node and index, series whose ``UUID`` label is empty or missing (some DRA setups) are
joined on ``Hostname`` + ``gpu`` instead. The exporter's ``Hostname`` label is the node
name when ``NODE_NAME`` is set in its pod (see deploy/base/dcgm-exporter/dcgm-exporter.yaml).

Time weighting: each duty point is the mean over the step before it, weighed by how
much of that step a GPU was held; held time without points is held but not covered.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, TypeVar

from openrl_inspect.adapters.prometheus._gpu import (
    DUTY_METRICS,
    DUTY_SCALE,
    Activity,
    Duty,
    DutyMetric,
    GpuKey,
    HeldInterval,
    XidErrors,
)
from openrl_inspect.adapters.prometheus._source import Sample
from openrl_inspect.core.errors import InvalidInput

T = TypeVar("T")


def gpu_ref(labels: Mapping[str, str]) -> str | tuple[str, str] | None:
    """How a per-GPU answer row joins: its ``UUID`` when non-empty, else its
    (``Hostname``, ``gpu``) pair, else not at all."""
    uuid = labels.get("UUID", "")
    if uuid:
        return uuid
    hostname, gpu = labels.get("Hostname", ""), labels.get("gpu", "")
    if hostname and gpu:
        return (hostname, gpu)
    return None


def index_by_gpu(
    items: Iterable[tuple[Mapping[str, str], T]],
) -> tuple[dict[str, T], dict[tuple[str, str], T]]:
    """Rows keyed by UUID and by (Hostname, gpu); the first row of a key wins."""
    by_uuid: dict[str, T] = {}
    by_host: dict[tuple[str, str], T] = {}
    for labels, payload in items:
        ref = gpu_ref(labels)
        if isinstance(ref, str):
            by_uuid.setdefault(ref, payload)
        elif ref is not None:
            by_host.setdefault(ref, payload)
    return by_uuid, by_host


def join_rows(
    keys: Sequence[GpuKey], by_uuid: Mapping[str, T], by_host: Mapping[tuple[str, str], T]
) -> list[tuple[T, Literal["uuid", "hostname_gpu"]] | None]:
    """Per key: its UUID's answer, else (node, index)'s answer, else None."""
    out: list[tuple[T, Literal["uuid", "hostname_gpu"]] | None] = []
    for key in keys:
        if key.uuid and key.uuid in by_uuid:
            out.append((by_uuid[key.uuid], "uuid"))
            continue
        hk = key.host_key
        if hk is not None and hk in by_host:
            out.append((by_host[hk], "hostname_gpu"))
            continue
        out.append(None)
    return out


def key_sets(keys: Iterable[GpuKey]) -> dict[str, list[str]]:
    """The label sets to select ``keys``: UUIDs, and nodes of keys with node + index."""
    uuids = sorted({k.uuid for k in keys if k.uuid})
    nodes = sorted({k.node for k in keys if k.host_key is not None and k.node})
    sets: dict[str, list[str]] = {}
    if uuids:
        sets["UUID"] = uuids
    if nodes:
        sets["Hostname"] = nodes
    return sets


def pick_duty(
    keys: Sequence[GpuKey],
    per_metric: Mapping[str, tuple[Mapping[str, float], Mapping[tuple[str, str], float]]],
) -> list[Duty | None]:
    """Per key: GR_ENGINE_ACTIVE's mean if the GPU exports it, else GPU_UTIL / 100."""
    out: list[Duty | None] = [None] * len(keys)
    for metric in DUTY_METRICS:
        by_uuid, by_host = per_metric.get(metric, ({}, {}))
        for i, hit in enumerate(join_rows(keys, by_uuid, by_host)):
            if out[i] is None and hit is not None and math.isfinite(hit[0]):
                out[i] = Duty(hit[0] / DUTY_SCALE[metric], metric, hit[1])
    return out


# ---------------------------------------------------------------- time weighting


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    """Length of the intersection of [a0, a1] and [b0, b1] (0 when disjoint)."""
    return max(0.0, min(a1, b1) - max(a0, b0))


def weigh_points(
    points: Sequence[Sample], step: float, start: float, end: float
) -> tuple[float, float]:
    """Each point ``(t, v)`` is the mean over ``(t - step, t]``; weigh it by how much of
    that span lies inside the held interval ``[start, end]``. Returns
    ``(sum of value * seconds, seconds covered)``. NaN points count as missing."""
    total = 0.0
    covered = 0.0
    for p in points:
        if not math.isfinite(p.v):
            continue
        w = overlap(p.t - step, p.t, start, end)
        if w > 0:
            total += p.v * w
            covered += w
    return total, covered


def time_weighted_activity(
    intervals: Sequence[HeldInterval],
    points_for: Mapping[GpuKey, tuple[DutyMetric, Sequence[Sample]] | None],
    step: float,
    truncated: bool = False,
) -> Activity:
    """Duty over ``intervals`` weighted by time held, from per-GPU duty points (0..1,
    each the mean over the ``step`` before it). Held time without points is reported
    as held but not covered, and does not pull the mean down."""
    held = 0.0
    covered = 0.0
    weighted = 0.0
    metrics: set[DutyMetric] = set()
    for iv in intervals:
        if iv.end <= iv.start:
            continue
        held += iv.end - iv.start
        found = points_for.get(iv.key)
        if found is None:
            continue
        metric, points = found
        w_sum, w_cov = weigh_points(points, step, iv.start, iv.end)
        if w_cov > 0:
            weighted += w_sum
            covered += w_cov
            metrics.add(metric)
    return Activity(
        duty=weighted / covered if covered > 0 else None,
        held_gpu_seconds=held,
        covered_gpu_seconds=covered,
        gpus=len({iv.key for iv in intervals}),
        metrics=tuple(m for m in DUTY_METRICS if m in metrics),
        step=step,
        truncated=truncated,
    )


def activity_window(
    groups: Sequence[Sequence[HeldInterval]],
) -> tuple[float, float, list[GpuKey]] | None:
    """The union window and the distinct GPUs of all ``groups`` (None: nothing held)."""
    starts: list[float] = []
    ends: list[float] = []
    keys: dict[GpuKey, None] = {}
    for group in groups:
        for iv in group:
            if not (math.isfinite(iv.start) and math.isfinite(iv.end)):
                raise InvalidInput("held interval bounds must be finite")
            if iv.end > iv.start:
                starts.append(iv.start)
                ends.append(iv.end)
                keys[iv.key] = None
    if not starts:
        return None
    return min(starts), max(ends), list(keys)


def mean_or_none(values: Iterable[float]) -> float | None:
    vals = [v for v in values if math.isfinite(v)]
    return sum(vals) / len(vals) if vals else None


def summarize_xid(samples: Sequence[Sample]) -> XidErrors:
    ordered = sorted(samples, key=lambda p: p.t)
    nonzero = [p for p in ordered if math.isfinite(p.v) and p.v != 0]
    last = nonzero[-1] if nonzero else None
    return XidErrors(
        latest=int(ordered[-1].v) if ordered and math.isfinite(ordered[-1].v) else 0,
        last_nonzero=int(last.v) if last else None,
        last_nonzero_at=last.t if last else None,
        nonzero_samples=len(nonzero),
    )

"""Sampler throughput from the recorded batches: pure functions, no backend.

A batch is recorded when it ends: its time ``at`` is its end and ``at - latency_s`` its
start. Throughput is generated tokens per wall second: the tokens of the batches over
the span from the earliest one's start to the latest one's end, so idle time between
batches (a sampler waiting for work) lowers it. The rate while batches run is the
tokens over their summed latency. A model's throughput now is compared with the same
throughput over the batches recorded before the window (the earlier part of what the
recorder kept): ``ratio_to_baseline`` well under 1 is a sampler slower than it was.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from openrl_inspect.state.records import SamplerBatchRecord

__all__ = [
    "MAX_WORKERS",
    "MIN_BASELINE_BATCHES",
    "MIN_WINDOW_BATCHES",
    "BatchBasics",
    "SamplingStats",
    "WorkerSampling",
    "basics",
    "quantile",
    "sampler_throughput",
    "sampling_stats",
]

# Fewer batches than these on either side: no baseline ratio (too noisy to compare).
MIN_BASELINE_BATCHES = 10
MIN_WINDOW_BATCHES = 3
# Per-worker rows of one model, most batches first; more are cut and flagged.
MAX_WORKERS = 50


def quantile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile by rank (the value at index ``int(q * n)`` of the sorted
    values, as the model summary's p90), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _span(batches: Sequence[SamplerBatchRecord]) -> float | None:
    """Wall seconds from the earliest batch's start to the latest one's end."""
    if not batches:
        return None
    first = min(b.at - (b.latency_s or 0.0) for b in batches)
    span = max(b.at for b in batches) - first
    return span if span > 0 else None


def sampler_throughput(
    batches: Iterable[SamplerBatchRecord], start: float, end: float
) -> float | None:
    """Generated tokens per wall second of the batches that ended in ``[start, end)``.

    Batches that did not report their generated tokens are left out. None when no
    batch is left or their span is zero (one batch without a latency).
    """
    chosen = [b for b in batches if start <= b.at < end and b.generated_tokens is not None]
    span = _span(chosen)
    if span is None:
        return None
    return sum(b.generated_tokens or 0 for b in chosen) / span


@dataclass(frozen=True, slots=True)
class BatchBasics:
    """What a set of batches did; quantiles by rank, None when no batch reported it."""

    batches: int
    generated_tokens: int
    prompt_tokens: int
    # Generated tokens per wall second (see ``sampler_throughput``).
    tokens_per_s: float | None
    # Generated tokens over the summed latency: the rate while a batch runs.
    batch_tokens_per_s: float | None
    batch_size_median: float | None
    batch_size_p90: float | None
    latency_median_s: float | None
    latency_p90_s: float | None
    queue_depth_latest: int | None
    queue_depth_median: float | None
    first_at: float | None
    last_at: float | None


def basics(batches: Sequence[SamplerBatchRecord]) -> BatchBasics:
    sizes = [float(b.batch_size) for b in batches if b.batch_size is not None]
    latencies = [b.latency_s for b in batches if b.latency_s is not None]
    queued = [b for b in batches if b.queue_depth is not None]
    timed = [
        (b.generated_tokens, b.latency_s)
        for b in batches
        if b.generated_tokens is not None and b.latency_s
    ]
    busy = sum(latency for _, latency in timed)
    return BatchBasics(
        batches=len(batches),
        generated_tokens=sum(b.generated_tokens or 0 for b in batches),
        prompt_tokens=sum(b.prompt_tokens or 0 for b in batches),
        tokens_per_s=sampler_throughput(batches, -math.inf, math.inf),
        batch_tokens_per_s=sum(g for g, _ in timed) / busy if busy > 0 else None,
        batch_size_median=_median(sizes),
        batch_size_p90=quantile(sizes, 0.9),
        latency_median_s=_median(latencies),
        latency_p90_s=quantile(latencies, 0.9),
        queue_depth_latest=max(queued, key=lambda b: b.at).queue_depth if queued else None,
        queue_depth_median=_median([float(b.queue_depth or 0) for b in queued]),
        first_at=min((b.at for b in batches), default=None),
        last_at=max((b.at for b in batches), default=None),
    )


@dataclass(frozen=True, slots=True)
class WorkerSampling:
    """One sampler worker's batches in the window (``worker`` None: not recorded)."""

    worker: str | None
    basics: BatchBasics


@dataclass(frozen=True, slots=True)
class SamplingStats:
    """A model's sampling over ``[now - window_s, now]`` and against its baseline.

    ``basics`` are over the window's batches that were read; ``in_window`` counts all of
    the window's batches, ``truncated`` says only the newest were read, ``undecodable``
    counts the stored batches that could not be read (skipped). Batches stamped after
    ``now`` (a sampler clock ahead) count in the window.
    """

    window_s: float
    start: float
    end: float
    basics: BatchBasics
    in_window: int
    truncated: bool
    undecodable: int
    workers: tuple[WorkerSampling, ...]
    workers_truncated: bool
    baseline_batches: int
    baseline_start: float | None
    baseline_tokens_per_s: float | None
    # Throughput now over the baseline's; None with too few batches on either side.
    ratio_to_baseline: float | None


def _workers(batches: Sequence[SamplerBatchRecord]) -> tuple[list[WorkerSampling], bool]:
    by_worker: dict[str | None, list[SamplerBatchRecord]] = defaultdict(list)
    for b in batches:
        by_worker[b.worker].append(b)
    ordered = sorted(by_worker.items(), key=lambda kv: (-len(kv[1]), kv[0] or ""))
    rows = [WorkerSampling(w, basics(bs)) for w, bs in ordered[:MAX_WORKERS]]
    return rows, len(ordered) > MAX_WORKERS


def sampling_stats(
    batches: Iterable[SamplerBatchRecord],
    now: float,
    window_s: float,
    *,
    in_window: int | None = None,
    truncated: bool = False,
    undecodable: int = 0,
) -> SamplingStats:
    """The stats of the batches that ended at or after ``now - window_s``, with the
    batches before that as the baseline. The keywords carry what the read saw."""
    start = now - window_s
    recent: list[SamplerBatchRecord] = []
    earlier: list[SamplerBatchRecord] = []
    for b in batches:
        (recent if b.at >= start else earlier).append(b)
    here = basics(recent)
    workers, cut = _workers(recent)
    baseline = sampler_throughput(earlier, -math.inf, start)
    ratio = None
    enough = len(earlier) >= MIN_BASELINE_BATCHES and len(recent) >= MIN_WINDOW_BATCHES
    if enough and baseline and here.tokens_per_s is not None:
        ratio = here.tokens_per_s / baseline
    return SamplingStats(
        window_s=window_s,
        start=start,
        end=now,
        basics=here,
        in_window=len(recent) if in_window is None else max(in_window, len(recent)),
        truncated=truncated,
        undecodable=undecodable,
        workers=tuple(workers),
        workers_truncated=cut,
        baseline_batches=len(earlier),
        baseline_start=min((b.at for b in earlier), default=None),
        baseline_tokens_per_s=baseline,
        ratio_to_baseline=ratio,
    )

"""The in-memory twins of the Prometheus adapter, for the demo and unit tests.

``InMemoryGpuMetrics`` is the twin of ``PromGpuMetrics``; ``InMemoryMetricsSource`` the
twin of ``HttpMetricsSource`` (answers from a responder, records every call).

It holds DCGM series (metric, exporter labels, samples) and answers with the same
semantics as the PromQL the real one issues: the same series selection (``UUID`` set,
or ``Hostname`` set for series without a ``UUID``), sample-weighted means over
``(at - window, at]``, the latest sample within a 5-minute lookback, and the same join,
duty choice and time weighting (shared functions in ``gpu_metrics``). vLLM stats are
stored as snapshots per pod (``set_vllm``) rather than as counters and histograms.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from openrl_inspect.adapters.prometheus._gpu import (
    CHART_METRICS,
    DUTY,
    DUTY_METRICS,
    DUTY_SCALE,
    LATEST_METRICS,
    LOOKBACK_S,
    XID_ERRORS,
    Activity,
    Duty,
    DutyMetric,
    GpuKey,
    GpuSeries,
    HeldInterval,
    NodeDuty,
    VllmStats,
    XidErrors,
    as_duty_metric,
    check_metric,
    check_window,
    choose_step,
)
from openrl_inspect.adapters.prometheus._gpu_joins import (
    activity_window,
    gpu_ref,
    join_rows,
    key_sets,
    mean_or_none,
    pick_duty,
    summarize_xid,
    time_weighted_activity,
)
from openrl_inspect.adapters.prometheus._source import (
    QueryResult,
    ResultType,
    Sample,
    cap_series,
    check_range,
)

Ref = str | tuple[str, str]


@dataclass
class _Stored:
    labels: dict[str, str]
    times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def window(self, lo: float, hi: float) -> list[Sample]:
        """Samples with ``lo < t <= hi``."""
        i = bisect.bisect_right(self.times, lo)
        j = bisect.bisect_right(self.times, hi)
        return [Sample(self.times[k], self.values[k]) for k in range(i, j)]


class InMemoryGpuMetrics:
    """``GpuMetrics`` over series added with ``add_series``/``add_gpu``."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        min_step_s: float = 30.0,
        max_samples: int = 500_000,
    ) -> None:
        self._clock = clock
        self._min_step = min_step_s
        self._max_samples = max_samples
        self._series: dict[str, dict[tuple[tuple[str, str], ...], _Stored]] = {}
        self._vllm: dict[str, list[tuple[float, VllmStats]]] = {}

    # ------------------------------------------------------------ feeding

    def add_series(
        self, metric: str, labels: Mapping[str, str], samples: Iterable[tuple[float, float]]
    ) -> None:
        """Add samples to the series ``metric{labels}`` (labels as the exporter sets
        them: ``UUID``, ``Hostname``, ``gpu``, and any others)."""
        key = tuple(sorted(labels.items()))
        stored = self._series.setdefault(metric, {}).setdefault(key, _Stored(dict(labels)))
        merged = sorted(
            {**dict(zip(stored.times, stored.values, strict=True)), **dict(samples)}.items()
        )
        stored.times = [t for t, _ in merged]
        stored.values = [v for _, v in merged]

    def add_gpu(
        self,
        metric: str,
        samples: Iterable[tuple[float, float]],
        *,
        uuid: str = "",
        hostname: str = "",
        gpu: int | None = None,
        **labels: str,
    ) -> None:
        full = dict(labels)
        if uuid:
            full["UUID"] = uuid
        if hostname:
            full["Hostname"] = hostname
        if gpu is not None:
            full["gpu"] = str(gpu)
        self.add_series(metric, full, samples)

    def set_vllm(self, pod: str, at: float, stats: VllmStats) -> None:
        snaps = self._vllm.setdefault(pod, [])
        snaps.append((at, stats))
        snaps.sort(key=lambda s: s[0])

    async def aclose(self) -> None:
        return None

    # ------------------------------------------------------------ selection

    def _now(self, at: float | None) -> float:
        return self._clock() if at is None else at

    def _groups(self, metric: str, keys: Sequence[GpuKey]) -> dict[Ref, list[_Stored]]:
        """The series the PromQL would select for ``keys``, grouped as it groups them."""
        sets = key_sets(keys)
        uuids = set(sets.get("UUID", ()))
        nodes = set(sets.get("Hostname", ()))
        groups: dict[Ref, list[_Stored]] = {}
        for stored in self._series.get(metric, {}).values():
            uuid = stored.labels.get("UUID", "")
            if uuid:
                if uuid in uuids:
                    groups.setdefault(uuid, []).append(stored)
            elif stored.labels.get("Hostname", "") in nodes:
                ref = gpu_ref(stored.labels)
                if ref is not None:
                    groups.setdefault(ref, []).append(stored)
        return groups

    @staticmethod
    def _split(
        per_ref: Mapping[Ref, float],
    ) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
        by_uuid = {r: v for r, v in per_ref.items() if isinstance(r, str)}
        by_host = {r: v for r, v in per_ref.items() if not isinstance(r, str)}
        return by_uuid, by_host

    @staticmethod
    def _mean(series: Iterable[_Stored], lo: float, hi: float) -> float | None:
        total, count = 0.0, 0
        for stored in series:
            for p in stored.window(lo, hi):
                total += p.v
                count += 1
        return total / count if count else None

    def _means(self, metric: str, keys: Sequence[GpuKey], lo: float, hi: float) -> dict[Ref, float]:
        out: dict[Ref, float] = {}
        for ref, series in self._groups(metric, keys).items():
            mean = self._mean(series, lo, hi)
            if mean is not None:
                out[ref] = mean
        return out

    # ------------------------------------------------------------ GpuMetrics

    async def duty(
        self, keys: Sequence[GpuKey], window_s: float, at: float | None = None
    ) -> list[Duty | None]:
        w = check_window(window_s)
        now = self._now(at)
        per_metric: dict[str, tuple[Mapping[str, float], Mapping[tuple[str, str], float]]] = {
            m: self._split(self._means(m, keys, now - w, now)) for m in DUTY_METRICS
        }
        return pick_duty(keys, per_metric)

    async def node_duty(
        self, nodes: Sequence[str], window_s: float, at: float | None = None
    ) -> list[NodeDuty | None]:
        w = check_window(window_s)
        now = self._now(at)
        out: list[NodeDuty | None] = []
        for node in nodes:
            hit: NodeDuty | None = None
            for metric in DUTY_METRICS:
                per_gpu: dict[str, list[_Stored]] = {}
                for stored in self._series.get(metric, {}).values():
                    if node and stored.labels.get("Hostname") == node:
                        per_gpu.setdefault(stored.labels.get("gpu", ""), []).append(stored)
                means = [self._mean(s, now - w, now) for s in per_gpu.values()]
                found = [m for m in means if m is not None]
                mean = mean_or_none(found)
                if mean is not None:
                    hit = NodeDuty(mean / DUTY_SCALE[metric], len(found), metric)
                    break
            out.append(hit)
        return out

    def _latest(self, metric: str, keys: Sequence[GpuKey], now: float) -> dict[Ref, float]:
        out: dict[Ref, float] = {}
        for ref, series in self._groups(metric, keys).items():
            lasts = [s.window(now - LOOKBACK_S, now) for s in series]
            values = [w[-1].v for w in lasts if w]
            if values:
                out[ref] = max(values)
        return out

    async def latest(
        self, keys: Sequence[GpuKey], metric: str, at: float | None = None
    ) -> list[float | None]:
        check_metric(metric, LATEST_METRICS)
        by_uuid, by_host = self._split(self._latest(metric, keys, self._now(at)))
        return [hit[0] if hit else None for hit in join_rows(keys, by_uuid, by_host)]

    async def xid_errors(
        self, keys: Sequence[GpuKey], window_s: float, at: float | None = None
    ) -> list[XidErrors | None]:
        w = check_window(window_s)
        now = self._now(at)
        per_ref: dict[Ref, list[Sample]] = {}
        for ref, series in self._groups(XID_ERRORS, keys).items():
            samples = [p for s in series for p in s.window(now - w, now)]
            if samples:
                per_ref[ref] = samples
        by_uuid = {r: v for r, v in per_ref.items() if isinstance(r, str)}
        by_host = {r: v for r, v in per_ref.items() if not isinstance(r, str)}
        return [summarize_xid(hit[0]) if hit else None for hit in join_rows(keys, by_uuid, by_host)]

    def _range(
        self, metric: str, keys: Sequence[GpuKey], start: float, end: float, step: float
    ) -> list[tuple[DutyMetric | str, list[Sample]] | None]:
        points_per_ref: dict[Ref, list[Sample]] = {}
        n = math.floor((end - start) / step + 1e-9)
        for ref, series in self._groups(metric, keys).items():
            points = []
            for k in range(n + 1):
                t = start + k * step
                mean = self._mean(series, t - step, t)
                if mean is not None:
                    points.append(Sample(t, mean))
            if points:
                points_per_ref[ref] = points
        by_uuid = {r: v for r, v in points_per_ref.items() if isinstance(r, str)}
        by_host = {r: v for r, v in points_per_ref.items() if not isinstance(r, str)}
        return [(metric, hit[0]) if hit else None for hit in join_rows(keys, by_uuid, by_host)]

    async def series(
        self,
        keys: Sequence[GpuKey],
        metric: str,
        start: float,
        end: float,
        step: float | None = None,
    ) -> list[GpuSeries | None]:
        check_metric(metric, CHART_METRICS)
        step_s = choose_step(
            start,
            end,
            step,
            series=len(keys),
            min_step=self._min_step,
            max_samples=self._max_samples,
        )
        metrics: Sequence[str] = DUTY_METRICS if metric == DUTY else (metric,)
        found = [self._range(m, keys, start, end, step_s) for m in metrics]
        out: list[GpuSeries | None] = []
        for i in range(len(keys)):
            hit = next((f[i] for f in found if f[i] is not None), None)
            if hit is None:
                out.append(None)
                continue
            used, points = hit
            scale = DUTY_SCALE[used] if metric == DUTY else 1.0
            out.append(GpuSeries(used, step_s, tuple(Sample(p.t, p.v / scale) for p in points)))
        return out

    async def activity(self, groups: Sequence[Sequence[HeldInterval]]) -> list[Activity | None]:
        window = activity_window(groups)
        if window is None:
            return [None] * len(groups)
        start, end, keys = window
        step = choose_step(
            start,
            end,
            None,
            series=len(keys),
            min_step=self._min_step,
            max_samples=self._max_samples,
        )
        q_end = start + step * math.ceil((end - start) / step)
        found = [self._range(m, keys, start + step, q_end, step) for m in DUTY_METRICS]
        points_for: dict[GpuKey, tuple[DutyMetric, Sequence[Sample]] | None] = {}
        for i, key in enumerate(keys):
            hit = next((f[i] for f in found if f[i] is not None), None)
            if hit is not None:
                used, points = hit
                scale = DUTY_SCALE[used]
                points_for[key] = (
                    as_duty_metric(used),
                    [Sample(p.t, p.v / scale) for p in points],
                )
        return [
            time_weighted_activity(group, points_for, step)
            if any(iv.end > iv.start for iv in group)
            else None
            for group in groups
        ]

    async def vllm(
        self, pods: Sequence[str], window_s: float = 300.0, at: float | None = None
    ) -> list[VllmStats | None]:
        w = check_window(window_s)
        now = self._now(at)
        out: list[VllmStats | None] = []
        for pod in pods:
            snaps = [s for t, s in self._vllm.get(pod, []) if now - w < t <= now]
            out.append(snaps[-1] if snaps else None)
        return out


@dataclass(frozen=True)
class QueryCall:
    """One call seen by :class:`InMemoryMetricsSource`; ``start``/``end``/``step`` are
    None for an instant query (whose time is ``start``)."""

    kind: Literal["instant", "range"]
    query: str
    start: float | None
    end: float | None = None
    step: float | None = None


Responder = Callable[[QueryCall], QueryResult]


@dataclass
class InMemoryMetricsSource:
    """The twin of ``HttpMetricsSource``: answers from ``responder`` (empty results if
    none) and records every call. It does not evaluate PromQL; the GPU layer has its
    own twin (``InMemoryGpuMetrics`` above) that holds samples instead of queries."""

    responder: Responder | None = None
    max_series: int = 20_000
    max_samples: int = 500_000
    calls: list[QueryCall] = field(default_factory=list)
    closed: bool = False

    def _answer(self, call: QueryCall, empty: ResultType) -> QueryResult:
        self.calls.append(call)
        if self.responder is None:
            return QueryResult(empty, ())
        result = self.responder(call)
        capped = cap_series(
            result.result_type,
            list(result.series),
            self.max_series,
            self.max_samples,
            result.warnings,
        )
        return QueryResult(
            capped.result_type,
            capped.series,
            capped.series_truncated or result.series_truncated,
            capped.samples_truncated or result.samples_truncated,
            capped.warnings,
        )

    async def instant(self, query: str, at: float | None = None) -> QueryResult:
        return self._answer(QueryCall("instant", query, at), "vector")

    async def range(self, query: str, start: float, end: float, step: float) -> QueryResult:
        check_range(start, end, step)
        return self._answer(QueryCall("range", query, start, end, step), "matrix")

    async def aclose(self) -> None:
        self.closed = True

"""``PromGpuMetrics``: the ``GpuMetrics`` protocol as PromQL over a ``MetricsSource``.

One query per metric per call, whatever the number of keys: the keys become one
``UUID=~"..."`` set matcher (plus one ``Hostname=~"...",UUID=""`` matcher for the
fallback join), split into several queries only past ``chunk_bytes``. The queries of
one call run concurrently (``_batch``). The query shapes are in ``_gpu_queries``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence

import openrl_inspect.adapters.prometheus._promql as promql
from openrl_inspect.adapters.prometheus._batch import QueryBatch, gather
from openrl_inspect.adapters.prometheus._gpu import (
    CHART_METRICS,
    DUTY,
    DUTY_METRICS,
    DUTY_SCALE,
    LATEST_METRICS,
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
    index_by_gpu,
    join_rows,
    key_sets,
    mean_or_none,
    pick_duty,
    summarize_xid,
    time_weighted_activity,
)
from openrl_inspect.adapters.prometheus._gpu_queries import (
    TTFT_QUANTILES,
    Branch,
    mean_branch,
    per_gpu_query,
    vllm_builders,
)
from openrl_inspect.adapters.prometheus._http import make_metrics_source
from openrl_inspect.adapters.prometheus._promql import Matcher, eq, in_set, selector
from openrl_inspect.adapters.prometheus._source import (
    MetricsSource,
    PrometheusSettings,
    Sample,
    Series,
)


class PromGpuMetrics:
    """``GpuMetrics`` over any ``MetricsSource`` (the real one or a scripted twin)."""

    def __init__(
        self,
        source: MetricsSource,
        *,
        chunk_bytes: int = 1024 * 1024,
        max_series: int = 20_000,
        max_samples: int = 500_000,
        min_step_s: float = 30.0,
        owns_source: bool = False,
    ) -> None:
        self._batch = QueryBatch(source, chunk_bytes=chunk_bytes, max_series=max_series)
        self._max_samples = max_samples
        self._min_step = min_step_s
        self._owns_source = owns_source

    @classmethod
    def from_settings(
        cls, settings: PrometheusSettings, source: MetricsSource | None = None
    ) -> PromGpuMetrics:
        return cls(
            source or make_metrics_source(settings),
            chunk_bytes=settings.chunk_bytes,
            max_series=settings.max_series,
            max_samples=settings.max_samples,
            min_step_s=settings.min_step_s,
            owns_source=source is None,
        )

    async def aclose(self) -> None:
        if self._owns_source:
            await self._batch.source.aclose()

    # ------------------------------------------------------------ plumbing

    async def _per_gpu_instant(
        self, sets: Mapping[str, Sequence[str]], branch: Branch, at: float | None
    ) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
        queries = self._batch.queries(sets, lambda s: per_gpu_query(s, branch))
        results = await self._batch.instant(queries, at)
        return index_by_gpu(
            (s.label_dict(), s.samples[-1].v) for r in results for s in r.series if s.samples
        )

    # ------------------------------------------------------------ GPU metrics

    async def duty(
        self, keys: Sequence[GpuKey], window_s: float, at: float | None = None
    ) -> list[Duty | None]:
        rng = promql.duration(check_window(window_s))
        sets = key_sets(keys)
        if not sets:
            return [None] * len(keys)
        found = await gather(
            [
                functools.partial(self._per_gpu_instant, sets, mean_branch(m, rng), at)
                for m in DUTY_METRICS
            ]
        )
        return pick_duty(keys, dict(zip(DUTY_METRICS, found, strict=True)))

    async def node_duty(
        self, nodes: Sequence[str], window_s: float, at: float | None = None
    ) -> list[NodeDuty | None]:
        rng = promql.duration(check_window(window_s))
        wanted = sorted({n for n in nodes if n})
        if not wanted:
            return [None] * len(nodes)

        async def per_node(metric: str) -> dict[str, list[float]]:
            branch = mean_branch(metric, rng)
            queries = self._batch.queries(
                {"Hostname": wanted},
                lambda s: branch([in_set("Hostname", s["Hostname"])], "Hostname, gpu"),
            )
            out: dict[str, list[float]] = {}
            for r in await self._batch.instant(queries, at):
                for s in r.series:
                    if s.samples and math.isfinite(s.samples[-1].v):
                        out.setdefault(s.label("Hostname"), []).append(s.samples[-1].v)
            return out

        found = await gather([functools.partial(per_node, m) for m in DUTY_METRICS])
        result: list[NodeDuty | None] = []
        for node in nodes:
            hit: NodeDuty | None = None
            for metric, per in zip(DUTY_METRICS, found, strict=True):
                mean = mean_or_none(per.get(node, []))
                if mean is not None:
                    hit = NodeDuty(mean / DUTY_SCALE[metric], len(per[node]), metric)
                    break
            result.append(hit)
        return result

    async def latest(
        self, keys: Sequence[GpuKey], metric: str, at: float | None = None
    ) -> list[float | None]:
        check_metric(metric, LATEST_METRICS)
        sets = key_sets(keys)
        if not sets:
            return [None] * len(keys)

        def branch(matchers: Sequence[Matcher], by: str) -> str:
            return f"max by ({by}) ({selector(metric, matchers)})"

        by_uuid, by_host = await self._per_gpu_instant(sets, branch, at)
        return [hit[0] if hit else None for hit in join_rows(keys, by_uuid, by_host)]

    async def xid_errors(
        self, keys: Sequence[GpuKey], window_s: float, at: float | None = None
    ) -> list[XidErrors | None]:
        rng = promql.duration(check_window(window_s))
        sets = key_sets(keys)
        if not sets:
            return [None] * len(keys)

        def peak(matchers: Sequence[Matcher], by: str) -> str:
            return f"max by ({by}) (max_over_time({selector(XID_ERRORS, matchers)}[{rng}]))"

        by_uuid, by_host = await self._per_gpu_instant(sets, peak, at)
        peaks = join_rows(keys, by_uuid, by_host)
        # Only GPUs that saw an XID need their raw samples (usually none), fetched the
        # way their peak was found: by UUID, or by Hostname for series without one.
        hot_uuids = sorted(
            {k.uuid for k, h in zip(keys, peaks, strict=True) if h and h[0] > 0 and h[1] == "uuid"}
        )
        hot_nodes = sorted(
            {
                k.node
                for k, h in zip(keys, peaks, strict=True)
                if h and h[0] > 0 and h[1] == "hostname_gpu" and k.node
            }
        )
        raw: dict[str | tuple[str, str], list[Sample]] = {}
        if hot_uuids or hot_nodes:
            queries: list[str] = []
            if hot_uuids:
                queries += self._batch.queries(
                    {"UUID": hot_uuids},
                    lambda s: f"{selector(XID_ERRORS, [in_set('UUID', s['UUID'])])}[{rng}]",
                )
            if hot_nodes:
                queries += self._batch.queries(
                    {"Hostname": hot_nodes},
                    lambda s: (
                        selector(XID_ERRORS, [in_set("Hostname", s["Hostname"]), eq("UUID", "")])
                        + f"[{rng}]"
                    ),
                )
            for r in await self._batch.instant(queries, at):
                for s in r.series:
                    ref: str | tuple[str, str] = s.label("UUID") or (
                        s.label("Hostname"),
                        s.label("gpu"),
                    )
                    raw.setdefault(ref, []).extend(s.samples)
        out: list[XidErrors | None] = []
        for key, hit in zip(keys, peaks, strict=True):
            if hit is None:
                out.append(None)
            elif hit[0] <= 0:
                out.append(XidErrors(0, None, None, 0))
            else:
                where = key.uuid if hit[1] == "uuid" else key.host_key
                out.append(summarize_xid(raw.get(where or "", [])))
        return out

    async def series(
        self,
        keys: Sequence[GpuKey],
        metric: str,
        start: float,
        end: float,
        step: float | None = None,
    ) -> list[GpuSeries | None]:
        check_metric(metric, CHART_METRICS)
        sets = key_sets(keys)
        step_s = choose_step(
            start,
            end,
            step,
            series=len(keys),
            min_step=self._min_step,
            max_samples=self._max_samples,
        )
        if not sets:
            return [None] * len(keys)
        metrics: Sequence[str] = DUTY_METRICS if metric == DUTY else (metric,)
        found = await self._per_gpu_range(keys, metrics, start, end, step_s)
        out: list[GpuSeries | None] = []
        for i in range(len(keys)):
            hit = next((f[i] for f in found if f[i] is not None), None)
            if hit is None:
                out.append(None)
                continue
            m, series, truncated = hit
            scale = DUTY_SCALE[m] if metric == DUTY else 1.0
            points = tuple(Sample(p.t, p.v / scale) for p in series.samples)
            out.append(GpuSeries(m, step_s, points, truncated or series.truncated))
        return out

    async def _per_gpu_range(
        self,
        keys: Sequence[GpuKey],
        metrics: Sequence[str],
        start: float,
        end: float,
        step: float,
    ) -> list[list[tuple[str, Series, bool] | None]]:
        """Per metric, per key: the series of means over each ``(t - step, t]``,
        evaluated at ``start, start + step, ... <= end``, and whether it was cut."""
        sets = key_sets(keys)
        rng = promql.duration(step)

        async def one(metric: str) -> list[tuple[str, Series, bool] | None]:
            branch = mean_branch(metric, rng)
            queries = self._batch.queries(sets, lambda s: per_gpu_query(s, branch))
            results = await self._batch.range(queries, start, end, step)
            truncated = any(r.truncated for r in results)
            by_uuid, by_host = index_by_gpu((s.label_dict(), s) for r in results for s in r.series)
            return [
                (metric, hit[0], truncated) if hit else None
                for hit in join_rows(keys, by_uuid, by_host)
            ]

        return await gather([functools.partial(one, m) for m in metrics])

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
        # Point k (k >= 1) is the mean over (start + (k-1) step, start + k step].
        q_start = start + step
        q_end = start + step * math.ceil((end - start) / step)
        found = await self._per_gpu_range(keys, DUTY_METRICS, q_start, q_end, step)
        points_for: dict[GpuKey, tuple[DutyMetric, Sequence[Sample]] | None] = {}
        truncated = False
        for i, key in enumerate(keys):
            for per_key in found:
                hit = per_key[i]
                if hit is None:
                    continue
                metric, series, cut = hit
                truncated = truncated or cut or series.truncated
                scale = DUTY_SCALE[metric]
                duty_metric = as_duty_metric(metric)
                points_for[key] = (
                    duty_metric,
                    [Sample(p.t, p.v / scale) for p in series.samples],
                )
                break
        return [
            time_weighted_activity(group, points_for, step, truncated)
            if any(iv.end > iv.start for iv in group)
            else None
            for group in groups
        ]

    # ------------------------------------------------------------ vLLM

    async def vllm(
        self, pods: Sequence[str], window_s: float = 300.0, at: float | None = None
    ) -> list[VllmStats | None]:
        rng = promql.duration(check_window(window_s))
        wanted = sorted({p for p in pods if p})
        if not wanted:
            return [None] * len(pods)

        builders = vllm_builders(rng)

        async def one(build: Callable[[Sequence[str]], str]) -> dict[tuple[str, str], float]:
            queries = self._batch.queries({"pod": wanted}, lambda s: build(s["pod"]))
            out: dict[tuple[str, str], float] = {}
            for r in await self._batch.instant(queries, at):
                for s in r.series:
                    if s.samples and math.isfinite(s.samples[-1].v):
                        out.setdefault((s.label("pod"), s.label("quantile")), s.samples[-1].v)
            return out

        names = list(builders)
        found = dict(
            zip(
                names,
                await gather([functools.partial(one, builders[n]) for n in names]),
                strict=True,
            )
        )
        out: list[VllmStats | None] = []
        for pod in pods:
            stats = VllmStats(
                requests_running=found["running"].get((pod, "")),
                requests_waiting=found["waiting"].get((pod, "")),
                kv_cache_usage=found["kv"].get((pod, "")),
                generation_tokens_per_s=found["gen"].get((pod, "")),
                ttft_p50_s=found["ttft"].get((pod, repr(TTFT_QUANTILES[0]))),
                ttft_p95_s=found["ttft"].get((pod, repr(TTFT_QUANTILES[1]))),
            )
            empty = all(v is None for v in vars(stats).values())
            out.append(None if empty or not pod else stats)
        return out


def make_gpu_metrics(settings: PrometheusSettings) -> PromGpuMetrics:
    """The Prometheus-backed ``GpuMetrics`` for ``settings`` (it owns its HTTP client;
    ``aclose`` it). The demo uses ``memory.InMemoryGpuMetrics`` instead."""
    return PromGpuMetrics.from_settings(settings)

"""Prometheus, read-only: the HTTP source, safe PromQL, and the GPU layer over it.

The public surface. ``MetricsSource`` is the raw PromQL source (``make_metrics_source``
gives the real one over httpx; ``memory.InMemoryMetricsSource`` the twin); ``GpuMetrics``
is the layer the loaders use, DCGM duty and vLLM stats in batches
(``PromGpuMetrics`` over a source; ``memory.InMemoryGpuMetrics`` the twin). ``RawQuery``
is the operators' guarded raw PromQL, off by default.

Private modules::

    _source       settings, result records, the MetricsSource protocol, the factory
    _http         HttpMetricsSource: the Prometheus HTTP API (or Managed Prometheus)
    _promql       quoting and selectors: every value that reaches a query
    _batch        batched PromQL: set matchers chunked under the caps, run concurrently
    _gpu          the GPU layer's metric names, records, protocol, bounds and factory
    _gpu_joins    the pure joins of answers to GPUs and time weighting both layers share
    _gpu_queries  the PromQL the GPU layer issues
    _gpu_prom     PromGpuMetrics: the GPU layer over a MetricsSource
    _raw          RawQuery: guarded raw PromQL with range, step and sample caps
"""

from __future__ import annotations

from openrl_inspect.adapters.prometheus._batch import gather
from openrl_inspect.adapters.prometheus._gpu import (
    CHART_METRICS,
    DRAM_ACTIVE,
    DUTY,
    FB_USED,
    GPU_TEMP,
    GPU_UTIL,
    GR_ENGINE_ACTIVE,
    LOOKBACK_S,
    MAX_WINDOW_S,
    PIPE_TENSOR_ACTIVE,
    POWER_USAGE,
    SM_ACTIVE,
    XID_ERRORS,
    Activity,
    Duty,
    GpuKey,
    GpuMetrics,
    GpuSeries,
    HeldInterval,
    NodeDuty,
    VllmStats,
    XidErrors,
    check_metric,
    check_window,
)
from openrl_inspect.adapters.prometheus._gpu_prom import PromGpuMetrics, make_gpu_metrics
from openrl_inspect.adapters.prometheus._http import HttpMetricsSource, make_metrics_source
from openrl_inspect.adapters.prometheus._raw import (
    RawAnswer,
    RawQuery,
    RawQuerySettings,
    load_raw_settings,
)
from openrl_inspect.adapters.prometheus._source import (
    BACKEND,
    MetricsSource,
    PrometheusSettings,
    QueryResult,
    Sample,
    Series,
    load_settings,
)

__all__ = [
    "BACKEND",
    "CHART_METRICS",
    "DRAM_ACTIVE",
    "DUTY",
    "FB_USED",
    "GPU_TEMP",
    "GPU_UTIL",
    "GR_ENGINE_ACTIVE",
    "LOOKBACK_S",
    "MAX_WINDOW_S",
    "PIPE_TENSOR_ACTIVE",
    "POWER_USAGE",
    "SM_ACTIVE",
    "XID_ERRORS",
    "Activity",
    "Duty",
    "GpuKey",
    "GpuMetrics",
    "GpuSeries",
    "HeldInterval",
    "HttpMetricsSource",
    "MetricsSource",
    "NodeDuty",
    "PromGpuMetrics",
    "PrometheusSettings",
    "QueryResult",
    "RawAnswer",
    "RawQuery",
    "RawQuerySettings",
    "Sample",
    "Series",
    "VllmStats",
    "XidErrors",
    "check_metric",
    "check_window",
    "gather",
    "load_raw_settings",
    "load_settings",
    "make_gpu_metrics",
    "make_metrics_source",
]

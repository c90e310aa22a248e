"""Prometheus, read-only: settings, result records, the ``MetricsSource`` protocol and
the factory.

The real implementation (``HttpMetricsSource``, Prometheus HTTP API over httpx) lives in
``_http``; the GPU layer above it (DCGM exporter and vLLM metrics) in ``_gpu``.
Every result is capped in series and samples and says when it was cut.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.core.settings import InvalidSetting, check_url, load

BACKEND = "prometheus"
ENV_PREFIX = "OPENRL_INSPECT_PROMETHEUS_"
# Prometheus refuses range queries of more than 11,000 points per series.
MAX_POINTS_PER_SERIES = 11_000


@dataclass(frozen=True)
class PrometheusSettings:
    """How to reach Prometheus and how much of an answer to keep.

    ``url`` is the API root: ``http://prometheus:9090`` for a plain server, or
    ``https://monitoring.googleapis.com/v1/projects/PROJECT/location/global/prometheus``
    for Managed Prometheus, with ``google_credentials`` on (application default
    credentials; ``google.auth`` is imported only then).
    """

    url: str = "http://localhost:9090"
    bearer_token: str | None = None
    google_credentials: bool = False
    # Sent to Prometheus as its ``timeout`` parameter; the HTTP call gets a little more.
    query_timeout_s: float = 5.0
    max_series: int = 20_000
    max_samples: int = 500_000
    # The longest query text sent; set matchers are split into several queries past it.
    chunk_bytes: int = 1024 * 1024
    max_response_bytes: int = 64 * 1024 * 1024
    # The smallest step of chart and activity range queries (>= the scrape interval).
    min_step_s: float = 30.0

    def __post_init__(self) -> None:
        check_url("url", self.url, ("http", "https"))
        if self.bearer_token and self.google_credentials:
            raise InvalidSetting("bearer_token", "no token with google_credentials", "…")
        for name in ("query_timeout_s", "min_step_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise InvalidSetting(name, "a positive number", value)
        for name in ("max_series", "max_samples", "chunk_bytes", "max_response_bytes"):
            if getattr(self, name) < 1:
                raise InvalidSetting(name, "at least 1", getattr(self, name))


def load_settings(
    environ: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> PrometheusSettings:
    """``PrometheusSettings`` from ``OPENRL_INSPECT_PROMETHEUS_*`` and overrides."""
    return load(PrometheusSettings, ENV_PREFIX, environ, overrides, flags)


@dataclass(frozen=True)
class Sample:
    t: float  # unix seconds
    v: float


@dataclass(frozen=True)
class Series:
    """One result series: its labels (sorted pairs, ``__name__`` included when kept)."""

    labels: tuple[tuple[str, str], ...]
    samples: tuple[Sample, ...]
    # Some of this series' samples were dropped to respect ``max_samples``.
    truncated: bool = False

    def label(self, name: str, default: str = "") -> str:
        for key, value in self.labels:
            if key == name:
                return value
        return default

    def label_dict(self) -> dict[str, str]:
        return dict(self.labels)


ResultType = Literal["vector", "matrix", "scalar"]


@dataclass(frozen=True)
class QueryResult:
    result_type: ResultType
    series: tuple[Series, ...]
    # Whole series were dropped (``max_series``, or ``max_samples`` ran out).
    series_truncated: bool = False
    # Samples were dropped from at least one kept series.
    samples_truncated: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def truncated(self) -> bool:
        return self.series_truncated or self.samples_truncated


def cap_series(
    result_type: ResultType,
    series: list[Series],
    max_series: int,
    max_samples: int,
    warnings: tuple[str, ...] = (),
) -> QueryResult:
    """Sort series by labels (a stable order) and keep at most ``max_series`` series and
    ``max_samples`` samples in all; the series that straddles the sample budget keeps
    its earliest samples, later series are dropped."""
    ordered = sorted(series, key=lambda s: s.labels)
    series_truncated = len(ordered) > max_series
    kept: list[Series] = []
    budget = max_samples
    samples_truncated = False
    for s in ordered[:max_series]:
        if budget <= 0:
            series_truncated = True
            break
        if len(s.samples) > budget:
            kept.append(Series(s.labels, s.samples[:budget], truncated=True))
            samples_truncated = True
            budget = 0
            continue
        kept.append(s)
        budget -= len(s.samples)
    return QueryResult(result_type, tuple(kept), series_truncated, samples_truncated, warnings)


def check_range(start: float, end: float, step: float) -> None:
    """Refuse a range Prometheus would refuse, before any call."""
    if not all(math.isfinite(x) for x in (start, end, step)):
        raise InvalidInput("range bounds and step must be finite numbers")
    if step <= 0:
        raise InvalidInput("step must be positive")
    if end < start:
        raise InvalidInput("range end is before its start")
    if (end - start) / step + 1 > MAX_POINTS_PER_SERIES:
        raise InvalidInput("range has too many points for its step")


class MetricsSource(Protocol):
    """Read-only PromQL evaluation. Raises only ``adapters.errors`` classes."""

    async def instant(self, query: str, at: float | None = None) -> QueryResult:
        """Evaluate ``query`` at ``at`` (unix seconds; None: the server's now)."""
        ...

    async def range(self, query: str, start: float, end: float, step: float) -> QueryResult:
        """Evaluate ``query`` at ``start, start+step, ... <= end``."""
        ...

    async def aclose(self) -> None: ...

"""The guarded raw PromQL query for operators: off unless enabled, and capped.

``RawQuery.run`` evaluates an operator's PromQL text as an instant query (``at``) or a
range query (``start``/``end``/``step``) through a ``MetricsSource``, within bounds set
by ``RawQuerySettings`` (env prefix ``OPENRL_INSPECT_PROMETHEUS_``, the same as the
Prometheus connection, so ``OPENRL_INSPECT_PROMETHEUS_RAW_QUERY=true`` turns it on):

- the query text is at most ``raw_max_query_bytes``;
- every range selector and subquery range (``[5m]``, ``[1h:1m]``) is at most
  ``raw_max_range_s``; a bracket whose duration cannot be read is refused;
- a range query spans at most ``raw_max_range_s``, with a step of at least
  ``raw_min_step_s`` and at most ``raw_max_points`` points per series;
- no evaluation time is older than ``raw_max_age_s`` or in the future;
- the answer keeps at most ``raw_max_series`` series and ``raw_max_samples`` samples,
  and says when it was cut.

Refusals are ``InvalidInput`` (``BAD_INPUT``); a disabled field answers
``RawQueryDisabled`` (``RAW_QUERY_DISABLED``). Messages never echo the query.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openrl_inspect.adapters.prometheus._source import (
    BACKEND,
    ENV_PREFIX,
    MetricsSource,
    QueryResult,
    ResultType,
    Series,
    cap_series,
)
from openrl_inspect.core.errors import BackendNotConfigured, InvalidInput, RawQueryDisabled
from openrl_inspect.core.settings import InvalidSetting, load

# A clock may run a little ahead of Prometheus': evaluation times this far past "now"
# are still accepted.
FUTURE_SLACK_S = 60.0


@dataclass(frozen=True)
class RawQuerySettings:
    """The raw query field's switch and bounds. Env prefix ``OPENRL_INSPECT_PROMETHEUS_``."""

    raw_query: bool = False
    raw_max_range_s: float = 24 * 3600.0
    raw_max_age_s: float = 31 * 24 * 3600.0
    raw_min_step_s: float = 15.0
    raw_max_points: int = 1_100
    raw_max_series: int = 1_000
    raw_max_samples: int = 100_000
    raw_max_query_bytes: int = 4_096

    def __post_init__(self) -> None:
        for name in ("raw_max_range_s", "raw_max_age_s", "raw_min_step_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise InvalidSetting(name, "a positive number", value)
        for name in ("raw_max_points", "raw_max_series", "raw_max_samples", "raw_max_query_bytes"):
            if getattr(self, name) < 1:
                raise InvalidSetting(name, "at least 1", getattr(self, name))


def load_raw_settings(
    environ: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> RawQuerySettings:
    """``RawQuerySettings`` from ``OPENRL_INSPECT_PROMETHEUS_RAW_*`` and overrides."""
    return load(RawQuerySettings, ENV_PREFIX, environ, overrides, flags)


@dataclass(frozen=True)
class RawAnswer:
    """A raw query's capped answer and what it was evaluated over."""

    result_type: ResultType
    series: tuple[Series, ...]
    series_truncated: bool
    samples_truncated: bool
    warnings: tuple[str, ...]
    at: float | None  # instant queries
    start: float | None  # range queries
    end: float | None
    step: float | None

    @property
    def truncated(self) -> bool:
        return self.series_truncated or self.samples_truncated


# ---------------------------------------------------------------- range selectors

_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_UNIT_S["y"] = 365 * 86400.0
_DURATION_RE = re.compile(r"(?:[0-9]+(?:ms|s|m|h|d|w|y))+")
_PART_RE = re.compile(r"([0-9]+)(ms|s|m|h|d|w|y)")
_NUMBER_RE = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def parse_duration(text: str) -> float:
    """A PromQL duration (``1h30m``, ``90s``, or plain seconds) in seconds."""
    text = text.strip()
    if _DURATION_RE.fullmatch(text):
        return sum(int(n) * _UNIT_S[u] for n, u in _PART_RE.findall(text))
    if _NUMBER_RE.fullmatch(text):
        return float(text)
    raise InvalidInput("a range selector's duration could not be read")


def _outside_strings(query: str) -> str:
    """``query`` with the bodies of string literals blanked (brackets in label values
    are not range selectors)."""
    out: list[str] = []
    quote: str | None = None
    escaped = False
    for ch in query:
        if quote is None:
            if ch in "\"'`":
                quote = ch
            out.append(ch)
        elif escaped:
            escaped = False
            out.append(" ")
        elif ch == "\\" and quote != "`":
            escaped = True
            out.append(" ")
        elif ch == quote:
            quote = None
            out.append(ch)
        else:
            out.append(" ")
    if quote is not None:
        raise InvalidInput("unterminated string in the query")
    return "".join(out)


def longest_range(query: str) -> float:
    """The longest range selector or subquery range in ``query`` (0 when none)."""
    text = _outside_strings(query)
    longest = 0.0
    depth_start: int | None = None
    for i, ch in enumerate(text):
        if ch == "[":
            if depth_start is not None:
                raise InvalidInput("nested brackets in the query")
            depth_start = i + 1
        elif ch == "]":
            if depth_start is None:
                raise InvalidInput("unbalanced brackets in the query")
            inner = text[depth_start:i]
            depth_start = None
            window = inner.split(":", 1)[0]
            longest = max(longest, parse_duration(window))
    if depth_start is not None:
        raise InvalidInput("unbalanced brackets in the query")
    return longest


# ---------------------------------------------------------------- the guard


class RawQuery:
    """The raw query behind its switch and caps, over ``source`` (None: not configured)."""

    def __init__(self, source: MetricsSource | None, settings: RawQuerySettings) -> None:
        self._source = source
        self._s = settings

    @property
    def enabled(self) -> bool:
        return self._s.raw_query

    def _check_time(self, t: float, now: float, what: str) -> float:
        if not math.isfinite(t):
            raise InvalidInput(f"{what} must be a finite time")
        if t < now - self._s.raw_max_age_s:
            raise InvalidInput(f"{what} is older than the raw query allows")
        if t > now + FUTURE_SLACK_S:
            raise InvalidInput(f"{what} is in the future")
        return t

    def _check_query(self, query: str) -> None:
        if not query.strip():
            raise InvalidInput("empty query")
        if len(query.encode()) > self._s.raw_max_query_bytes:
            raise InvalidInput(
                f"query is longer than {self._s.raw_max_query_bytes} bytes allowed here"
            )
        if longest_range(query) > self._s.raw_max_range_s:
            raise InvalidInput(
                f"a range selector is longer than the {self._s.raw_max_range_s:.0f} s allowed"
            )

    def _check_range(self, start: float, end: float, step: float | None) -> float:
        s = self._s
        if end <= start:
            raise InvalidInput("range end must be after its start")
        if end - start > s.raw_max_range_s:
            raise InvalidInput(f"range is longer than the {s.raw_max_range_s:.0f} s allowed")
        span = end - start
        if step is None:  # the smallest whole-second step within the caps
            step = max(s.raw_min_step_s, math.ceil(span / max(1, s.raw_max_points - 1)))
        chosen = step
        if not (math.isfinite(chosen) and chosen > 0):
            raise InvalidInput("step must be a positive number of seconds")
        if chosen < s.raw_min_step_s:
            raise InvalidInput(f"step must be at least {s.raw_min_step_s:g} s")
        if math.floor(span / chosen) + 1 > s.raw_max_points:
            raise InvalidInput(f"range and step give more than {s.raw_max_points} points")
        return float(chosen)

    async def run(
        self,
        query: str,
        *,
        now: float,
        at: float | None = None,
        start: float | None = None,
        end: float | None = None,
        step: float | None = None,
    ) -> RawAnswer:
        """Instant at ``at`` (default ``now``), or a range when ``start`` is given
        (``end`` defaults to ``now``; ``step`` to the smallest within the caps)."""
        if not self._s.raw_query:
            raise RawQueryDisabled()
        if self._source is None:
            raise BackendNotConfigured(BACKEND, "Prometheus is not configured")
        self._check_query(query)
        is_range = start is not None or end is not None or step is not None
        if is_range and at is not None:
            raise InvalidInput("give either time (instant) or start/end/step (range), not both")
        if not is_range:
            when = self._check_time(now if at is None else at, now, "time")
            result = await self._source.instant(query, when)
            return self._answer(result, at=when)
        if start is None:
            raise InvalidInput("a range query needs a start")
        t1 = self._check_time(now if end is None else end, now, "end")
        t0 = self._check_time(start, now, "start")
        chosen = self._check_range(t0, t1, step)
        result = await self._source.range(query, t0, t1, chosen)
        return self._answer(result, start=t0, end=t1, step=chosen)

    def _answer(
        self,
        result: QueryResult,
        *,
        at: float | None = None,
        start: float | None = None,
        end: float | None = None,
        step: float | None = None,
    ) -> RawAnswer:
        capped = cap_series(
            result.result_type,
            list(result.series),
            self._s.raw_max_series,
            self._s.raw_max_samples,
            result.warnings,
        )
        return RawAnswer(
            result_type=capped.result_type,
            series=capped.series,
            series_truncated=capped.series_truncated or result.series_truncated,
            samples_truncated=capped.samples_truncated or result.samples_truncated,
            warnings=capped.warnings,
            at=at,
            start=start,
            end=end,
            step=step,
        )

"""The metric families of one app, and how observations reach them."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from openrl_inspect.core import backend_calls
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.telemetry.records import RequestRecord
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from openrl_inspect.adapters.kubernetes import KindStatus, SourceStatus

ACCESS_MODES = ("operators", "open")
T = TypeVar("T")
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,99}")
_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,47}")
_REASON = re.compile(r"[a-z][a-z0-9_]{0,31}")
# Codes are the inspector's own constants; the cap only guards against a future bug.
_MAX_CODES = 64
_REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_BACKEND_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# Refusals the GraphQL layer answers with HTTP 200 (the request was refused all the same).
_REFUSED_IN_BODY = frozenset({"QUERY_TOO_COSTLY", "GRAPHQL_VALIDATION_FAILED"})


@dataclass(frozen=True)
class MetricsSettings:
    """The metrics endpoint. Env prefix ``OPENRL_INSPECT_METRICS_``.

    ``access``: ``operators`` (an operator principal, like any other operator-only
    answer) or ``open`` (no credential: for an in-cluster scraper where the path is not
    routed from outside; see docs/security.md). ``operations``: GraphQL operation names
    counted under their own name besides the dashboard's.
    """

    access: str = "operators"
    operations: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.access not in ACCESS_MODES:
            raise SettingsError(f"OPENRL_INSPECT_METRICS_ACCESS: one of {', '.join(ACCESS_MODES)}")
        for name in self.operations:
            if not _NAME.fullmatch(name):
                raise SettingsError(f"OPENRL_INSPECT_METRICS_OPERATIONS: {name!r} is no name")


def dashboard_operations(*folders: Path) -> set[str]:
    """The operation names of the documents the server ships (``query Overview {``):
    the dashboard's and the REST routes' and MCP tools'."""
    found: set[str] = set()
    for path in sorted(p for folder in folders for p in folder.glob("*.graphql")):
        found.update(re.findall(r"^\s*query\s+([_A-Za-z]\w*)", path.read_text(), re.MULTILINE))
        found.add(path.stem)  # the REST routes name their document by its file
    return found


class InspectorMetrics:
    """One app's registry and families; a ``backend_calls.CallObserver`` too."""

    def __init__(
        self, operations: Iterable[str] = (), settings: MetricsSettings | None = None
    ) -> None:
        self.settings = settings or MetricsSettings()
        self.registry = CollectorRegistry()
        self.operations = frozenset(operations) | set(self.settings.operations)
        self._codes: set[str] = set()
        r = self.registry
        self.requests = Counter(
            "openrl_inspect_requests",
            "HTTP requests by route, GraphQL operation and outcome.",
            ["route", "operation", "outcome"],
            registry=r,
        )
        self.latency = Histogram(
            "openrl_inspect_request_duration_seconds",
            "Time to answer a request, by route and GraphQL operation.",
            ["route", "operation"],
            buckets=_REQUEST_BUCKETS,
            registry=r,
        )
        self.errors = Counter(
            "openrl_inspect_graphql_errors", "Errors in answers, by code.", ["code"], registry=r
        )
        self.refused = Counter(
            "openrl_inspect_refused_requests",
            "Requests refused before or instead of running, by reason (the error code).",
            ["reason"],
            registry=r,
        )
        self.auth_failures = Counter(
            "openrl_inspect_auth_failures",
            "Requests nobody was admitted for, by why (missing, expired, ...).",
            ["reason"],
            registry=r,
        )
        self.backend_calls = Counter(
            "openrl_inspect_backend_calls",
            "Calls to a backend (one round trip or LIST page), by backend and outcome.",
            ["backend", "outcome"],
            registry=r,
        )
        self.backend_latency = Histogram(
            "openrl_inspect_backend_call_duration_seconds",
            "Time of one backend call, by backend.",
            ["backend"],
            buckets=_BACKEND_BUCKETS,
            registry=r,
        )
        self.backend_up = Gauge(
            "openrl_inspect_backend_up",
            "1 when the backend's last probe succeeded (readiness and the background probe).",
            ["backend"],
            registry=r,
        )
        self.cache = WatchCacheCollector()
        r.register(self.cache)
        # Resident and virtual memory, CPU, open files (Linux /proc; empty elsewhere).
        ProcessCollector(namespace="openrl_inspect", registry=r)

    @classmethod
    def for_app(cls, settings: MetricsSettings | None, *folders: Path) -> InspectorMetrics:
        """Metrics naming the operations of the documents in ``folders``."""
        return cls(dashboard_operations(*folders), settings)

    @contextlib.asynccontextmanager
    async def observing(self, backends: AbstractAsyncContextManager[T]) -> AsyncIterator[T]:
        """Enter ``backends`` with this registry observing the calls of the context
        (the lifespan's), so the tasks it starts (the watch cache's LISTs, the
        background probe) count here too."""
        token = backend_calls.observing(self)
        try:
            async with backends as opened:
                yield opened
        finally:
            backend_calls.stop_observing(token)

    # -- observers ---------------------------------------------------------------

    def backend_call(self, backend: str, outcome: str, seconds: float) -> None:
        label = outcome if outcome in backend_calls.OUTCOMES else self._code(outcome)
        self.backend_calls.labels(backend, label).inc()
        self.backend_latency.labels(backend).observe(seconds)

    def request_done(
        self, route: str, record: RequestRecord | None, status: int, seconds: float
    ) -> None:
        codes = sorted({self._code(c) for c in record.codes}) if record else []
        operation = self._operation(route, record)
        self.requests.labels(route, operation, _outcome(status, codes)).inc()
        self.latency.labels(route, operation).observe(seconds)
        for code in codes:
            self.errors.labels(code).inc()
        refusal = status in (400, 401, 403, 408, 413, 429) or (
            status == 503 and "AUTH_UNAVAILABLE" in codes
        )
        reasons = [c for c in codes if c in _REFUSED_IN_BODY] or (codes[:1] if refusal else [])
        for reason in reasons:
            self.refused.labels(reason).inc()
        failure = record.auth_failure if record else None
        if failure:
            self.auth_failures.labels(failure if _REASON.fullmatch(failure) else "other").inc()

    def backends_probed(self, checks: Iterable[dict[str, object]]) -> None:
        for check in checks:
            self.backend_up.labels(str(check["name"])).set(1 if check["ok"] else 0)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # -- bounding label values ---------------------------------------------------

    def _operation(self, route: str, record: RequestRecord | None) -> str:
        name = record.operation if record else None
        if route != "graphql":  # a REST route names its document; other paths none
            return "" if not name else name if name in self.operations else "other"
        if not name:
            return "anonymous"
        return name if name in self.operations else "other"

    def _code(self, code: str) -> str:
        if not _CODE.fullmatch(code):
            return "OTHER"
        if code not in self._codes and len(self._codes) >= _MAX_CODES:
            return "OTHER"
        self._codes.add(code)
        return code


def _outcome(status: int, codes: list[str]) -> str:
    # A REST route answers a coded error with its status (NOT_FOUND 404, a backend's
    # failure 502-504) where /graphql says 200: the same outcome, "error", for both.
    coded = bool(codes) and "AUTH_UNAVAILABLE" not in codes
    if coded and (status == 404 or status in (502, 503, 504)):
        return "error"
    if status >= 500:
        return "server_error"
    if status >= 400 or any(c in _REFUSED_IN_BODY for c in codes):
        return "refused"
    return "error" if codes else "ok"


# (name, gauge or counter, help, the value of one kind's status).
_CACHE_FAMILIES: tuple[tuple[str, bool, str, Callable[[KindStatus], float | None]], ...] = (
    ("served", False, "1 when the cluster serves the kind.", lambda k: k.served),
    ("synced", False, "1 once the kind's cache has listed completely.", lambda k: k.synced),
    ("objects", False, "Objects of the kind in the cache.", lambda k: k.objects),
    ("list_age_seconds", False, "Seconds since the last complete LIST.", lambda k: k.list_age_s),
    (
        "error_age_seconds",
        False,
        "Seconds the kind's watch has been failing (0: healthy).",
        lambda k: k.error_age_s or 0.0,
    ),
    ("relists", True, "LISTs after the first (expired watches, resyncs).", lambda k: k.relists),
    ("watch_restarts", True, "Watches restarted.", lambda k: k.watch_restarts),
    ("evicted", True, "Records a bounded cache (events) dropped.", lambda k: k.evicted),
)


class WatchCacheCollector(Collector):
    """The Kubernetes watch cache per kind, from the last status the app read."""

    def __init__(self) -> None:
        self.status: SourceStatus | None = None

    def collect(self) -> Iterator[Metric]:
        status = self.status
        if status is None:
            return
        for name, counter, text, value_of in _CACHE_FAMILIES:
            full = f"openrl_inspect_watch_cache_{name}"
            family: GaugeMetricFamily | CounterMetricFamily = (
                CounterMetricFamily(full, text, labels=["kind"])
                if counter
                else GaugeMetricFamily(full, text, labels=["kind"])
            )
            for kind in status.kinds:
                value = value_of(kind)
                if value is not None:
                    family.add_metric([kind.kind], float(value))
            yield family

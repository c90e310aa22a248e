"""``HttpMetricsSource``: the Prometheus HTTP API (``/api/v1/query``,
``/api/v1/query_range``) over ``httpx.AsyncClient``, POST form-encoded.

Each call has three limits: Prometheus' own ``timeout`` parameter (``query_timeout_s``),
an httpx timeout a second longer (so Prometheus' clean "timeout" error normally wins),
and an overall deadline around the whole exchange (a server that trickles bytes cannot
hold a call forever). Responses larger than ``max_response_bytes`` are refused.

Errors become ``adapters.errors`` classes with backend ``"prometheus"``: refused,
reset, DNS, auth failure -> ``BackendUnavailable``; any timeout -> ``BackendTimeout``;
an answer that is not a Prometheus success envelope, or ``status: error`` for a query
the server could not run -> ``BackendProtocolError``. Messages never carry the URL,
token or query.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.to_thread
import orjson
from openrl_inspect.adapters.prometheus._source import (
    BACKEND,
    PrometheusSettings,
    QueryResult,
    ResultType,
    Sample,
    Series,
    cap_series,
    check_range,
)
from openrl_inspect.core import lazy
from openrl_inspect.core.backend_calls import timed
from openrl_inspect.core.errors import (
    BackendError,
    BackendProtocolError,
    BackendTimeout,
    BackendUnavailable,
    InvalidInput,
)

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy.module("httpx")  # loads when a Prometheus source opens

GOOGLE_SCOPE = "https://www.googleapis.com/auth/monitoring.read"
_ERROR_TYPE_RE = re.compile(r"[a-z_]{1,32}")


class TokenProvider(Protocol):
    async def token(self) -> str | None: ...


class StaticToken:
    def __init__(self, token: str | None) -> None:
        self._token = token

    async def token(self) -> str | None:
        return self._token


class GoogleToken:
    """Application default credentials (Workload Identity on GKE) for Managed
    Prometheus; ``google.auth`` is imported on first use only."""

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._creds: Any = None
        self._lock = anyio.Lock()

    # lazy: google-auth loads only for Managed Prometheus (Google credentials).
    def _refresh(self) -> Any:
        import google.auth
        import google.auth.transport.requests

        creds = self._creds
        if creds is None:
            creds, _project = google.auth.default(scopes=[GOOGLE_SCOPE])
        inner = google.auth.transport.requests.Request()
        timeout = self._timeout_s

        def request(*args: Any, **kwargs: Any) -> Any:
            kwargs["timeout"] = timeout
            return inner(*args, **kwargs)

        creds.refresh(request)
        return creds

    async def token(self) -> str | None:
        async with self._lock:
            creds = self._creds
            if creds is None or not creds.valid:
                try:
                    with anyio.fail_after(self._timeout_s + 1.0):
                        creds = await anyio.to_thread.run_sync(
                            self._refresh, abandon_on_cancel=True
                        )
                except TimeoutError as exc:
                    raise BackendTimeout(BACKEND, "Google credentials timed out") from exc
                except Exception as exc:  # google.auth raises several unrelated classes
                    raise BackendUnavailable(
                        BACKEND, "could not obtain Google credentials"
                    ) from exc
                self._creds = creds
            token = creds.token
            return str(token) if token else None


def _fmt(x: float) -> str:
    return repr(float(x))


def _error_from_envelope(status: int, payload: Mapping[str, Any]) -> BackendError:
    raw = payload.get("errorType")
    etype = raw if isinstance(raw, str) and _ERROR_TYPE_RE.fullmatch(raw) else "unknown"
    if etype in ("timeout", "canceled"):
        return BackendTimeout(BACKEND, "Prometheus query timed out")
    if etype == "unavailable":
        return BackendUnavailable(BACKEND, "Prometheus is unavailable")
    if status in (401, 403):
        return BackendUnavailable(BACKEND, "Prometheus refused the credentials")
    return BackendProtocolError(BACKEND, f"Prometheus could not run the query ({etype})")


def _error_from_status(status: int) -> BackendError:
    if status in (401, 403):
        return BackendUnavailable(BACKEND, "Prometheus refused the credentials")
    if status == 504:
        return BackendTimeout(BACKEND, "Prometheus gateway timed out")
    if status in (429, 502, 503):
        return BackendUnavailable(BACKEND, f"Prometheus is unavailable (HTTP {status})")
    return BackendProtocolError(BACKEND, f"unexpected HTTP status {status} from Prometheus")


def _float(raw: Any) -> float:
    # Prometheus sends values as strings ("1.5", "NaN", "+Inf"); times as numbers.
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise TypeError("not a number")
    return float(raw)


def _pair(raw: Any) -> Sample:
    if not isinstance(raw, list) or len(raw) != 2:
        raise TypeError("not a sample pair")
    return Sample(_float(raw[0]), _float(raw[1]))


def _labels(raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise TypeError("labels are not an object")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise TypeError("labels are not strings")
    return tuple(sorted(raw.items()))


def parse_response(body: bytes, status: int, max_series: int, max_samples: int) -> QueryResult:
    """A Prometheus API envelope -> capped ``QueryResult`` (or the error it reports)."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict) or payload.get("status") not in ("success", "error"):
        if status >= 400:
            raise _error_from_status(status)
        raise BackendProtocolError(BACKEND, "Prometheus answer is not an API response")
    if payload["status"] == "error":
        raise _error_from_envelope(status, payload)
    if status >= 300:
        raise _error_from_status(status)
    try:
        data = payload["data"]
        rtype = data["resultType"]
        result = data["result"]
        series: list[Series] = []
        if rtype == "scalar":
            series.append(Series((), (_pair(result),)))
        elif rtype == "vector":
            for item in result:
                if "value" not in item:  # a native histogram sample: not used here
                    continue
                series.append(Series(_labels(item["metric"]), (_pair(item["value"]),)))
        elif rtype == "matrix":
            for item in result:
                values = item.get("values", [])
                if not isinstance(values, list):
                    raise TypeError("values is not a list")
                samples = tuple(_pair(p) for p in values)
                series.append(Series(_labels(item["metric"]), samples))
        else:
            raise BackendProtocolError(BACKEND, "unexpected Prometheus result type")
        raw_warnings = payload.get("warnings") or []
        warnings = tuple(str(w)[:200] for w in raw_warnings[:10])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BackendProtocolError(BACKEND, "malformed Prometheus result") from exc
    result_type: ResultType = rtype
    return cap_series(result_type, series, max_series, max_samples, warnings)


class HttpMetricsSource:
    """``MetricsSource`` over the Prometheus HTTP API.

    Pass ``client`` to share a connection pool or to observe requests (event hooks);
    URLs are absolute, so the client needs no ``base_url``. A client passed in is not
    closed by ``aclose``.
    """

    def __init__(
        self,
        settings: PrometheusSettings,
        *,
        client: httpx.AsyncClient | None = None,
        token: TokenProvider | None = None,
    ) -> None:
        self._s = settings
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=8),
        )
        if token is not None:
            self._token: TokenProvider = token
        elif settings.google_credentials:
            self._token = GoogleToken(settings.query_timeout_s)
        else:
            self._token = StaticToken(settings.bearer_token)
        root = settings.url.rstrip("/")
        self._query_url = root + "/api/v1/query"
        self._range_url = root + "/api/v1/query_range"
        # Prometheus stops first; the HTTP read waits a second longer for its answer.
        t = settings.query_timeout_s
        self._http_timeout = httpx.Timeout(t + 1.0, connect=min(t, 3.0))
        self._deadline_s = t + 2.0

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    def _check_query(self, query: str) -> None:
        if not query.strip():
            raise InvalidInput("empty query")
        if len(query.encode()) > self._s.chunk_bytes:
            raise InvalidInput("query is too long")

    async def instant(self, query: str, at: float | None = None) -> QueryResult:
        self._check_query(query)
        form = {"query": query, "timeout": _fmt(self._s.query_timeout_s)}
        if at is not None:
            if not math.isfinite(at):
                raise InvalidInput("query time must be a finite number")
            form["time"] = _fmt(at)
        return await self._call(self._query_url, form)

    async def range(self, query: str, start: float, end: float, step: float) -> QueryResult:
        self._check_query(query)
        check_range(start, end, step)
        form = {
            "query": query,
            "start": _fmt(start),
            "end": _fmt(end),
            "step": _fmt(step),
            "timeout": _fmt(self._s.query_timeout_s),
        }
        return await self._call(self._range_url, form)

    async def _call(self, url: str, form: dict[str, str]) -> QueryResult:
        with timed(BACKEND):
            try:
                with anyio.fail_after(self._deadline_s):
                    status, body = await self._post(url, form)
            except TimeoutError as exc:
                raise BackendTimeout(BACKEND, "Prometheus did not answer in time") from exc
            return parse_response(body, status, self._s.max_series, self._s.max_samples)

    async def _post(self, url: str, form: dict[str, str]) -> tuple[int, bytes]:
        headers = {"Accept": "application/json"}
        token = await self._token.token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        limit = self._s.max_response_bytes
        try:
            async with self._client.stream(
                "POST", url, data=form, headers=headers, timeout=self._http_timeout
            ) as resp:
                chunks: list[bytes] = []
                size = 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if size > limit:
                        raise BackendProtocolError(BACKEND, "Prometheus answer is too large")
                    chunks.append(chunk)
                return resp.status_code, b"".join(chunks)
        except httpx.TimeoutException as exc:
            raise BackendTimeout(BACKEND, "Prometheus did not answer in time") from exc
        except httpx.DecodingError as exc:
            raise BackendProtocolError(BACKEND, "Prometheus answer could not be decoded") from exc
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            # Refused, reset, DNS, closed without an answer, bad scheme.
            raise BackendUnavailable(BACKEND, "Prometheus is unreachable") from exc


def make_metrics_source(settings: PrometheusSettings) -> HttpMetricsSource:
    """The real source for ``settings`` (it owns an ``httpx.AsyncClient``; ``aclose`` it)."""
    return HttpMetricsSource(settings)

"""Pod logs from the Kubernetes API: the fallback when Cloud Logging is not available.

``PodLogSource`` is a :class:`~openrl_inspect.adapters.cloud_logging.LogSource`: the
same queries, records, filters, bounds and cursors as the Cloud Logging adapter. It
reads each selected container's log with the official client's
``read_namespaced_pod_log`` (``timestamps``, ``since_seconds`` from the window's
start, ``tail_lines`` and ``limit_bytes`` caps, an explicit ``_request_timeout``),
turns every line into the LogEntry JSON Cloud Logging would have stored for it (pod,
container, namespace, and the pod's model and role labels), and answers through the
in-memory twin, that is through the shared filter evaluator and
``cloud_logging_paging.collect``: nothing about filtering or bounding is redone here.

The log endpoint cannot start in the middle of a log, so every answer re-reads the
tails and a cursor names a position in them (timestamp and a stable per-line id). When
a tail or byte cap cut lines inside the window the answer says so
(``TruncationReason.SOURCE_LIMIT``): those lines cannot be paged to; narrow the window.

Which pods: the model's (``KubernetesSource.pods_by_model``), narrowed by the query's
pod and role, or the pods given. Which containers: every app container of each pod
(or the configured ones), plus the previous instance of a container that restarted.

How a line's severity and message are read is ``_log_lines``; the reader's settings and
the ``PodLogReader`` protocol are ``_pod_log_settings``. A query naming event objects
also gets their Events, from the events cache, as the log entries of ``_events``.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from openrl_inspect.adapters.kubernetes._api import (
    check_status,
    kclient,
    translate,
)
from openrl_inspect.adapters.kubernetes._events import event_row
from openrl_inspect.adapters.kubernetes._log_lines import parse_line
from openrl_inspect.adapters.kubernetes._pod_log_settings import PodLogReader, PodLogSettings
from openrl_inspect.adapters.kubernetes._queries import KubernetesSource
from openrl_inspect.adapters.kubernetes._records import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    ObjectKey,
    PodRecord,
)
from openrl_inspect.adapters.kubernetes._resources import BACKEND
from openrl_inspect.adapters.kubernetes._source import KubernetesCacheSource
from openrl_inspect.adapters.logs import (
    CloudLoggingSettings,
    LogPage,
    LogQuery,
    LogSource,
    LogSourceKind,
    TruncationReason,
    filter_for,
    parse_timestamp,
    validate_query,
)
from openrl_inspect.adapters.logs.memory import InMemoryLogSource, wire_entry
from openrl_inspect.core.backend_calls import timed
from openrl_inspect.core.errors import BackendTimeout, InvalidInput, NotFound

__all__ = ["PodLogSource"]

# The API server "may return slightly more" than limitBytes: read at most this past it.
_READ_SLACK_BYTES = 64 * 1024
_PROJECT = "openrl-local"  # names no console: pod-log answers carry no explorer link


@dataclass(frozen=True, slots=True)
class _Stream:
    pod: PodRecord
    container: str
    previous: bool


@dataclass(frozen=True, slots=True)
class _Read:
    entries: list[dict[str, Any]]
    # Lines inside the window were left out by the tail or byte cap.
    short: bool


async def _event_rows(
    kube: KubernetesSource, query: LogQuery, per_object: int
) -> tuple[list[dict[str, Any]], bool]:
    """The entries of the query's objects' events, and whether a cap left some out."""
    if not query.event_objects:
        return [], False
    listings = await kube.events_for(query.event_objects, limit=per_object)
    rows = [row for listing in listings for e in listing.items if (row := event_row(e))]
    return rows, any(listing.truncated for listing in listings)


class PodLogSource:
    """A :class:`LogSource` over ``read_namespaced_pod_log``.

    ``api_client`` is the official asyncio ``ApiClient`` (shared, not closed here);
    ``kube`` resolves a model's pods and a pod's containers and labels.
    """

    def __init__(
        self,
        api_client: Any,
        kube: KubernetesSource,
        settings: PodLogSettings | None = None,
        *,
        bounds: CloudLoggingSettings | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._core: Any = kclient.CoreV1Api(api_client)
        self._kube = kube
        self.settings = settings or PodLogSettings()
        # Filters are evaluated here, on entries built with the same label keys: a
        # Cloud Logging log name or namespace restriction has no meaning for them.
        self.bounds = replace(
            bounds or CloudLoggingSettings(),
            project=None,
            api_endpoint=None,
            anonymous=False,
            log_id=None,
            namespace=None,
        )
        self._clock = clock
        self._gate = asyncio.Semaphore(self.settings.concurrency)
        #: Requests made, by (verb, resource): ("get", "pods/log").
        self.counts: Counter[tuple[str, str]] = Counter()

    @classmethod
    def for_cluster(
        cls,
        source: KubernetesCacheSource,
        settings: PodLogSettings | None = None,
        *,
        bounds: CloudLoggingSettings | None = None,
        clock: Callable[[], float] = time.time,
    ) -> PodLogSource:
        """Over the client of an open ``KubernetesCacheSource`` (``open_kubernetes``)."""
        return cls(source.api.client, source, settings, bounds=bounds, clock=clock)

    async def aclose(self) -> None:
        return None  # the ApiClient belongs to the Kubernetes source

    def describe(self, query: LogQuery) -> tuple[str, str | None]:
        """The filter this source evaluates on the pods' lines; no console to link."""
        return filter_for(validate_query(query, self.bounds), self.bounds, None), None

    async def entries(
        self,
        query: LogQuery,
        cursor: str | None = None,
        *,
        pods: Sequence[ObjectKey] | None = None,
    ) -> LogPage:
        """One bounded answer; ``pods`` reads those pods instead of the model's."""
        query = validate_query(query, self.bounds)
        streams, short = await self._streams(query, pods)
        now = self._clock()
        since = now - query.start.timestamp()
        rows: list[dict[str, Any]] = []
        if streams and since > 0:
            try:
                async with asyncio.timeout(self.settings.timeout_s):
                    reads = await asyncio.gather(
                        *(self._read(s, query, int(since) + 1) for s in streams),
                        return_exceptions=True,
                    )
            except TimeoutError:
                raise BackendTimeout(
                    BACKEND, "pod logs: the API server did not answer in time"
                ) from None
            for read in reads:
                if isinstance(read, BaseException):
                    raise read  # a half answer is never passed off as whole
                rows.extend(read.entries)
                short = short or read.short
        events, events_cut = await _event_rows(self._kube, query, self.bounds.max_entries)
        rows.extend(events)
        short = short or events_cut
        twin = InMemoryLogSource(self.bounds, capacity=max(1, len(rows)))
        twin.append(*rows)
        page = await twin.entries(query, cursor)
        page = replace(
            page,
            entries=tuple(
                e if e.event is not None else replace(e, source=LogSourceKind.POD)
                for e in page.entries
            ),
        )
        if short:
            page = replace(page, truncated=True, truncated_reason=TruncationReason.SOURCE_LIMIT)
        return page

    # ------------------------------------------------------------------- which logs

    async def _streams(
        self, query: LogQuery, keys: Sequence[ObjectKey] | None
    ) -> tuple[list[_Stream], bool]:
        """The container logs to read, and whether the pod or stream caps left some out."""
        cap = self.settings.max_pods
        if keys is not None:
            keys = [_check_key(k) for k in keys]
            records = await self._kube.get_pods(keys[:cap])
            for key, record in zip(keys, records, strict=False):
                if record is None:
                    raise NotFound("pod", f"{key.namespace}/{key.name}")
            pods = [r for r in records if r is not None]
            short = len(keys) > cap
        elif query.model_id is not None:
            (listing,) = await self._kube.pods_by_model([query.model_id], limit=cap)
            pods, short = list(listing.items), listing.truncated
        elif query.pod is not None and self.settings.namespace is not None:
            key = _check_key(ObjectKey(self.settings.namespace, query.pod))
            pods = [p for p in await self._kube.get_pods([key]) if p is not None]
            short = False
        else:
            raise InvalidInput("pod logs need a model, or a pod and its namespace")
        if query.pod is not None:
            pods = [p for p in pods if p.name == query.pod]
        if query.role is not None:
            pods = [p for p in pods if p.worker_role == query.role]
        wanted = set(self.settings.containers)
        streams: list[_Stream] = []
        for pod in pods:
            for container in pod.containers:
                if container.init or (wanted and container.name not in wanted):
                    continue
                if not DNS_LABEL.fullmatch(container.name):
                    continue
                streams.append(_Stream(pod, container.name, previous=False))
                if self.settings.previous and container.restart_count > 0:
                    streams.append(_Stream(pod, container.name, previous=True))
        if len(streams) > self.settings.max_streams:
            streams, short = streams[: self.settings.max_streams], True
        return streams, short

    # ---------------------------------------------------------------------- reading

    async def _read(self, stream: _Stream, query: LogQuery, since_seconds: int) -> _Read:
        s = self.settings
        pod = stream.pod
        params: dict[str, Any] = {
            "container": stream.container,
            "timestamps": True,
            "since_seconds": since_seconds,
            "tail_lines": s.tail_lines,
            "limit_bytes": s.limit_bytes,
            "_request_timeout": float(s.request_timeout_s),
        }
        if stream.previous:
            params["previous"] = True
        what = "read pod log"
        async with self._gate:
            self.counts["get", "pods/log"] += 1
            with timed(BACKEND), translate(what):
                response = await self._core.read_namespaced_pod_log_without_preload_content(
                    pod.name, pod.namespace, **params
                )
                complete = False
                try:
                    if response.status in (400, 404):
                        # The pod went away, or the container has not started (or has no
                        # previous instance) yet: no log to show, not a failure.
                        complete = True
                        return _Read([], False)
                    check_status(response.status, what)
                    body, complete = await _read_capped(response, s.limit_bytes + _READ_SLACK_BYTES)
                finally:
                    if complete:
                        response.release()
                    else:
                        response.close()
        return self._parse(stream, body, query, cut=not complete or len(body) >= s.limit_bytes)

    def _parse(self, stream: _Stream, body: bytes, query: LogQuery, *, cut: bool) -> _Read:
        text = body.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        elif cut and lines:
            lines.pop()  # the byte cap ended this line part-way
        pod = stream.pod
        seen: Counter[tuple[str, str]] = Counter()
        entries: list[dict[str, Any]] = []
        oldest: datetime | None = None
        newest: datetime | None = None
        for raw in lines:
            stamp, _, rest = raw.rstrip("\r").partition(" ")
            try:
                moment = parse_timestamp(stamp)
            except ValueError:
                continue  # not a line the kubelet stamped
            oldest = moment if oldest is None else min(oldest, moment)
            newest = moment if newest is None else max(newest, moment)
            if not query.start <= moment <= query.end:
                continue
            seen[stamp, rest] += 1
            severity, message, payload = parse_line(rest)
            if stream.previous:
                payload = {**(payload or {}), "previous_instance": True}
            entries.append(
                wire_entry(
                    timestamp=moment,
                    message=message,
                    payload=payload,
                    severity=severity,
                    model_id=pod.model_id,
                    role=pod.worker_role,
                    pod=pod.name,
                    container=stream.container,
                    namespace=pod.namespace,
                    insert_id=_line_id(stream, stamp, rest, seen[stamp, rest]),
                    project=_PROJECT,
                    settings=self.bounds,
                )
            )
        tail_hit = len(lines) >= self.settings.tail_lines and (
            oldest is None or oldest > query.start
        )
        bytes_hit = cut and (newest is None or newest < query.end)
        return _Read(entries, tail_hit or bytes_hit)


async def _read_capped(response: Any, cap: int) -> tuple[bytes, bool]:
    """The body, at most ``cap`` bytes; True when it was read to its end."""
    chunks: list[bytes] = []
    size = 0
    while size < cap:
        chunk: bytes = await response.content.read(cap - size)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _check_key(key: ObjectKey) -> ObjectKey:
    namespace, name = key
    if not (isinstance(namespace, str) and DNS_LABEL.fullmatch(namespace)):
        raise InvalidInput("not a valid namespace name")
    if not (isinstance(name, str) and len(name) <= 253 and DNS_SUBDOMAIN.fullmatch(name)):
        raise InvalidInput("not a valid pod name")
    return ObjectKey(namespace, name)


def _line_id(stream: _Stream, stamp: str, text: str, occurrence: int) -> str:
    """A stable id for a line: the same line gets the same id on every re-read."""
    pod = stream.pod
    key = "\n".join(
        (pod.namespace, pod.name, stream.container, str(stream.previous), stamp, str(occurrence))
    )
    digest = hashlib.sha256(key.encode() + b"\n" + text.encode("utf-8", "replace"))
    return f"pod-{digest.hexdigest()[:24]}"


if TYPE_CHECKING:  # the reader stays a LogSource and a PodLogReader

    def _conforms(source: PodLogSource) -> tuple[LogSource, PodLogReader]:
        return source, source

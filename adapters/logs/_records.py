"""Records, settings and the protocol of the log backends (see ``cloud_logging``)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Protocol
from urllib.parse import quote as url_quote

from openrl_inspect.adapters.logs._event_filter import check_event_objects
from openrl_inspect.adapters.logs._filter import (
    MAX_MODEL_PODS,
    check_label_key,
    check_log_id,
    check_project,
    check_resource_type,
    check_severity,
    check_value,
    format_timestamp,
)
from openrl_inspect.core.errors import InvalidInput, SettingsError
from openrl_inspect.core.settings import InvalidSetting, check_url

FieldValue = str | int | float | bool | None


class LogSourceKind(enum.StrEnum):
    """Where an entry came from: a worker's log shipped to Cloud Logging, a pod's
    stdout read from Kubernetes, a client's log kept in Redis, or a Kubernetes Event
    (Cloud Logging's ``events`` log, or the Kubernetes events cache)."""

    WORKER = "worker"
    POD = "pod"
    CLIENT = "client"
    EVENT = "event"


class TruncationReason(enum.StrEnum):
    """Why an answer stopped while more entries may follow (its cursor goes on)."""

    LIMIT = "limit"  # the caller's limit was reached
    MAX_ENTRIES = "max_entries"  # the caller asked for more than the server's cap
    MAX_BYTES = "max_bytes"  # the answer's byte budget was spent
    SCAN_BUDGET = "scan_budget"  # too many backend pages read for one answer
    TIME_BUDGET = "time_budget"  # the answer's time budget ran out between pages
    # The backend's own read cap (pod logs: tail lines or byte limit per container) left
    # out lines inside the window; no cursor reaches them (narrow the window instead).
    SOURCE_LIMIT = "source_limit"


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEvent:
    """What a Kubernetes Event entry is about: its reason, type and regarded object
    (``namespace`` None for cluster-scoped kinds), and who reported it."""

    reason: str | None
    type: str | None
    kind: str
    namespace: str | None
    name: str
    component: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """One log line, whatever its source, bounded: ``message`` may end with a
    ``… [truncated N chars]`` marker (then ``truncated_chars`` is N)."""

    timestamp: datetime
    severity: str
    source: LogSourceKind
    message: str
    role: str | None = None
    pod: str | None = None
    container: str | None = None
    model_id: str | None = None
    fields: Mapping[str, FieldValue] = field(default_factory=lambda: MappingProxyType({}))
    insert_id: str | None = None
    truncated_chars: int = 0
    # Set on Kubernetes Event entries (source EVENT).
    event: LogEvent | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LogQuery:
    """What to read: the window is required and always sent as both bounds.

    ``model_pods`` are pods known (from Kubernetes) to belong to ``model_id``; their
    entries match even when they lack the model label. ``event_objects`` are objects
    ``(kind, namespace, name)`` (namespace "" for a Node) whose Kubernetes Events are
    wanted too, beside the container lines, in the same order and pages;
    ``events_only`` reads those events and no container line (a model's past).
    """

    start: datetime
    end: datetime
    model_id: str | None = None
    model_pods: tuple[str, ...] = ()
    pod: str | None = None
    role: str | None = None
    severity_floor: str | None = None
    text: str | None = None
    newest_first: bool = False
    limit: int = 100
    event_objects: tuple[tuple[str, str, str], ...] = ()
    events_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LogPage:
    """One bounded answer. ``next_cursor`` is set whenever more entries may follow;
    ``filter`` is the exact filter sent, ``explorer_url`` opens it in the console."""

    entries: tuple[LogEntry, ...]
    next_cursor: str | None
    truncated: bool
    truncated_reason: TruncationReason | None
    bytes_used: int
    filter: str
    explorer_url: str | None


class LogSource(Protocol):
    """A read-only, bounded, cursor-paged source of log entries."""

    async def entries(self, query: LogQuery, cursor: str | None = None) -> LogPage: ...

    def describe(self, query: LogQuery) -> tuple[str, str | None]:
        """The filter ``query`` becomes and its Logs Explorer link (None when the
        project is not known yet), without reading anything: where to look next."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class CloudLoggingSettings:
    """Settings of the Cloud Logging backend (prefix ``OPENRL_INSPECT_CLOUD_LOGGING_``).

    ``project`` None means the one Application Default Credentials name.
    ``api_endpoint`` and ``anonymous`` exist for tests against a local fake.
    ``log_id`` restricts to one log (URL-encoded id, e.g. ``stdout``).
    """

    project: str | None = None
    api_endpoint: str | None = None
    anonymous: bool = False
    # The whole answer, every backend page included, gets this long.
    timeout_s: float = 10.0
    # Entries asked of the API per page (it may send fewer); at most 1000.
    page_size: int = 200
    # Per answer: entries, bytes of entry text (see ``entry_size``), backend pages.
    max_entries: int = 500
    max_bytes: int = 262_144
    max_pages: int = 10
    # Per entry: message characters, structured fields, characters per field value.
    max_message_chars: int = 4000
    max_fields: int = 32
    max_field_chars: int = 512
    # The widest time window a query may ask for.
    max_window_hours: float = 168.0
    log_id: str | None = None
    resource_type: str = "k8s_container"
    namespace: str | None = None
    # Entry labels naming the model and the worker role. On GKE, pod labels also reach
    # entries as labels prefixed ``k8s-pod/``; point these at whichever key they carry.
    model_label_key: str = "openrl.ai/model-id"
    role_label_key: str = "openrl.ai/role"
    # Worker threads the synchronous client may occupy at once.
    max_threads: int = 4

    def __post_init__(self) -> None:
        positive = {
            "timeout_s": self.timeout_s,
            "page_size": self.page_size,
            "max_entries": self.max_entries,
            "max_bytes": self.max_bytes,
            "max_message_chars": self.max_message_chars,
            "max_field_chars": self.max_field_chars,
            "max_pages": self.max_pages,
            "max_window_hours": self.max_window_hours,
            "max_threads": self.max_threads,
        }
        for name, value in positive.items():
            if not value > 0:
                raise InvalidSetting(name, "a positive number", value)
        if self.page_size > 1000:
            raise InvalidSetting("page_size", "at most 1000 (the API's cap)", self.page_size)
        check_url("api_endpoint", self.api_endpoint, ("http", "https"))
        if self.anonymous and self.project is None:
            raise SettingsError("cloud logging anonymous access needs a project")
        checks = (
            (self.project, check_project),
            (self.log_id, check_log_id),
            (self.resource_type, check_resource_type),
            (self.model_label_key, check_label_key),
            (self.role_label_key, check_label_key),
        )
        for identifier, check in checks:
            if identifier is not None:
                try:
                    check(identifier)
                except InvalidInput as exc:
                    raise SettingsError(f"cloud logging: {exc.message}") from None


def validate_query(query: LogQuery, settings: CloudLoggingSettings) -> LogQuery:
    """Refuse a query before any call; returns it with the severity canonicalised."""
    for moment in (query.start, query.end):
        format_timestamp(moment)  # refuses naive datetimes
    if query.end < query.start:
        raise InvalidInput("the time window ends before it starts")
    if query.end - query.start > timedelta(hours=settings.max_window_hours):
        raise InvalidInput(f"the time window may span at most {settings.max_window_hours:g} hours")
    if query.limit < 1:
        raise InvalidInput("limit must be at least 1")
    if len(query.model_pods) > MAX_MODEL_PODS:
        raise InvalidInput(f"at most {MAX_MODEL_PODS} pods can be matched for a model")
    if query.model_pods and query.model_id is None:
        raise InvalidInput("model pods need a model id")
    check_event_objects(query.event_objects)
    for value in (query.model_id, query.pod, query.role, query.text, *query.model_pods):
        if value is not None:
            check_value(value)
            if value == "":
                raise InvalidInput("filter values must not be empty")
    if query.severity_floor is None:
        return query
    return replace(query, severity_floor=check_severity(query.severity_floor))


def explorer_url(project: str, filter_: str, start: datetime, end: datetime) -> str:
    """A Logs Explorer link for ``filter_`` over ``[start, end]``.

    ``https://console.cloud.google.com/logs/query;query=Q;timeRange=S%2FE?project=P``
    with the query fully percent-encoded (it holds ``;``, ``=``, ``(`` and quotes).
    """
    window = f"{format_timestamp(start)}/{format_timestamp(end)}"
    return (
        "https://console.cloud.google.com/logs/query"
        f";query={url_quote(filter_, safe='')}"
        f";timeRange={url_quote(window, safe='')}"
        f"?project={url_quote(project, safe='')}"
    )

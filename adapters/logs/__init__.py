"""The log query model every log source speaks: records, the filter language, paging.

Three sources answer the same ``LogQuery`` with the same bounded, cursor-paged
``LogPage`` of ``LogEntry``: Cloud Logging (``adapters.cloud_logging``), pods' logs
through the Kubernetes API (``adapters.kubernetes.PodLogSource``) and the clients' logs
in Redis (``adapters.redis.RedisClientLogs``). What they share lives here, so that none
of those backends depends on another: the records, Cloud Logging's filter language
(built with every value quoted, and evaluated in memory by the twin and by the pod-log
source), and the bounds that cut messages and fields.

Private modules::

    _records      LogEntry, LogQuery, LogPage, the LogSource protocol, their bounds
    _filter       building filters: quoting, identifiers checked, the token grammar
    _event_filter Kubernetes Events beside container lines: the events-log clause
    _filter_eval  evaluating a filter on an entry, as Cloud Logging does
    _paging       cursors over page tokens, bounds on entries, bytes and messages

``memory.InMemoryLogSource`` is the twin: the same filter and paging over entries in
memory.
"""

from __future__ import annotations

from openrl_inspect.adapters.logs._event_filter import EVENTS_LOG_ID, MAX_EVENT_OBJECTS
from openrl_inspect.adapters.logs._filter import (
    MAX_FILTER_CHARS,
    MAX_MODEL_PODS,
    SEVERITIES,
    check_severity,
    check_value,
)
from openrl_inspect.adapters.logs._filter_eval import parse_timestamp
from openrl_inspect.adapters.logs._paging import (
    bounded_fields,
    collect,
    cut,
    entry_size,
    filter_for,
    order_by,
    to_log_entry,
)
from openrl_inspect.adapters.logs._records import (
    CloudLoggingSettings,
    FieldValue,
    LogEntry,
    LogEvent,
    LogPage,
    LogQuery,
    LogSource,
    LogSourceKind,
    TruncationReason,
    explorer_url,
    validate_query,
)

__all__ = [
    "EVENTS_LOG_ID",
    "MAX_EVENT_OBJECTS",
    "MAX_FILTER_CHARS",
    "MAX_MODEL_PODS",
    "SEVERITIES",
    "CloudLoggingSettings",
    "FieldValue",
    "LogEntry",
    "LogEvent",
    "LogPage",
    "LogQuery",
    "LogSource",
    "LogSourceKind",
    "TruncationReason",
    "bounded_fields",
    "check_severity",
    "check_value",
    "collect",
    "cut",
    "entry_size",
    "explorer_url",
    "filter_for",
    "order_by",
    "parse_timestamp",
    "to_log_entry",
    "validate_query",
]

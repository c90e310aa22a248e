"""The in-memory twin of the Cloud Logging adapter, for the demo and unit tests.

It keeps entries in the REST wire format (what ``entries:list`` returns), applies the
very filter the real adapter would send (evaluated by ``logfilter_eval``), and pages
through the shared :func:`collect`, so filters, bounds and cursors behave alike.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote as url_quote

from openrl_inspect.adapters.logs._filter import check_severity, format_timestamp
from openrl_inspect.adapters.logs._filter_eval import compile_filter
from openrl_inspect.adapters.logs._paging import (
    collect,
    filter_for,
    sort_key,
    to_log_entry,
)
from openrl_inspect.adapters.logs._records import (
    CloudLoggingSettings,
    LogPage,
    LogQuery,
    explorer_url,
    validate_query,
)
from openrl_inspect.core.errors import InvalidInput

_insert_ids = itertools.count(1)


def wire_entry(
    *,
    timestamp: datetime,
    message: str | None = None,
    payload: Mapping[str, Any] | None = None,
    severity: str = "INFO",
    model_id: str | None = None,
    role: str | None = None,
    pod: str | None = None,
    container: str | None = None,
    namespace: str | None = None,
    insert_id: str | None = None,
    project: str = "openrl-local",
    log_id: str = "stdout",
    settings: CloudLoggingSettings | None = None,
) -> dict[str, Any]:
    """A LogEntry JSON object as Cloud Logging stores a k8s_container line.

    With ``payload`` the entry has a ``jsonPayload`` (``message`` goes in as its
    ``message`` key), otherwise a ``textPayload``.
    """
    settings = settings or CloudLoggingSettings()
    labels: dict[str, str] = {}
    if model_id is not None:
        labels[settings.model_label_key] = model_id
    if role is not None:
        labels[settings.role_label_key] = role
    resource_labels = {"project_id": project}
    for key, value in (
        ("namespace_name", namespace),
        ("pod_name", pod),
        ("container_name", container),
    ):
        if value is not None:
            resource_labels[key] = value
    entry: dict[str, Any] = {
        "logName": f"projects/{project}/logs/{url_quote(log_id, safe='')}",
        "resource": {"type": settings.resource_type, "labels": resource_labels},
        "timestamp": format_timestamp(timestamp),
        "severity": check_severity(severity),
        "insertId": insert_id or f"mem-{next(_insert_ids):012d}",
    }
    if labels:
        entry["labels"] = labels
    if payload is not None:
        body = dict(payload)
        if message is not None:
            body["message"] = message
        entry["jsonPayload"] = json.loads(json.dumps(body, default=str))
    else:
        entry["textPayload"] = message or ""
    return entry


def event_wire_entry(
    *,
    timestamp: datetime,
    kind: str,
    name: str,
    namespace: str | None,
    reason: str | None,
    message: str | None,
    event_type: str | None = "Normal",
    event_name: str | None = None,
    event_namespace: str | None = None,
    component: str | None = None,
    host: str | None = None,
    insert_id: str | None = None,
    project: str = "openrl-local",
    cluster: str = "openrl",
) -> dict[str, Any]:
    """A Kubernetes Event as GKE's event exporter writes it to the log ``events``.

    ``jsonPayload`` is the core/v1 Event without ``count``/``firstTimestamp``/
    ``lastTimestamp`` (the entry's timestamp is when it was last seen); the resource is
    ``k8s_pod`` for a pod's event, ``k8s_node`` for a node's, else ``k8s_cluster``;
    severity WARNING for a Warning event, else INFO.
    """
    ev_namespace = event_namespace or namespace or "default"
    involved: dict[str, Any] = {"kind": kind, "name": name}
    if namespace:
        involved["namespace"] = namespace
    labels = {"project_id": project, "cluster_name": cluster, "location": "local"}
    source: dict[str, str] = {}
    if component:
        source["component"] = component
    if host:
        source["host"] = host
    payload = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {
            "name": event_name or f"{name}.{next(_insert_ids):016x}",
            "namespace": ev_namespace,
        },
        "involvedObject": involved,
        "reason": reason or "",
        "message": message or "",
        "source": source,
        "type": event_type or "",
        "eventTime": None,
        "reportingComponent": component or "",
        "reportingInstance": host or "",
    }
    return {
        "logName": f"projects/{project}/logs/events",
        "resource": _event_resource(kind, name, namespace, ev_namespace, labels),
        "timestamp": format_timestamp(timestamp),
        "severity": "WARNING" if event_type == "Warning" else "INFO",
        "insertId": insert_id or f"mem-ev-{next(_insert_ids):012d}",
        "jsonPayload": payload,
    }


def _event_resource(
    kind: str, name: str, namespace: str | None, ev_namespace: str, labels: dict[str, str]
) -> dict[str, Any]:
    """The monitored resource the exporter files an event under (k8s_cluster unless it
    can name the pod or node)."""
    if kind == "Pod" and namespace == ev_namespace:
        pod = {"namespace_name": ev_namespace, "pod_name": name}
        return {"type": "k8s_pod", "labels": {**labels, **pod}}
    if kind == "Node":
        return {"type": "k8s_node", "labels": {**labels, "node_name": name}}
    return {"type": "k8s_cluster", "labels": labels}


class InMemoryLogSource:
    """A :class:`LogSource` over entries appended in memory (by the simulator or demo).

    ``project`` only names the console link; None leaves ``explorer_url`` empty. It
    keeps the last ``capacity`` entries appended, like a log bucket's retention.
    """

    def __init__(
        self,
        settings: CloudLoggingSettings | None = None,
        *,
        project: str | None = None,
        capacity: int = 50_000,
    ) -> None:
        self._settings = settings or CloudLoggingSettings()
        self._project = project
        self._entries: deque[dict[str, Any]] = deque(maxlen=capacity)

    def append(self, *entries: Mapping[str, Any]) -> None:
        """Add LogEntry JSON objects (see :func:`wire_entry`)."""
        for entry in entries:
            sort_key(entry)  # refuses an entry without a usable timestamp now, not later
            self._entries.append(dict(entry))

    def __len__(self) -> int:
        return len(self._entries)

    def describe(self, query: LogQuery) -> tuple[str, str | None]:
        query = validate_query(query, self._settings)
        filter_ = filter_for(query, self._settings, self._project or "openrl-local")
        if self._project is None:
            return filter_, None
        return filter_, explorer_url(self._project, filter_, query.start, query.end)

    async def entries(self, query: LogQuery, cursor: str | None = None) -> LogPage:
        query = validate_query(query, self._settings)
        filter_ = filter_for(query, self._settings, self._project or "openrl-local")
        matches = compile_filter(filter_)
        rows = sorted(
            (e for e in self._entries if matches(e)), key=sort_key, reverse=query.newest_first
        )
        keys = [sort_key(row) for row in rows]

        def fetch(token: str | None, size: int, _left: float) -> tuple[Sequence[Any], str | None]:
            # Tokens name the last key served, so entries appended between two calls
            # land in their place instead of shifting every later page.
            start = 0
            if token is not None:
                try:
                    stamp, insert_id = json.loads(token)
                    after = (datetime.fromisoformat(stamp), insert_id)
                except (ValueError, TypeError):
                    # As the real service answers a forged token: 400, i.e. this.
                    raise InvalidInput(
                        "cloud logging refused the cursor; start again without it"
                    ) from None
                start = next(
                    (
                        i
                        for i, key in enumerate(keys)
                        if (key < after if query.newest_first else key > after)
                    ),
                    len(rows),
                )
            page = rows[start : start + size]
            if start + size >= len(rows):
                return page, None
            last = keys[start + size - 1]
            return page, json.dumps([last[0].isoformat(), last[1]])

        return collect(
            fetch,
            lambda raw: to_log_entry(raw, self._settings),
            query=query,
            settings=self._settings,
            filter_=filter_,
            cursor=cursor,
            deadline=time.monotonic() + self._settings.timeout_s,
            project=self._project,
        )

    async def aclose(self) -> None:
        return None

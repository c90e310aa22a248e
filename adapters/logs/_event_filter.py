"""Kubernetes Events in a log query: the clause that selects them, beside container lines.

On GKE the event exporter writes every Kubernetes Event to the log ``events`` of the
project (``logName="projects/<p>/logs/events"``; resource ``k8s_pod``, ``k8s_node`` or
``k8s_cluster``), the core/v1 Event as ``jsonPayload``: ``involvedObject`` names the
object, ``message`` the text, ``reason`` and ``type`` what happened, severity WARNING for
Warning events and INFO otherwise. An events clause selects that log and the objects
asked for; it is ORed with the container filter, each half carrying the window,
severity and text, so both kinds of entry come back in one order and one page.
Values are quoted like every other value (``_filter.quote``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from openrl_inspect.adapters.logs._filter import (
    MAX_FILTER_CHARS,
    check_value,
    log_name_equals,
    quote,
    severity_at_least,
    text_matches,
    time_window,
)
from openrl_inspect.core.errors import InvalidInput

EVENTS_LOG_ID = "events"
# A model's pods (at most MAX_MODEL_PODS) and a few Workloads.
MAX_EVENT_OBJECTS = 96
_INVOLVED = "jsonPayload.involvedObject"

EventObject = tuple[str, str, str]


def check_event_objects(objects: Sequence[EventObject]) -> None:
    if len(objects) > MAX_EVENT_OBJECTS:
        raise InvalidInput(f"at most {MAX_EVENT_OBJECTS} objects' events can be read at once")
    for obj in objects:
        if len(obj) != 3:
            raise InvalidInput("an event object is (kind, namespace, name)")
        kind, namespace, name = obj
        for value in obj:
            check_value(value)
        if not kind or not name:
            raise InvalidInput("an event object needs a kind and a name")
        del namespace  # may be empty: a cluster-scoped object


def _one_of(field: str, values: Sequence[str]) -> str:
    parts = [f"{field}={quote(v)}" for v in values]
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def events_matching(project: str, objects: Sequence[EventObject]) -> str:
    """The events log, restricted to events about ``objects`` (grouped by kind and
    namespace, so a model's pods cost one clause each, not three)."""
    groups: dict[tuple[str, str], set[str]] = {}
    for kind, namespace, name in objects:
        groups.setdefault((kind, namespace), set()).add(name)
    parts = []
    for (kind, namespace), names in sorted(groups.items()):
        clause = [f"{_INVOLVED}.kind={quote(kind)}"]
        if namespace:
            clause.append(f"{_INVOLVED}.namespace={quote(namespace)}")
        clause.append(_one_of(f"{_INVOLVED}.name", sorted(names)))
        parts.append("(" + " AND ".join(clause) + ")")
    about = parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"
    return f"{log_name_equals(project, EVENTS_LOG_ID)} AND {about}"


def only_events(
    *,
    project: str | None,
    objects: Sequence[EventObject],
    start: datetime,
    end: datetime,
    severity_floor: str | None,
    text: str | None,
) -> str:
    """The events of ``objects`` in the window and nothing else: what a model's past
    needs once its pods are gone (no container lines, so none crowd the events out)."""
    if not objects:
        raise InvalidInput("an events-only read needs the objects whose events it reads")
    if project is None:
        raise InvalidInput("events need a project (their log name names it)")
    clauses = [time_window(start, end), events_matching(project, objects)]
    if severity_floor is not None:
        clauses.append(severity_at_least(severity_floor))
    if text is not None:
        clauses.append(text_matches(text))
    combined = " AND ".join(clauses)
    if len(combined) > MAX_FILTER_CHARS:
        raise InvalidInput(f"the filter would be longer than {MAX_FILTER_CHARS} characters")
    return combined


def with_events(
    container_filter: str,
    *,
    project: str | None,
    objects: Sequence[EventObject],
    start: datetime,
    end: datetime,
    severity_floor: str | None,
    text: str | None,
) -> str:
    """``container_filter``, or it ORed with the events of ``objects`` in the window."""
    if not objects:
        return container_filter
    if project is None:
        raise InvalidInput("events need a project (their log name names it)")
    clauses = [time_window(start, end), events_matching(project, objects)]
    if severity_floor is not None:
        clauses.append(severity_at_least(severity_floor))
    if text is not None:
        clauses.append(text_matches(text))
    combined = f"({container_filter}) OR ({' AND '.join(clauses)})"
    if len(combined) > MAX_FILTER_CHARS:
        raise InvalidInput(f"the filter would be longer than {MAX_FILTER_CHARS} characters")
    return combined

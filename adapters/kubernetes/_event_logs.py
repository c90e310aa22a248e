"""Events from the events cache as log entries, for pod logs read through the API.

When Cloud Logging is not there to hold the exported events, a log query that asks for
the events of some objects gets them from the watch cache instead, written as the very
entries GKE's event exporter would have stored (``adapters.logs.memory.event_wire_entry``)
so that the same filter, order and paging apply. The cache holds one record per Event:
a repeated event shows once, at the time it was last seen.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from openrl_inspect.adapters.kubernetes._event_records import EventRecord
from openrl_inspect.adapters.kubernetes._queries import KubernetesSource
from openrl_inspect.adapters.logs import LogQuery
from openrl_inspect.adapters.logs.memory import event_wire_entry


def event_row(event: EventRecord) -> dict[str, Any] | None:
    """The Cloud Logging entry of one cached event; None without any time."""
    if event.last_at is None:
        return None
    ref = event.regarding
    return event_wire_entry(
        timestamp=datetime.fromtimestamp(event.last_at, tz=UTC),
        kind=ref.kind,
        name=ref.name,
        namespace=ref.namespace or None,
        reason=event.reason,
        message=event.note,
        event_type=event.type,
        event_name=event.name,
        event_namespace=event.namespace,
        component=event.reporting_controller,
        host=event.reporting_instance,
        # Stable across re-reads, as a cursor into the answer needs.
        insert_id=f"k8s-event-{event.uid or f'{event.namespace}/{event.name}'}",
    )


async def event_rows(
    kube: KubernetesSource, query: LogQuery, per_object: int
) -> tuple[list[dict[str, Any]], bool]:
    """The entries of the query's objects' events, and whether a cap left some out."""
    if not query.event_objects:
        return [], False
    listings = await kube.events_for(query.event_objects, limit=per_object)
    rows = [row for listing in listings for e in listing.items if (row := event_row(e))]
    return rows, any(listing.truncated for listing in listings)

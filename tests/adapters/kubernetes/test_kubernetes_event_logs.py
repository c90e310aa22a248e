"""Pod logs through the API, with the events of the objects asked for from the cache.

Without Cloud Logging the events come from the events cache, written as the entries
GKE's exporter would have stored, and go through the same filter and paging as the
lines read from the kubelet.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from openrl_inspect.adapters.kubernetes import (
    EventRecord,
    EventStore,
    ObjectRef,
    PodLogSettings,
    PodLogSource,
)
from openrl_inspect.adapters.kubernetes._api import create_api_client
from openrl_inspect.adapters.kubernetes._events import event_row
from openrl_inspect.adapters.kubernetes._pods import parse_pod
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.logs import (
    CloudLoggingSettings,
    LogQuery,
    LogSourceKind,
    TruncationReason,
    to_log_entry,
)
from support import pod_log_samples
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import kube_settings

__all__ = ["fake_kube"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

WINDOW = LogQuery(
    start=pod_log_samples.T0 - timedelta(minutes=10),
    end=pod_log_samples.NOW,
    model_id=pod_log_samples.MODEL,
    event_objects=(
        ("Pod", pod_log_samples.NS, pod_log_samples.TRAINER),
        ("Workload", pod_log_samples.NS, "job-lora-a"),
    ),
    limit=500,
)


def ev(name: str, kind: str, obj: str, minutes: float, reason: str, **kw: Any) -> EventRecord:
    at = (pod_log_samples.T0 + timedelta(minutes=minutes)).timestamp()
    fields: dict[str, Any] = {
        "namespace": pod_log_samples.NS,
        "name": name,
        "uid": f"uid-{name}",
        "type": "Warning",
        "reason": reason,
        "note": f"{reason} for {obj}",
        "action": None,
        "regarding": ObjectRef(kind, pod_log_samples.NS, obj),
        "related": None,
        "reporting_controller": "kubelet",
        "count": 3,
        "first_at": at - 60,
        "last_at": at,
        "reporting_instance": "gpu-h100-1",
    }
    fields.update(kw)
    return EventRecord(**fields)


EVENTS = [
    ev("t1", "Pod", pod_log_samples.TRAINER, 4.5, "BackOff"),
    ev("w1", "Workload", "job-lora-a", 7.25, "Admitted", type="Normal"),
    ev("s1", "Pod", pod_log_samples.SAMPLER, 5, "Unhealthy"),  # not asked for
    ev("t0", "Pod", pod_log_samples.TRAINER, -20, "Scheduled"),  # before the window
]


@pytest.fixture
async def api_client(fake_kube: FakeKube, tmp_path: Path) -> AsyncIterator[Any]:
    pod_log_samples.load(fake_kube)
    client, _ = await create_api_client(kube_settings(fake_kube, tmp_path))
    try:
        yield client
    finally:
        await client.close()


def source(api_client: Any, fake: FakeKube) -> PodLogSource:
    pods = [r for r in (parse_pod(o) for o in fake.objects("pods")) if r is not None]
    twin = MemoryKubernetesSource(pods, events=EventStore(max_age_s=10 * 365 * 86400.0))
    twin.put(*EVENTS)
    return PodLogSource(api_client, twin, PodLogSettings(), clock=pod_log_samples.NOW.timestamp)


async def test_events_join_the_pod_lines_in_time_order(
    fake_kube: FakeKube, api_client: Any
) -> None:
    page = await source(api_client, fake_kube).entries(WINDOW)
    assert not page.truncated
    lines = [(e.timestamp, e.message) for e in page.entries if e.source is LogSourceKind.POD]
    assert lines == pod_log_samples.expected_lines(WINDOW.start, WINDOW.end)
    events = [e for e in page.entries if e.source is LogSourceKind.EVENT]
    assert [(e.message, e.severity) for e in events] == [
        (f"BackOff for {pod_log_samples.TRAINER}", "WARNING"),
        ("Admitted for job-lora-a", "INFO"),
    ]
    assert [e.timestamp for e in page.entries] == sorted(e.timestamp for e in page.entries)
    assert events[0].event is not None and events[0].event.component == "kubelet"
    assert events[0].pod == pod_log_samples.TRAINER and events[1].pod is None


async def test_pages_of_lines_and_events_have_no_gaps(fake_kube: FakeKube, api_client: Any) -> None:
    src = source(api_client, fake_kube)
    whole = await src.entries(WINDOW)
    seen: list[str | None] = []
    cursor = None
    for _ in range(50):
        page = await src.entries(replace(WINDOW, limit=4), cursor)
        seen += [e.insert_id for e in page.entries]
        if (cursor := page.next_cursor) is None:
            break
    assert seen == [e.insert_id for e in whole.entries]


async def test_an_object_with_more_events_than_read_is_reported(
    fake_kube: FakeKube, api_client: Any
) -> None:
    src = source(api_client, fake_kube)
    src.bounds = replace(src.bounds, max_entries=1)
    page = await src.entries(replace(WINDOW, limit=1))
    assert page.truncated_reason is TruncationReason.SOURCE_LIMIT


def test_a_cached_event_reads_back_as_the_exporter_wrote_it() -> None:
    row = event_row(EVENTS[0])
    assert row is not None and row["logName"] == "projects/openrl-local/logs/events"
    assert row["resource"]["type"] == "k8s_pod"
    assert (row["resource"]["labels"]["namespace_name"], row["resource"]["labels"]["pod_name"]) == (
        pod_log_samples.NS,
        pod_log_samples.TRAINER,
    )
    assert row["jsonPayload"]["involvedObject"] == {
        "kind": "Pod",
        "name": pod_log_samples.TRAINER,
        "namespace": pod_log_samples.NS,
    }
    entry = to_log_entry(row, CloudLoggingSettings())
    assert entry.event is not None and entry.event.reason == "BackOff"
    assert event_row(replace(EVENTS[0], first_at=None, last_at=None)) is None

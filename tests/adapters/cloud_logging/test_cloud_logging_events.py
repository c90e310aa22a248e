"""Kubernetes Events beside container lines, from Cloud Logging's ``events`` log.

Entries are shaped as GKE's event exporter writes them (``support.kube_events``). The
same filter is evaluated by the in-memory twin and by the fake service behind the real
client; expected answers are worked out here from the raw entries.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from openrl_inspect.adapters.cloud_logging import CloudLoggingSource
from openrl_inspect.adapters.logs import (
    MAX_EVENT_OBJECTS,
    CloudLoggingSettings,
    LogEntry,
    LogQuery,
    LogSourceKind,
    filter_for,
    parse_timestamp,
    to_log_entry,
)
from openrl_inspect.adapters.logs._filter import tokenize
from openrl_inspect.adapters.logs.memory import InMemoryLogSource, wire_entry
from openrl_inspect.core.errors import InvalidInput
from support import kube_events
from support.fake_cloud_logging import FakeCloudLogging, fake_cloud_logging

__all__ = ["fake_cloud_logging"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

PROJECT = "openrl-local"
START = parse_timestamp("2026-01-05T09:00:00Z")
POD = ("Pod", "openrl", "lora-b-trainer-0")
WORKLOAD = ("Workload", "openrl", "job-lora-b-trainer-3f9c2")
QUERY = LogQuery(
    start=START,
    end=START + timedelta(hours=1),
    model_id="lora-b",
    model_pods=("lora-b-trainer-0",),
    event_objects=(POD, WORKLOAD),
    limit=100,
)


def container_lines(project: str = PROJECT) -> list[dict[str, Any]]:
    lines = []
    for minute, message in [(29, "waiting for quota"), (35, "still waiting"), (40, "quota ok")]:
        lines.append(
            wire_entry(
                timestamp=START + timedelta(minutes=minute),
                message=message,
                model_id="lora-b",
                pod="lora-b-trainer-0",
                container="trainer",
                namespace="openrl",
                project=project,
                insert_id=f"c-{minute}",
            )
        )
    lines.append(  # another model's line: never selected
        wire_entry(
            timestamp=START + timedelta(minutes=31),
            message="quota for someone else",
            model_id="lora-a",
            pod="lora-a-trainer-0",
            project=project,
        )
    )
    return lines


def event_entries(project: str = PROJECT) -> list[dict[str, Any]]:
    elsewhere = kube_events.failed_scheduling()
    elsewhere["metadata"] = {**elsewhere["metadata"], "namespace": "other", "name": "x.1"}
    elsewhere["regarding"] = {**elsewhere["regarding"], "namespace": "other"}
    started = {
        "insertId": "exporter-start",
        "textPayload": "Event exporter started watching. Some events may have been lost up "
        "to this point.",
        "resource": {"type": "k8s_cluster", "labels": {"project_id": project}},
        "timestamp": "2026-01-05T09:05:00Z",
        "severity": "WARNING",
        "logName": f"projects/{project}/logs/events",
    }
    return [
        kube_events.cloud_logging_entry(e, project=project)
        for e in (
            kube_events.failed_scheduling(),  # the model's pod: 09:39:30, Warning
            kube_events.kueue_pending(),  # the model's Workload: 09:41, Normal
            kube_events.back_off(),  # another model's pod
            kube_events.node_not_ready(),  # a node
            elsewhere,  # the same pod name in another namespace
        )
    ] + [started]


def twin(settings: CloudLoggingSettings | None = None) -> InMemoryLogSource:
    source = InMemoryLogSource(settings, project=PROJECT)
    source.append(*container_lines(), *event_entries())
    return source


def summary(entries: tuple[LogEntry, ...]) -> list[tuple[str, str, str]]:
    return [(e.timestamp.strftime("%H:%M:%S"), e.source.value, e.message[:18]) for e in entries]


EXPECTED = [
    ("09:29:00", "worker", "waiting for quota"),
    ("09:35:00", "worker", "still waiting"),
    ("09:39:30", "event", "0/3 nodes are avai"),
    ("09:40:00", "worker", "quota ok"),
    ("09:41:00", "event", "couldn't assign fl"),
]


async def test_events_come_in_time_order_with_the_container_lines() -> None:
    page = await twin().entries(QUERY)
    assert summary(page.entries) == EXPECTED and not page.truncated
    scheduling, pending = (e for e in page.entries if e.source is LogSourceKind.EVENT)
    assert scheduling.severity == "WARNING" and pending.severity == "INFO"
    assert scheduling.pod == "lora-b-trainer-0" and pending.pod is None
    assert scheduling.event is not None and pending.event is not None
    assert (scheduling.event.reason, scheduling.event.kind, scheduling.event.name) == (
        "FailedScheduling", "Pod", "lora-b-trainer-0",
    )  # fmt: skip
    assert scheduling.event.component == "default-scheduler"
    assert (pending.event.kind, pending.event.namespace, pending.event.component) == (
        "Workload", "openrl", "kueue-admission",
    )  # fmt: skip
    assert dict(pending.fields) == {"reason": "Pending", "type": "Normal", "kind": "Workload"}


async def test_without_event_objects_the_query_stays_container_only() -> None:
    settings = CloudLoggingSettings()
    plain = replace(QUERY, event_objects=())
    page = await twin().entries(plain)
    assert [e.source for e in page.entries] == [LogSourceKind.WORKER] * 3
    assert "events" not in page.filter
    with_events = filter_for(QUERY, settings, PROJECT)
    assert with_events.startswith(f"({page.filter}) OR (")


async def test_pages_hold_both_kinds_under_one_cursor() -> None:
    source = twin()
    for newest_first in (False, True):
        query = replace(QUERY, limit=2, newest_first=newest_first)
        seen: list[tuple[str, str, str]] = []
        cursor = None
        for _ in range(10):
            page = await source.entries(query, cursor)
            seen += summary(page.entries)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == (EXPECTED[::-1] if newest_first else EXPECTED)


async def test_severity_and_text_apply_to_events_too() -> None:
    source = twin()
    warnings = await source.entries(replace(QUERY, severity_floor="WARNING"))
    assert summary(warnings.entries) == [("09:39:30", "event", "0/3 nodes are avai")]
    quota = await source.entries(replace(QUERY, text="QUOTA"))
    assert [s for _, s, _ in summary(quota.entries)] == ["worker", "worker", "event"]


def test_a_node_event_entry() -> None:
    entry = to_log_entry(
        kube_events.cloud_logging_entry(kube_events.node_not_ready()), CloudLoggingSettings()
    )
    assert entry.source is LogSourceKind.EVENT and entry.event is not None
    assert (entry.event.kind, entry.event.namespace, entry.event.name) == (
        "Node", None, "gpu-h200-1",
    )  # fmt: skip
    assert entry.message == "Node gpu-h200-1 status is now: NodeNotReady"


def test_an_exporter_line_without_an_object_is_a_plain_entry() -> None:
    (started,) = [e for e in event_entries() if "textPayload" in e]
    entry = to_log_entry(started, CloudLoggingSettings())
    assert entry.source is LogSourceKind.WORKER and entry.event is None


def _shape(filter_: str) -> list[str]:
    return [t.kind if t.kind == "STRING" else t.value for t in tokenize(filter_)]


def test_a_hostile_object_name_stays_a_value() -> None:
    hostile = 'x" OR severity>=DEBUG OR "'
    settings = CloudLoggingSettings()
    benign = filter_for(replace(QUERY, event_objects=(("Pod", "openrl", "x"),)), settings, PROJECT)
    evil = filter_for(
        replace(QUERY, event_objects=(("Pod", "openrl", hostile),)), settings, PROJECT
    )
    assert _shape(benign) == _shape(evil)
    assert hostile in [t.value for t in tokenize(evil) if t.kind == "STRING"]


def test_many_objects_group_by_kind_and_namespace() -> None:
    pods = tuple(("Pod", "openrl", f"lora-b-worker-{i}") for i in range(60))
    query = replace(QUERY, event_objects=(*pods, WORKLOAD, ("Node", "", "gpu-1")))
    text = filter_for(query, CloudLoggingSettings(), PROJECT)
    assert text.count("jsonPayload.involvedObject.kind=") == 3
    assert text.count("jsonPayload.involvedObject.namespace=") == 2
    assert len(text) < 20_000


@pytest.mark.parametrize(
    "objects",
    [
        tuple(("Pod", "openrl", f"p{i}") for i in range(MAX_EVENT_OBJECTS + 1)),
        (("", "openrl", "p"),),
        (("Pod", "openrl", ""),),
        (("Pod", "openrl", "p\x00"),),
    ],
    ids=["too-many", "no-kind", "no-name", "nul"],
)
async def test_bad_objects_are_refused_before_any_call(objects: Any) -> None:
    with pytest.raises(InvalidInput):
        await twin().entries(replace(QUERY, event_objects=objects))


# ------------------------------------------------------------------ the real client


@pytest.fixture
async def real(fake_cloud_logging: FakeCloudLogging) -> AsyncIterator[CloudLoggingSource]:
    project = fake_cloud_logging.project
    fake_cloud_logging.add(*container_lines(project), *event_entries(project))
    settings = CloudLoggingSettings(
        project=project, api_endpoint=fake_cloud_logging.url, anonymous=True, page_size=2
    )
    source = CloudLoggingSource(settings)
    yield source
    await source.aclose()


async def test_the_real_client_reads_the_events_log(
    real: CloudLoggingSource, fake_cloud_logging: FakeCloudLogging
) -> None:
    page = await real.entries(QUERY)
    assert summary(page.entries) == EXPECTED
    sent = fake_cloud_logging.requests[0]["filter"]
    assert sent == page.filter
    assert f'logName="projects/{fake_cloud_logging.project}/logs/events"' in sent
    assert len(fake_cloud_logging.requests) == 3  # pages of two

"""Events: the wire shapes, the parser, the bounded store and the lookups.

The fixtures (``support.kube_events``) are checked against the official client's
``EventsV1Event`` model, so a misspelt field fails here; the parser then folds the
new-API fields and the ``deprecated*`` ones into one record.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as _client
from kubernetes import config as _config
from openrl_inspect.adapters.kubernetes import EventRecord, EventStore, ObjectRef
from openrl_inspect.adapters.kubernetes._events import MAX_NOTE_CHARS, parse_event
from openrl_inspect.adapters.kubernetes._json import parse_time
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.core.errors import InvalidInput
from support import kube_events
from support.fake_kube import FakeKube, fake_kube, write_kubeconfig

__all__ = ["fake_kube"]  # the fixture, used by name below

client: Any = _client
config: Any = _config

T0 = parse_time("2026-01-05T10:00:00Z") or 0.0


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if v not in (None, {})}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str) and value[:4].isdigit() and "T" in value:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def roundtrip(obj: dict[str, Any]) -> Any:
    with client.ApiClient() as api:
        parsed = api.deserialize(json.dumps(obj), "EventsV1Event", "application/json")
        assert _normal(api.sanitize_for_serialization(parsed)) == _normal(obj)
        return parsed


# The client's model requires eventTime, which the API server writes as null for every
# event recorded through core/v1 (kubernetes-client/python#1616): those are checked with
# a stand-in time, and the adapter reads raw JSON, never the model.
STAND_IN = "2026-01-05T09:00:00.000000Z"


@pytest.mark.parametrize("obj", kube_events.all_events(), ids=lambda o: o["reason"])
def test_fixtures_are_valid_for_the_client_model(obj: dict[str, Any]) -> None:
    checked = dict(obj)
    if checked["eventTime"] is None:
        checked["eventTime"] = STAND_IN
    parsed = roundtrip(checked)
    assert parsed.regarding.name == obj["regarding"]["name"]


def test_a_misspelt_field_is_caught() -> None:
    event = kube_events.failed_scheduling()
    event["serie"] = event.pop("series")
    with pytest.raises(AssertionError):
        roundtrip(event)


def test_the_client_model_refuses_a_core_v1_event() -> None:
    """Why the adapter never uses the model: real legacy events do not validate."""
    with pytest.raises(ValueError, match="eventTime"), client.ApiClient() as api:
        api.deserialize(json.dumps(kube_events.back_off()), "EventsV1Event", "application/json")


def test_the_typed_client_lists_the_fakes_events(fake_kube: FakeKube, tmp_path: Path) -> None:
    """The fake serves events where the official client asks for them, as it expects."""
    fake_kube.put(kube_events.failed_scheduling(), kube_events.scheduled())
    api = config.new_client_from_config(
        config_file=str(write_kubeconfig(tmp_path / "kubeconfig", fake_kube.url))
    )
    try:
        listed = client.EventsV1Api(api).list_namespaced_event("openrl", _request_timeout=5)
    finally:
        api.close()
    assert isinstance(listed, client.EventsV1EventList)
    by_reason = {e.reason: e for e in listed.items}
    assert set(by_reason) == {"FailedScheduling", "Scheduled"}
    assert by_reason["FailedScheduling"].series.count == 12
    assert by_reason["Scheduled"].regarding.kind == "Pod"


# ---------------------------------------------------------------------------- parsing


def test_a_series_event() -> None:
    rec = parse_event(kube_events.failed_scheduling())
    assert rec is not None
    assert (rec.namespace, rec.reason, rec.type, rec.action) == (
        "openrl", "FailedScheduling", "Warning", "Scheduling",
    )  # fmt: skip
    assert rec.regarding == ObjectRef(
        "Pod", "openrl", "lora-b-trainer-0", "uid-pod-lora-b-trainer-0"
    )
    assert rec.count == 12 and rec.warning
    assert rec.first_at == parse_time("2026-01-05T09:30:01.234567Z")
    assert rec.last_at == parse_time("2026-01-05T09:39:30Z")
    assert rec.reporting_controller == "default-scheduler"
    assert rec.reporting_instance == kube_events.SCHEDULER_INSTANCE
    assert rec.note is not None and rec.note.startswith("0/3 nodes are available")


def test_a_core_v1_event_reads_its_deprecated_fields() -> None:
    rec = parse_event(kube_events.back_off())
    assert rec is not None
    assert rec.count == 7
    assert rec.first_at == parse_time("2026-01-05T09:12:00Z")
    assert rec.last_at == parse_time("2026-01-05T09:18:00Z")
    assert rec.action is None and rec.reporting_controller == "kubelet"


def test_the_source_stands_in_for_missing_reporting_fields() -> None:
    rec = parse_event(kube_events.kueue_pending())
    assert rec is not None
    assert rec.reporting_controller == "kueue-admission" and rec.reporting_instance is None
    assert rec.regarding.kind == "Workload" and rec.count == 23


def test_a_node_event_regards_a_cluster_scoped_object() -> None:
    rec = parse_event(kube_events.node_not_ready())
    assert rec is not None
    assert rec.namespace == "default"
    assert (rec.regarding.kind, rec.regarding.namespace, rec.regarding.name) == (
        "Node", "", "gpu-h200-1",
    )  # fmt: skip


def test_times_fall_back_to_creation_and_count_to_one() -> None:
    event = kube_events.back_off()
    for key in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"):
        del event[key]
    rec = parse_event(event)
    assert rec is not None
    assert rec.first_at == rec.last_at == parse_time(event["metadata"]["creationTimestamp"])
    assert rec.count == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda e: e["regarding"].pop("name"),
        lambda e: e.pop("regarding"),
        lambda e: e.__setitem__("regarding", "Pod/x"),
        lambda e: e["metadata"].pop("name"),
    ],
    ids=["no-regarding-name", "no-regarding", "regarding-not-object", "no-name"],
)
def test_an_event_about_nothing_is_skipped(damage: Any) -> None:
    event = kube_events.failed_scheduling()
    damage(event)
    assert parse_event(event) is None


def test_odd_fields_spoil_only_themselves() -> None:
    event = kube_events.failed_scheduling()
    event.update(
        {
            "series": {"count": "many", "lastObservedTime": 17},
            "eventTime": "yesterday",
            "note": {"text": "x"},
            "type": None,
            "related": {"kind": "Node", "name": "gpu-h100-1"},
        }
    )
    rec = parse_event(event)
    assert rec is not None
    assert rec.count == 1 and rec.note is None and rec.type is None
    assert rec.first_at == rec.last_at == parse_time(event["metadata"]["creationTimestamp"])
    assert rec.related == ObjectRef("Node", "", "gpu-h100-1")


def test_a_long_note_is_capped() -> None:
    event = kube_events.failed_scheduling()
    event["note"] = "x" * 60_000
    rec = parse_event(event)
    assert rec is not None and rec.note is not None
    assert rec.note.startswith("x" * MAX_NOTE_CHARS)
    assert rec.note.endswith(f"[truncated {60_000 - MAX_NOTE_CHARS} chars]")


# ------------------------------------------------------------------------------ store


def event(
    name: str, last_at: float, *, kind: str = "Pod", obj: str = "p", ns: str = "openrl"
) -> EventRecord:
    return EventRecord(
        namespace=ns or "default",
        name=name,
        uid=f"uid-{name}",
        type="Warning",
        reason="BackOff",
        note=name,
        action=None,
        regarding=ObjectRef(kind, ns, obj),
        related=None,
        reporting_controller="kubelet",
        count=1,
        first_at=last_at - 5,
        last_at=last_at,
    )


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_store_keeps_the_newest_within_its_size() -> None:
    store = EventStore(max_events=3, max_age_s=3600, clock=Clock(T0))
    for i, at in enumerate([T0 - 50, T0 - 10, T0 - 40, T0 - 20]):
        store.upsert(event(f"e{i}", at))
    assert len(store) == 3 and store.evicted == 1
    assert [e.name for e in store.for_object(("Pod", "openrl", "p"))] == ["e1", "e3", "e2"]


def test_an_update_makes_an_event_new_again() -> None:
    store = EventStore(max_events=2, max_age_s=3600, clock=Clock(T0))
    store.upsert(event("old", T0 - 100))
    store.upsert(event("mid", T0 - 50))
    store.upsert(event("old", T0 - 1))  # seen again: a series grew
    store.upsert(event("new", T0 - 10))
    assert {e.name for e in store.values()} == {"old", "new"}
    assert store.evicted == 1


def test_events_age_out_on_write_and_on_read() -> None:
    clock = Clock(T0)
    store = EventStore(max_events=100, max_age_s=600, clock=clock)
    store.upsert(event("stale", T0 - 601))  # too old on arrival: never held
    store.upsert(event("a", T0 - 300))
    store.upsert(event("b", T0 - 100))
    assert {e.name for e in store.values()} == {"a", "b"} and store.evicted == 0
    clock.now = T0 + 400
    assert [e.name for e in store.for_object(("Pod", "openrl", "p"))] == ["b"]
    assert len(store) == 1 and store.evicted == 1


def test_a_relist_keeps_the_newest_and_counts_the_rest() -> None:
    store = EventStore(max_events=2, max_age_s=3600, clock=Clock(T0))
    store.upsert(event("gone", T0 - 5))
    store.replace([event("a", T0 - 30), event("b", T0 - 20), event("c", T0 - 10)])
    assert {e.name for e in store.values()} == {"b", "c"}
    assert store.evicted == 1


def test_deletes_and_churn_keep_the_heap_small() -> None:
    store = EventStore(max_events=10, max_age_s=3600, clock=Clock(T0))
    for round_ in range(200):
        store.upsert(event(f"e{round_ % 5}", T0 - 1000 + round_))
    store.delete(event("e0", 0).key)
    assert len(store) == 4 and store.evicted == 0
    assert len(store._heap) <= 2 * len(store) + 64


# ---------------------------------------------------------------------------- lookups


@pytest.mark.anyio
async def test_events_for_each_object_newest_first_and_bounded() -> None:
    store = EventStore(max_events=100, max_age_s=3600, clock=Clock(T0))
    twin = MemoryKubernetesSource(events=store)
    twin.put(
        event("p1", T0 - 30, obj="a"),
        event("p2", T0 - 10, obj="a"),
        event("p3", T0 - 20, obj="a"),
        event("w1", T0 - 5, kind="Workload", obj="a"),
        event("n1", T0 - 1, kind="Node", obj="gpu-1", ns=""),
    )
    pods, workloads, nodes, none = await twin.events_for(
        [("Pod", "openrl", "a"), ("Workload", "openrl", "a"), ("Node", "", "gpu-1"),
         ("Pod", "other", "a")],
        limit=2,
    )  # fmt: skip
    assert [e.name for e in pods.items] == ["p2", "p3"] and pods.truncated
    assert [e.name for e in workloads.items] == ["w1"] and not workloads.truncated
    assert [e.namespace for e in nodes.items] == ["default"]
    assert none.items == () and not none.truncated
    assert await twin.events_for([]) == []
    with pytest.raises(InvalidInput):
        await twin.events_for([("Pod", "openrl", "a")], limit=-1)
    status = (await twin.status()).kind("events")
    assert status is not None and status.objects == 5

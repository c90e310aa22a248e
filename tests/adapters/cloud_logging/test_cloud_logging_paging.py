"""Conversion, bounds and cursors shared by the Cloud Logging adapter and its twin."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from openrl_inspect.adapters.logs import (
    CloudLoggingSettings,
    LogQuery,
    TruncationReason,
    collect,
    cut,
    explorer_url,
    to_log_entry,
)
from openrl_inspect.adapters.logs._paging import Position, decode_cursor, encode_cursor, fingerprint
from openrl_inspect.adapters.logs.memory import InMemoryLogSource, wire_entry
from openrl_inspect.core.errors import BackendProtocolError, InvalidInput, SettingsError

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = CloudLoggingSettings(max_fields=3, max_field_chars=10, max_message_chars=20)


def test_cut_names_what_it_dropped() -> None:
    assert cut("short", 10) == ("short", 0)
    assert cut("x" * 1254, 20) == ("x" * 20 + "… [truncated 1234 chars]", 1234)


def test_a_text_entry_becomes_a_record() -> None:
    raw = wire_entry(
        timestamp=T0,
        message="hello",
        severity="error",
        model_id="m1",
        role="trainer",
        pod="p-0",
        container="worker",
        insert_id="abc",
    )
    raw["timestamp"] = "2026-03-01T12:00:00.123456789Z"  # nanoseconds, as the API sends
    entry = to_log_entry(raw, SETTINGS)
    assert entry.timestamp == T0 + timedelta(microseconds=123456)
    assert (entry.severity, entry.message, entry.insert_id) == ("ERROR", "hello", "abc")
    assert (entry.model_id, entry.role, entry.pod, entry.container) == (
        "m1",
        "trainer",
        "p-0",
        "worker",
    )
    assert dict(entry.fields) == {}


def test_structured_payloads_are_bounded() -> None:
    payload: dict[str, Any] = {
        "msg": "from msg",
        "a": 1,
        "b": None,
        "c": {"deep": [1, 2, 3]},
        "d": "x" * 50,
    }
    entry = to_log_entry(wire_entry(timestamp=T0, payload=payload), SETTINGS)
    assert entry.message == "from msg"
    assert dict(entry.fields) == {
        "a": 1,
        "b": None,
        "c": '{"deep":[1… [truncated 6 chars]',
        "…": "1 more fields",
    }


def test_a_payload_without_a_message_is_shown_as_json() -> None:
    entry = to_log_entry(wire_entry(timestamp=T0, payload={"loss": 0.5}), SETTINGS)
    assert entry.message == '{"loss":0.5}'
    assert dict(entry.fields) == {"loss": 0.5}


def test_long_messages_are_cut() -> None:
    entry = to_log_entry(wire_entry(timestamp=T0, message="y" * 25), SETTINGS)
    assert entry.message == "y" * 20 + "… [truncated 5 chars]"
    assert entry.truncated_chars == 5


def test_the_receive_time_stands_in_for_a_missing_timestamp() -> None:
    raw = wire_entry(timestamp=T0, message="m")
    del raw["timestamp"], raw["severity"]
    raw["receiveTimestamp"] = "2026-03-01T12:00:01Z"
    entry = to_log_entry(raw, SETTINGS)
    assert entry.timestamp == T0 + timedelta(seconds=1)
    assert entry.severity == "DEFAULT"


@pytest.mark.parametrize("raw", [[], {"textPayload": "no time"}, {"timestamp": "yesterday"}])
def test_entries_without_a_readable_time_are_protocol_errors(raw: Any) -> None:
    with pytest.raises(BackendProtocolError):
        to_log_entry(raw, SETTINGS)


def test_a_cursor_round_trips_and_refuses_tampering() -> None:
    position = Position("tok", 3, 50)
    cursor = encode_cursor("print", position)
    assert decode_cursor(cursor, "print") == position
    for bad in ("", "%%%", cursor + "x", encode_cursor("other", position), "e30"):
        with pytest.raises(InvalidInput):
            decode_cursor(bad, "print")


def test_the_explorer_link_has_the_documented_shape() -> None:
    url = explorer_url("my-project", 'a="b c"', T0, T0 + timedelta(hours=1))
    assert url == (
        "https://console.cloud.google.com/logs/query;query=a%3D%22b%20c%22"
        ";timeRange=2026-03-01T12%3A00%3A00Z%2F2026-03-01T13%3A00%3A00Z?project=my-project"
    )


@pytest.mark.parametrize(
    "overrides",
    [
        {"page_size": 0},
        {"page_size": 1001},
        {"timeout_s": 0},
        {"anonymous": True},
        {"project": "Not A Project"},
        {"log_id": "a b"},
        {"resource_type": 'x" OR "'},
        {"role_label_key": "bad key"},
    ],
)
def test_bad_settings_are_refused(overrides: dict[str, Any]) -> None:
    with pytest.raises(SettingsError):
        CloudLoggingSettings(**overrides)


@pytest.mark.anyio
async def test_the_twin_keeps_its_place_when_entries_arrive_between_pages() -> None:
    twin = InMemoryLogSource()
    for i in range(6):
        twin.append(
            wire_entry(timestamp=T0 + timedelta(seconds=i), message=f"m{i}", insert_id=f"i{i}")
        )
    query = LogQuery(start=T0, end=T0 + timedelta(minutes=1), limit=3)
    first = await twin.entries(query)
    twin.append(
        wire_entry(
            timestamp=T0 + timedelta(seconds=1, milliseconds=500), message="late", insert_id="early"
        ),
        wire_entry(timestamp=T0 + timedelta(seconds=30), message="new", insert_id="later"),
    )
    second = await twin.entries(query, first.next_cursor)
    third = await twin.entries(query, second.next_cursor)
    assert [e.insert_id for e in first.entries] == ["i0", "i1", "i2"]
    assert [e.insert_id for p in (second, third) for e in p.entries] == ["i3", "i4", "i5", "later"]
    assert third.next_cursor is None
    assert first.explorer_url is None  # a twin without a project has no console


@pytest.mark.anyio
async def test_the_twin_applies_its_settings_like_the_real_adapter() -> None:
    settings = CloudLoggingSettings(namespace="openrl", log_id="stdout", project="fake-project")
    twin = InMemoryLogSource(settings, project="fake-project")
    keep = wire_entry(timestamp=T0, message="kept", namespace="openrl", project="fake-project")
    elsewhere = replace_namespace(keep, "default")
    other_log = dict(keep, logName="projects/fake-project/logs/stderr", insertId="x2")
    twin.append(keep, elsewhere, other_log)
    page = await twin.entries(LogQuery(start=T0, end=T0 + timedelta(minutes=1)))
    assert [e.message for e in page.entries] == ["kept"]
    assert 'resource.labels.namespace_name="openrl"' in page.filter
    assert 'logName="projects/fake-project/logs/stdout"' in page.filter


def replace_namespace(raw: dict[str, Any], namespace: str) -> dict[str, Any]:
    resource = dict(
        raw["resource"], labels=dict(raw["resource"]["labels"], namespace_name=namespace)
    )
    return dict(raw, resource=resource, insertId="x1")


def test_queries_are_plain_frozen_records() -> None:
    query = LogQuery(start=T0, end=T0)
    with pytest.raises(AttributeError):
        query.limit = 5  # type: ignore[misc]
    assert replace(query, limit=5).limit == 5


def test_an_answer_stops_between_pages_when_its_time_is_spent() -> None:
    settings = CloudLoggingSettings(page_size=2)
    raws = [wire_entry(timestamp=T0 + timedelta(seconds=i), message=f"m{i}") for i in range(6)]
    now = [0.0]
    asked: list[tuple[str | None, int, float]] = []

    def fetch(token: str | None, size: int, left: float) -> tuple[list[Any], str | None]:
        asked.append((token, size, left))
        start = int(token or 0)
        now[0] += 4.0  # each page takes four seconds
        nxt = str(start + size) if start + size < len(raws) else None
        return raws[start : start + size], nxt

    def run(cursor: str | None) -> Any:
        return collect(
            fetch,
            lambda raw: to_log_entry(raw, settings),
            query=LogQuery(start=T0, end=T0 + timedelta(minutes=1), limit=6),
            settings=settings,
            filter_="f",
            cursor=cursor,
            deadline=now[0] + 6.0,
            project=None,
            clock=lambda: now[0],
        )

    first = run(None)
    assert [e.message for e in first.entries] == ["m0", "m1", "m2", "m3"]
    assert first.truncated_reason is TruncationReason.TIME_BUDGET
    assert [left for _, _, left in asked] == [6.0, 2.0]  # each call gets what is left
    second = run(first.next_cursor)
    assert asked[-1][0] == "4"  # resumed at the backend's own token
    assert [e.message for e in second.entries] == ["m4", "m5"]
    assert second.next_cursor is None


@pytest.mark.anyio
async def test_the_twin_keeps_only_its_capacity_and_refuses_forged_tokens() -> None:
    twin = InMemoryLogSource(capacity=3)
    for i in range(5):
        twin.append(wire_entry(timestamp=T0 + timedelta(seconds=i), message=f"m{i}"))
    query = LogQuery(start=T0, end=T0 + timedelta(minutes=1))
    page = await twin.entries(query)
    assert len(twin) == 3
    assert [e.message for e in page.entries] == ["m2", "m3", "m4"]
    forged = encode_cursor(fingerprint(page.filter, "timestamp asc"), Position("nonsense"))
    with pytest.raises(InvalidInput):
        await twin.entries(query, forged)

"""Client logs in Redis: written by the recorder, read in batches by ``RedisClientLogs``."""

from __future__ import annotations

import json
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.logs import CloudLoggingSettings, LogSourceKind
from openrl_inspect.adapters.redis import ClientLogRequest, RedisClientLogs, RedisStateStore
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.state import keys

pytestmark = pytest.mark.anyio

T0 = 1_772_366_400.0


@pytest.fixture
def server() -> fakeredis.FakeServer:
    return fakeredis.FakeServer()


@pytest.fixture
def redis(server: fakeredis.FakeServer) -> Any:
    return fakeredis.FakeAsyncRedis(server=server, decode_responses=True)


@pytest.fixture
def store(server: fakeredis.FakeServer) -> RedisStateStore:
    return RedisStateStore.in_memory(server)


@pytest.fixture
def reader(store: RedisStateStore) -> RedisClientLogs:
    reader = RedisClientLogs.of(store)
    assert reader is not None
    return reader


async def put(redis: Any, mid: str, at: float, level: str, msg: str, **extra: Any) -> str:
    member = json.dumps({"id": f"r/{at}/{msg}", "t": at, "level": level, "msg": msg, **extra})
    await redis.zadd(keys.logs(mid), {member: at})
    return member


async def test_what_the_recorder_writes_is_read_back_bounded(
    redis: Any, store: RedisStateStore
) -> None:
    rec = AsyncRecorder(
        redis, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    rec.client_log("m-1", "warning", "slow step", {"step": 3, "nested": {"a": [1, 2]}}, at=T0 + 1)
    rec.client_log("m-1", 40, "x" * 5000, at=T0 + 2)
    rec.client_log("m-2", "INFO", "other model", at=T0 + 1.5)
    await rec.flush()
    (found,) = await RedisClientLogs(
        store, bounds=CloudLoggingSettings(max_message_chars=100)
    ).client_logs([ClientLogRequest("m-1", T0, T0 + 10, limit=10)])
    first, second = (line.entry for line in found.lines)
    assert first.source is LogSourceKind.CLIENT and first.model_id == "m-1"
    assert (first.severity, first.message) == ("WARNING", "slow step")
    assert first.fields["step"] == 3 and first.fields["nested"] == '{"a":[1,2]}'
    assert first.timestamp.timestamp() == pytest.approx(T0 + 1)
    assert second.severity == "ERROR" and second.truncated_chars > 0
    assert second.message.endswith(f"[truncated {second.truncated_chars} chars]")
    assert found.exhausted


async def test_a_batch_of_models_is_one_round_trip(
    redis: Any, store: RedisStateStore, reader: Any
) -> None:
    for mid in ("a", "b", "c"):
        for i in range(3):
            await put(redis, mid, T0 + i, "INFO", f"{mid}{i}")
    await reader.client_logs([ClientLogRequest("a", T0, T0 + 9, 1)])  # schema check done
    trips = store.trips.count
    slices = await reader.client_logs(
        [ClientLogRequest(m, T0, T0 + 9, limit=2, newest_first=m == "b") for m in ("a", "b", "c")]
    )
    assert store.trips.count == trips + 1
    assert [[line.entry.message for line in s.lines] for s in slices] == [
        ["a0", "a1", "a2"],
        ["b2", "b1", "b0"],
        ["c0", "c1", "c2"],
    ]


async def test_resume_is_strictly_after_the_position_ties_included(redis: Any, reader: Any) -> None:
    members = [await put(redis, "m", T0 + 5, "INFO", f"tie {i}") for i in range(4)]
    members.sort()
    await put(redis, "m", T0 + 6, "INFO", "later")
    (found,) = await reader.client_logs(
        [ClientLogRequest("m", T0, T0 + 9, limit=10, after=(T0 + 5, members[1]))]
    )
    assert [line.member for line in found.lines] == [*members[2:], found.lines[-1].member]
    assert found.lines[-1].entry.message == "later"
    (back,) = await reader.client_logs(
        [ClientLogRequest("m", T0, T0 + 9, limit=10, newest_first=True, after=(T0 + 5, members[2]))]
    )
    assert [line.member for line in back.lines] == [members[1], members[0]]


async def test_filters_apply_while_scanning_and_the_scan_is_bounded(
    redis: Any, reader: Any
) -> None:
    for i in range(300):
        await put(redis, "m", T0 + i, "DEBUG" if i % 50 else "ERROR", f"line {i}")
    (found,) = await reader.client_logs(
        [ClientLogRequest("m", T0, T0 + 1000, limit=2, severity_floor="ERROR")]
    )
    # 2 * 8 + 32 members scanned: one match in them, and the scan says where it stopped.
    assert [line.entry.message for line in found.lines] == ["line 0"]
    assert not found.exhausted and found.scanned_to is not None
    assert found.scanned_to[0] == T0 + 47
    (found,) = await reader.client_logs(
        [ClientLogRequest("m", T0, T0 + 1000, limit=5, text="LINE 25")]
    )
    assert [line.entry.message for line in found.lines] == ["line 25"]


async def test_a_member_that_is_not_a_record_is_shown_not_dropped(redis: Any, reader: Any) -> None:
    await redis.zadd(keys.logs("m"), {"not json at all": T0})
    await put(redis, "m", T0 + 1, "NOPE", "odd level")
    (found,) = await reader.client_logs([ClientLogRequest("m", T0, T0 + 9, limit=5)])
    assert [(line.entry.severity, line.entry.message) for line in found.lines] == [
        ("DEFAULT", "not json at all"),
        ("DEFAULT", "odd level"),
    ]


@pytest.mark.parametrize(
    "request_",
    [
        ClientLogRequest("bad{id}", T0, T0 + 1, 1),
        ClientLogRequest("m", T0 + 1, T0, 1),
        ClientLogRequest("m", T0, T0 + 1, 0),
        ClientLogRequest("m", T0, T0 + 1, 1, severity_floor="LOUD"),
        ClientLogRequest("m", T0, T0 + 1, 1, text="nul\x00"),
    ],
)
async def test_bad_requests_are_refused_before_any_read(
    store: RedisStateStore, reader: Any, request_: Any
) -> None:
    trips = store.trips.count
    with pytest.raises(InvalidInput):
        await reader.client_logs([request_])
    assert store.trips.count == trips

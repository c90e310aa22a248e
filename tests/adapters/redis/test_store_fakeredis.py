"""The recorder writes and the Redis adapter reads back, on fakeredis."""

from __future__ import annotations

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.errors import SchemaVersionError
from openrl_inspect.recorder import AsyncRecorder, Retention
from openrl_inspect.state import keys
from openrl_inspect.state.paging import ListRef, PageRequest
from openrl_inspect.state.records import ModelRecord, StepRecord

pytestmark = pytest.mark.anyio


def _pair() -> tuple[AsyncRecorder, RedisStateStore, fakeredis.FakeAsyncRedis]:
    server = fakeredis.FakeServer()
    raw = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(raw, retention=Retention(max_steps_per_model=5, trim_every_steps=1))
    return rec, RedisStateStore.in_memory(server), raw


async def walk(store: RedisStateStore, ref: ListRef, size: int, newest_first: bool) -> list[str]:
    seen: list[str] = []
    after = None
    while True:
        (page,) = await store.pages([PageRequest(ref, size, after, newest_first)])
        seen += [p.member for p in page.items]
        if not page.has_next:
            return seen
        after = page.items[-1]


async def test_cursor_walk_has_no_gaps_or_duplicates_even_with_tied_scores() -> None:
    rec, store, _ = _pair()
    # 80 sessions sharing only 3 distinct timestamps: more ties than the adapter's slack.
    sids = [f"s{i:03d}" for i in range(80)]
    for i, sid in enumerate(sids):
        rec.session_opened(sid, "o", at=float(100 + i % 3))
    await rec.flush()
    ref = ListRef("sessions", ("live",))
    for size in (1, 7, 50):
        for newest_first in (True, False):
            got = await walk(store, ref, size, newest_first)
            assert sorted(got) == sids
            assert len(got) == len(set(got))
            scores = [100 + int(s[1:]) % 3 for s in got]
            assert scores == sorted(scores, reverse=newest_first)


async def test_cursor_survives_removal_of_its_item() -> None:
    rec, store, _ = _pair()
    for i in range(6):
        rec.session_opened(f"s{i}", "o", at=float(i))
    await rec.flush()
    ref = ListRef("sessions", ("live",))
    (page,) = await store.pages([PageRequest(ref, 3)])
    assert [p.member for p in page.items] == ["s5", "s4", "s3"]
    rec.session_closed("s3", at=10.0)
    await rec.flush()
    (page2,) = await store.pages([PageRequest(ref, 3, page.items[-1])])
    assert [p.member for p in page2.items] == ["s2", "s1", "s0"]
    assert page2.total == 5 and not page2.has_next


async def test_steps_past_the_cap_are_trimmed_with_their_ops() -> None:
    rec, store, raw = _pair()
    rec.model_created("m1", "s1", "base")
    for step in range(12):
        rec.op_accepted("m1", f"o{step}", "forward_backward", step, at=float(step))
        rec.op_finished("m1", f"o{step}", at=float(step) + 0.5)
    await rec.flush()
    (model,) = await store.models(["m1"])
    assert isinstance(model, ModelRecord)
    assert model.latest_step == 11
    assert model.kept_steps == 5
    assert await raw.exists(keys.op("m1", "o0")) == 0
    assert await raw.exists(keys.step("m1", 0)) == 0
    kept = await store.ops([("m1", "o11"), ("m1", "o2")])
    assert kept[0] is not None and kept[1] is None


async def test_ended_model_expires_and_closed_session_too() -> None:
    rec, store, raw = _pair()
    rec.session_opened("s1", "o", at=1.0)
    rec.model_created("m1", "s1", "base", at=1.0)
    rec.op_accepted("m1", "o1", "sample", 0, at=2.0)
    rec.placement_admitted("m1", "p1", "wl", "ns", ["pod"], "node", ["GPU-1"], at=1.5)
    rec.model_state("m1", "ended", at=3.0)
    rec.session_closed("s1", at=4.0)
    await rec.flush()
    ttl = Retention(max_steps_per_model=5).ended_model_ttl_s
    for key in (
        keys.model("m1"),
        keys.op("m1", "o1"),
        keys.step("m1", 0),
        keys.placement("m1", "p1"),
    ):
        assert 0 < await raw.ttl(key) <= ttl, key
    assert await raw.ttl(keys.session("s1")) > 0
    (model,) = await store.models(["m1"])
    assert isinstance(model, ModelRecord) and model.state == "ended"
    assert set(model.transitions) == {"waiting", "ended"}
    (live,) = await store.pages([PageRequest(ListRef("sessions", ("live",)), 10)])
    assert live.total == 0


async def test_model_moves_between_state_indexes() -> None:
    rec, store, _ = _pair()
    rec.model_created("m1", "s1", "base", at=1.0)
    rec.model_state("m1", "placed", at=2.0)
    rec.model_state("m1", "active", at=3.0)
    await rec.flush()
    pages = await store.pages(
        [PageRequest(ListRef("models_in_state", (s,)), 10) for s in keys.MODEL_STATES]
    )
    assert {s: p.total for s, p in zip(keys.MODEL_STATES, pages, strict=True)} == {
        "waiting": 0,
        "placed": 0,
        "active": 1,
        "failed": 0,
        "ended": 0,
    }


async def test_records_written_twice_read_once() -> None:
    rec, store, _ = _pair()
    for _ in range(2):
        rec.model_created("m1", "s1", "base", at=1.0)
        rec.op_accepted("m1", "o1", "sample", 0, at=2.0)
        rec.op_finished("m1", "o1", at=3.0)
    await rec.flush()
    (step,) = await store.steps([("m1", 0)])
    assert isinstance(step, StepRecord) and step.op_count == 1
    (open_ops,) = await store.pages([PageRequest(ListRef("open_ops", ("m1",)), 10)])
    assert open_ops.total == 0


async def test_newer_schema_is_refused_clearly() -> None:
    _, store, raw = _pair()
    await raw.set(keys.SCHEMA_VERSION_KEY, keys.SCHEMA_VERSION + 1)
    with pytest.raises(SchemaVersionError, match="newer than this inspector understands"):
        await store.models(["m1"])

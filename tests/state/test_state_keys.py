"""Key layout, record encoding and cursors: pure logic."""

from __future__ import annotations

import pytest
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.state import keys
from openrl_inspect.state.paging import Position, decode_cursor, encode_cursor
from openrl_inspect.state.records import ModelRecord, OpRecord, encode
from redis.crc import key_slot


def test_all_keys_of_a_model_share_one_cluster_slot() -> None:
    mid = "model-42"
    model_keys = [
        keys.model(mid),
        keys.steps(mid),
        keys.step(mid, 7),
        keys.step_ops(mid, 7),
        keys.op(mid, "op-1"),
        keys.open_ops(mid),
        keys.model_workers(mid),
        keys.placements(mid),
        keys.placement(mid, "p-1"),
    ]
    slots = {key_slot(k.encode()) for k in model_keys}
    assert len(slots) == 1
    # and a different model lands elsewhere (with overwhelming likelihood for these ids)
    assert key_slot(keys.model("model-43").encode()) != slots.pop()


def test_session_keys_share_a_slot() -> None:
    assert key_slot(keys.session("s1").encode()) == key_slot(keys.session_models("s1").encode())


@pytest.mark.parametrize("bad", ["", "a b", "x}{y", "{m:other}", "a\nb", "x" * 200])
def test_ids_that_could_forge_keys_are_invalid(bad: str) -> None:
    assert not keys.valid_id(bad)


def test_encode_decode_round_trip() -> None:
    h = encode(
        {
            "id": "m1",
            "session_id": "s1",
            "base_model": "Qwen",
            "lora": {"rank": 8},
            "settings": {},
            "state": "failed",
            "state_at": 12.5,
            "failed_at": 12.5,
            "waiting_at": 1.0,
            "failure_reason": "oom",
            "ignored": None,
        }
    )
    assert "ignored" not in h
    rec = ModelRecord.from_hash(h, latest_step=3, kept_steps=4)
    assert rec.lora.value() == {"rank": 8}
    assert rec.transitions == {"waiting": 1.0, "failed": 12.5}
    assert rec.failure_reason == "oom"
    assert rec.latest_step == 3


def test_malformed_field_is_a_decode_error() -> None:
    with pytest.raises(ValueError, match="accepted_at"):
        OpRecord.from_hash({"id": "o", "accepted_at": "yesterday"})


def test_cursor_round_trip_and_rejection() -> None:
    pos = Position(1712.25, "model-1")
    cursor = encode_cursor("steps", pos)
    assert decode_cursor("steps", cursor) == pos
    with pytest.raises(InvalidInput):
        decode_cursor("sessions", cursor)  # a cursor of another list
    for junk in ["", "!!!", "bm90IGpzb24", encode_cursor("steps", pos)[:-3]]:
        with pytest.raises(InvalidInput):
            decode_cursor("steps", junk)

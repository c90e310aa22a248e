"""The field decoders: strict about what a field holds, capped in what it returns."""

from __future__ import annotations

import pytest
from openrl_inspect.core.errors import BadRecord, DecodeError
from openrl_inspect.state import decode


@pytest.mark.parametrize("raw", ["yesterday", "nan", "inf", "-inf", "1e300", "-1e300"])
def test_a_time_that_is_no_time_is_refused(raw: str) -> None:
    with pytest.raises(DecodeError, match="'at'"):
        decode.time({"at": raw}, "at")


def test_times_in_range_pass_and_absent_is_none() -> None:
    assert decode.time({"at": "1700000000.5"}, "at") == 1700000000.5
    assert decode.time({}, "at") is None and decode.time({"at": ""}, "at") is None


@pytest.mark.parametrize("value", [-1, -4, 1.5, 2.0**31, float("nan"), float("inf")])
def test_a_counter_is_a_whole_number_in_int32(value: float) -> None:
    with pytest.raises(DecodeError):
        decode.counter(value, "step number")


def test_an_unknown_choice_is_refused_never_defaulted() -> None:
    assert decode.choice({}, "state", ("live", "closed"), "live") == "live"
    with pytest.raises(DecodeError, match="exploded"):
        decode.choice({"state": "exploded"}, "state", ("live", "closed"), "live")


def test_long_text_is_cut_with_a_marker() -> None:
    got = decode.text({"s": "y" * (decode.MAX_TEXT_CHARS + 10)}, "s")
    assert got.startswith("y" * decode.MAX_TEXT_CHARS)
    assert got.endswith(f"[truncated: {decode.MAX_TEXT_CHARS + 10} characters stored]")


@pytest.mark.parametrize(
    "raw", ["{", "null", "[]", '{"a": NaN}', '{"a": 1e400}', "[" * 70 + "]" * 70]
)
def test_a_json_field_that_is_no_object_fails_its_record_when_read(raw: str) -> None:
    field = decode.JsonField("model", "m1", "lora", raw)  # building it never fails
    with pytest.raises(BadRecord, match="model 'm1'"):
        field.value()


def test_a_json_field_nested_to_the_cap_is_read() -> None:
    raw = '{"a":' + "[" * (decode.MAX_JSON_DEPTH - 1) + "]" * (decode.MAX_JSON_DEPTH - 1) + "}"
    assert "a" in decode.JsonField("model", "m1", "lora", raw).value()


def test_a_huge_json_field_is_a_marker() -> None:
    raw = '{"a": "' + "z" * decode.MAX_JSON_CHARS + '"}'
    got = decode.JsonField("model", "m1", "lora", raw).value()
    assert got == {"truncated": True, "storedChars": len(raw), "limitChars": decode.MAX_JSON_CHARS}

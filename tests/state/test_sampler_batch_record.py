"""SamplerBatchRecord.from_json: one bad field spoils only itself, a bad time the record."""

from __future__ import annotations

from typing import Any

import pytest
from openrl_inspect.core.errors import DecodeError
from openrl_inspect.state.decode import MAX_INT, MAX_TEXT_CHARS
from openrl_inspect.state.records import SamplerBatchRecord

T0 = 1_772_366_400.0


def decode(**fields: Any) -> SamplerBatchRecord:
    return SamplerBatchRecord.from_json("m", {"id": "r/1", "t": T0, **fields})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (64, 64),
        (64.9, 64),  # a float count is cut
        (0, 0),
        (MAX_INT, MAX_INT),
        (MAX_INT + 1, None),
        (-1, None),
        (True, None),  # JSON's true is no count
        ("64", None),
        (None, None),
        (float("nan"), None),
        (float("inf"), None),
        (10**400, None),
    ],
)
def test_counts(value: Any, expected: int | None) -> None:
    assert decode(batch_size=value).batch_size == expected
    assert decode(queue_depth=value).queue_depth == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.25, 0.25),
        (0, 0.0),
        (-0.1, None),
        (float("nan"), None),
        (float("-inf"), None),
        ("1", None),
    ],
)
def test_latency(value: Any, expected: float | None) -> None:
    assert decode(latency_s=value).latency_s == expected


@pytest.mark.parametrize("t", [None, "now", float("nan"), float("inf"), 1e300, -1e300, True])
def test_a_record_without_a_usable_time_is_refused(t: Any) -> None:
    with pytest.raises(DecodeError):
        SamplerBatchRecord.from_json("m", {"id": "r/1", "t": t})


def test_times_before_1970_still_decode_when_a_datetime_holds_them() -> None:
    assert decode(t=-86_400.0 * 365).at == -86_400.0 * 365


def test_texts_are_strings_and_cut() -> None:
    rec = decode(worker="x" * (MAX_TEXT_CHARS + 10), op_id=12, id=["not", "text"])
    assert rec.worker is not None and rec.worker.startswith("x" * 100)
    assert len(rec.worker) < MAX_TEXT_CHARS + 100 and "truncated" in rec.worker
    assert (rec.op_id, rec.id) == (None, "")

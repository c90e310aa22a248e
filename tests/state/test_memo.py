"""Decoded records kept by their stored text: bounded, values only, never errors."""

from __future__ import annotations

import orjson
import pytest
from openrl_inspect.adapters.redis import _sampler_batches
from openrl_inspect.core.errors import BadRecord, DecodeError
from openrl_inspect.state import rollup
from openrl_inspect.state.memo import Memo


def test_the_least_recently_used_goes_first_and_the_size_holds() -> None:
    memo: Memo[str, int] = Memo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # now b is the oldest
    memo.put("c", 3)
    assert memo.get("b") is None and memo.get("a") == 1 and memo.get("c") == 3
    assert len(memo) == 2 and memo.hits == 3 and memo.misses == 1


def _step_entry(n: int, ops: int) -> str:
    rest = ["forward", str(n), "succeeded", "1.0", "1.0", "1.5", "2.0", "w-1", 0]
    listed = [[f"op-{i}", *rest] for i in range(ops)]
    return orjson.dumps({"n": n, "s": "1.0", "f": "2.0", "e": 1, "c": ops, "o": listed}).decode()


def test_a_step_decoded_once_is_the_same_object_after_and_big_steps_are_not_kept() -> None:
    small, big = _step_entry(7, 4), _step_entry(8, 40)
    first = rollup._step("m-memo", small)
    assert rollup._step("m-memo", small) is first
    assert first.number == 7 and len(first.ops) == 4 and first.ops[0].record is not None
    # The same text for another model is another step (its records carry the model id).
    other = rollup._step("m-other", small)
    assert other is not first and other.ops[0].record.model_id == "m-other"  # type: ignore[union-attr]
    assert rollup._step("m-memo", big) is not rollup._step("m-memo", big)


def test_a_malformed_step_raises_every_time() -> None:
    for _ in range(2):
        with pytest.raises(DecodeError):
            rollup._step("m-memo", "{not json")
    assert ("m-memo", "{not json") not in rollup._STEPS._values


def test_a_bad_sampler_batch_is_each_requests_own_and_a_good_one_is_kept() -> None:
    bad = _sampler_batches._entry("m-memo", "[1, 2]", 5.0)
    again = _sampler_batches._entry("m-memo", "[1, 2]", 5.0)
    assert isinstance(bad.record, BadRecord) and again.record is not bad.record
    good = '{"t": 1700000000.0, "id": "b-1", "batch_size": 4}'
    kept = _sampler_batches._entry("m-memo", good, 1700000000.0)
    assert _sampler_batches._entry("m-memo", good.encode(), 1700000000.0) is kept
    assert not isinstance(kept.record, BadRecord) and kept.record.batch_size == 4

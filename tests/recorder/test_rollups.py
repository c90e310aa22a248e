"""The recorder's rollups: a replayed batch leaves them as one write did; the counters'
quantiles from their buckets."""

from __future__ import annotations

from typing import Any

import fakeredis
from openrl_inspect.recorder._batch import Batch
from openrl_inspect.recorder._config import Retention
from openrl_inspect.recorder._send import SyncPipe
from openrl_inspect.recorder._writes import WRITES
from openrl_inspect.state import keys, rollup


def _records() -> list[tuple[str, tuple[Any, ...]]]:
    out: list[tuple[str, tuple[Any, ...]]] = [
        ("model_created", ("m-1", "s-1", "base", {}, {}, 100.0)),
    ]
    for i in range(6):
        oid, t = f"op-{i}", 101.0 + i
        out.append(("op_accepted", ("m-1", oid, "forward_backward", i // 2, t)))
        out.append(("op_started", ("m-1", oid, "w-1", t + 0.1)))
        status = "failed" if i == 3 else "succeeded"
        out.append(("op_finished", ("m-1", oid, status, t + 0.1 + 0.2 * i)))
    out.append(("step_metrics", ("m-1", 2, {"loss": 1.0}, 110.0, True)))
    return out


def _state(r: Any) -> tuple[dict[str, str], list[Any]]:
    return (
        r.hgetall(keys.rollup("m-1")),
        r.zrange(keys.rollup_steps("m-1"), 0, -1, withscores=True),
    )


def _write(r: Any, records: list[tuple[str, tuple[Any, ...]]], times: int) -> None:
    b = Batch(Retention())
    for kind, args in records:
        WRITES[kind](b, *args)
    commands = b.commands()
    for _ in range(times):
        # The recorder's own sending: its scripts go by EVALSHA, EVAL when not cached.
        results = SyncPipe(r, owned=False).execute(commands, 10.0)
        assert not [x for x in results if isinstance(x, Exception)]


def test_a_replayed_batch_leaves_the_rollup_as_one_write() -> None:
    once, twice, split = (fakeredis.FakeRedis(decode_responses=True) for _ in range(3))
    records = _records()
    _write(once, records, 1)
    _write(twice, records, 2)
    for i in range(0, len(records), 4):  # one record's effects spread over batches
        _write(split, records[i : i + 4], 2)
    assert _state(once) == _state(twice) == _state(split)
    counters, steps = _state(once)
    assert counters["n:forward_backward"] == "6" and counters["failed:forward_backward"] == "1"
    assert counters["last_step"] == "2" and len(steps) == 3
    (totals,) = rollup.kind_totals(counters)
    assert totals.count == 6 and sum(totals.buckets) == 6
    assert totals.duration_sum_s == sum(0.2 * i for i in range(6))


def test_quantiles_from_buckets() -> None:
    edges = rollup.BUCKET_EDGES_S
    counts = [0] * (len(edges) + 1)
    counts[2], counts[4] = 5, 5  # 5 ops in (0.03, 0.1], 5 in (0.3, 1]
    t = rollup.KindTotals("k", 10, 0, 0.0, tuple(counts))
    assert t.quantile_s(0.5) == edges[2] and t.quantile_s(0.9) == edges[4]
    assert rollup.KindTotals("k", 0, 0, 0.0, (0,) * len(counts)).quantile_s(0.5) is None

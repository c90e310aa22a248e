"""The recorder on fakeredis: hot path, write combining, drop policy, exact counters."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import replace
from typing import Any, cast

import fakeredis
import pytest
import redis.exceptions as rexc
from hypothesis import HealthCheck, example, given, settings, strategies
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.recorder import (
    LOW_VALUE,
    AsyncRecorder,
    Recorder,
    RecorderSettings,
    RecorderStats,
    Retention,
    WorkerInfo,
)
from openrl_inspect.state import keys
from openrl_inspect.state.records import ModelRecord, OpRecord

QUIET = RecorderSettings(publish_counters=False, recorder_id="rec-test", flush_at_exit=False)


def fake() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True)


def balanced(st_: RecorderStats) -> bool:
    return st_.recorded == st_.written + st_.dropped + st_.pending


def dump(client: Any, with_ttl: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        if kind == "hash":
            value: Any = client.hgetall(key)
        elif kind == "zset":
            value = client.zrange(key, 0, -1, withscores=True)
        else:
            value = client.get(key)
        out[key] = (kind, value, client.ttl(key) > 0) if with_ttl else (kind, value)
    return out


class Flaky:
    """A client whose pipelines fail on demand: before applying, or after (lost reply)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.plan: list[str] = []  # "refuse" | "lose" per coming execute, then normal
        self.executes = 0

    def pipeline(self, transaction: bool = False) -> Any:
        return _FlakyPipe(self, self.client.pipeline(transaction=transaction))

    def close(self) -> None:
        self.client.close()


class _FlakyPipe:
    def __init__(self, owner: Flaky, pipe: Any) -> None:
        self.owner, self.pipe = owner, pipe

    def execute_command(self, *args: Any) -> None:
        self.pipe.execute_command(*args)

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        self.owner.executes += 1
        step = self.owner.plan.pop(0) if self.owner.plan else "ok"
        if step == "refuse":
            raise rexc.ConnectionError("refused")
        result = self.pipe.execute(raise_on_error=raise_on_error)
        if step == "lose":
            raise rexc.TimeoutError("the answer was lost")
        return list(result)


# -- hot path ---------------------------------------------------------------------------------


def test_recording_is_an_append_and_touches_no_client() -> None:
    flaky = Flaky(fake())
    rec = Recorder(flaky, settings=QUIET, start=False)  # type: ignore[arg-type]
    for i in range(100):
        rec.op_started("m1", f"o{i}", "w1", at=1.0)
    assert flaky.executes == 0
    st_ = rec.stats()
    assert (st_.recorded, st_.pending, st_.written, st_.dropped) == (100, 100, 0, 0)
    assert rec.flush() == 100
    # One pipeline for the whole batch, then its rollup script again as EVAL: a new
    # server has no script cached (its EVALSHA answered NOSCRIPT).
    assert flaky.executes == 2
    assert balanced(rec.stats()) and rec.stats().pending == 0
    for i in range(100):
        rec.op_finished("m1", f"o{i}", "succeeded", at=2.0)
    assert rec.flush() == 100
    assert flaky.executes == 3  # cached now: one pipeline
    assert balanced(rec.stats()) and rec.stats().pending == 0


def test_record_methods_never_raise_even_with_bad_input() -> None:
    client = fake()
    rec = Recorder(client, settings=QUIET, start=False)
    rec.model_state("m1", "no-such-state", at=1.0)  # invalid: dropped at flush
    rec.op_accepted("m1", "o1", "forward", "not-a-step", at=1.0)  # type: ignore[arg-type]
    rec.op_accepted("m1", "o2", "forward", 3, at=1.0)
    rec.client_log("m1", 25, "between INFO and WARNING", {"obj": object()}, at=2.0)
    assert rec.flush() == 2
    st_ = rec.stats()
    assert st_.dropped_by_reason == {"invalid": 2}
    assert st_.dropped_by_kind == {"model_state": 1, "op_accepted": 1}
    assert client.hget(keys.op("m1", "o2"), "status") == "accepted"
    ((entry, _),) = cast(
        list[tuple[str, float]], client.zrange(keys.logs("m1"), 0, -1, withscores=True)
    )
    assert json.loads(entry)["level"] == "INFO"
    assert balanced(st_)


def test_a_call_whose_arguments_cannot_be_captured_is_counted_not_raised() -> None:
    rec = Recorder(fake(), settings=QUIET, start=False)
    rec.heartbeat("w1", "trainer", "pod", "node", payload=[1, 2, 3])  # type: ignore[arg-type]
    rec.placement_admitted("m1", "p1", "wl", "ns", 42, "node", [])  # type: ignore[arg-type]
    rec.heartbeat("w1", "trainer", "pod", "node", at=1.0)
    st_ = rec.stats()
    assert st_.recorded == 3 and st_.pending == 1
    assert st_.dropped_by_reason == {"malformed": 2}
    assert st_.dropped_by_kind == {"heartbeat": 1, "placement_admitted": 1}


def test_enumerated_arguments_outside_the_domain_are_dropped_as_invalid() -> None:
    # What the reader would refuse (state/records.py) is never written: the op keeps the
    # status it had, and each refused record is counted, by kind.
    client = fake()
    rec = Recorder(client, settings=QUIET, start=False)
    rec.op_accepted("m1", "o1", "forward", 1, at=1.0)
    rec.op_finished("m1", "o1", status="FAILED", at=2.0)  # the reader's values are lower case
    rec.op_finished("m1", "o1", status="done", at=2.0)
    rec.client_log("m1", "verbose", "no such level", at=2.0)
    rec.client_log("m1", "warn", "an alias of WARNING", at=2.0)
    rec.model_state("m1", "paused", at=2.0)
    rec.op_finished("m1", "o1", status="cancelled", at=3.0)
    assert rec.flush() == 3
    st_ = rec.stats()
    assert st_.dropped_by_reason == {"invalid": 4}
    assert st_.dropped_by_kind == {"op_finished": 2, "client_log": 1, "model_state": 1}
    assert balanced(st_) and st_.pending == 0
    op = OpRecord.from_hash(cast(dict[str, str], client.hgetall(keys.op("m1", "o1"))))
    assert (op.status, op.finished_at) == ("cancelled", 3.0)
    (entry,) = cast(list[str], client.zrange(keys.logs("m1"), 0, -1))
    assert json.loads(entry)["level"] == "WARNING"
    assert not client.exists(keys.model("m1"))


@pytest.mark.parametrize("flusher", ["process", "auto", "asyncio"])
def test_a_setting_naming_a_removed_flusher_is_refused_with_what_to_use(flusher: str) -> None:
    from openrl_inspect.core.settings import load

    from_env = load(
        RecorderSettings, "OPENRL_INSPECT_RECORDER_", {"OPENRL_INSPECT_RECORDER_FLUSHER": flusher}
    )
    for s in (RecorderSettings(flusher=flusher), from_env):
        for build in (Recorder, AsyncRecorder):
            with pytest.raises(ValueError, match="daemon thread") as refused:
                build(fake(), settings=s, start=False)
            assert f"flusher={flusher!r}" in str(refused.value)
            assert "set it to 'thread'" in str(refused.value)
    Recorder(fake(), settings=replace(QUIET, flusher="thread"), start=False).close(1)


def test_settings_load_from_the_environment() -> None:
    from openrl_inspect.core.settings import load

    s = load(
        RecorderSettings,
        "OPENRL_INSPECT_RECORDER_",
        {
            "OPENRL_INSPECT_RECORDER_CAPACITY": "5000",
            "OPENRL_INSPECT_RECORDER_CLUSTER": "yes",
            "OPENRL_INSPECT_RECORDER_FLUSH_INTERVAL_S": "0.5",
        },
    )
    assert (s.capacity, s.cluster, s.flush_interval_s) == (5000, True, 0.5)
    rec = Recorder(fake(), settings=s, batch_size=10_000, start=False)
    assert rec.capacity == 10_000  # never below one batch


# -- write combining ----------------------------------------------------------------------------

IDS = strategies.sampled_from(["a", "b"])
TIMES = strategies.integers(min_value=0, max_value=3)


def _record_calls() -> strategies.SearchStrategy[list[tuple[str, tuple[Any, ...]]]]:
    one = strategies.one_of(
        strategies.tuples(
            strategies.just("session_opened"), strategies.tuples(IDS, strategies.just("o"))
        ),
        strategies.tuples(strategies.just("session_closed"), strategies.tuples(IDS)),
        strategies.tuples(
            strategies.just("model_created"), strategies.tuples(IDS, IDS, strategies.just("base"))
        ),
        strategies.tuples(
            strategies.just("model_state"),
            strategies.tuples(
                IDS, strategies.sampled_from(["placed", "active", "ended", "failed"])
            ),
        ),
        strategies.tuples(
            strategies.just("op_accepted"),
            strategies.tuples(
                IDS,
                strategies.sampled_from(["o1", "o2", "o3"]),
                strategies.just("forward"),
                TIMES,
                IDS,
            ),
        ),
        strategies.tuples(
            strategies.just("op_enqueued"),
            strategies.tuples(IDS, strategies.sampled_from(["o1", "o2"])),
        ),
        strategies.tuples(
            strategies.just("op_started"),
            strategies.tuples(IDS, strategies.sampled_from(["o1", "o3"]), IDS),
        ),
        strategies.tuples(
            strategies.just("op_finished"),
            strategies.tuples(
                IDS,
                strategies.sampled_from(["o1", "o2"]),
                strategies.sampled_from(["succeeded", "failed"]),
            ),
        ),
        strategies.tuples(
            strategies.just("step_metrics"),
            strategies.tuples(IDS, TIMES, strategies.just({"loss": 0.5})),
        ),
        # A step's end: the pace index (``oi:models:pace``) moves with the finishes seen.
        strategies.tuples(
            strategies.just("step_metrics"),
            strategies.tuples(IDS, TIMES, strategies.just({"loss": 0.5}), strategies.just(True)),
        ),
        strategies.tuples(
            strategies.just("heartbeat"),
            strategies.tuples(
                IDS,
                strategies.just("trainer"),
                strategies.just("pod"),
                strategies.just("node"),
                IDS,
            ),
        ),
        strategies.tuples(
            strategies.just("placement_admitted"),
            strategies.tuples(
                IDS,
                IDS,
                strategies.just("wl"),
                strategies.just("ns"),
                strategies.just(["p"]),
                strategies.just("n"),
                strategies.just(["g"]),
            ),
        ),
        strategies.tuples(strategies.just("placement_released"), strategies.tuples(IDS, IDS)),
        strategies.tuples(
            strategies.just("sampler_batch"),
            strategies.tuples(
                IDS,
                strategies.just(8),
                strategies.just(10),
                strategies.just(20),
                strategies.just(0.5),
                strategies.just(2),
            ),
        ),
        strategies.tuples(
            strategies.just("client_log"),
            strategies.tuples(IDS, strategies.just("WARNING"), strategies.just("hello")),
        ),
    )
    return strategies.lists(one, min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=_record_calls())
# An op started again after it finished: record by record its first duration's bucket is
# counted and taken back, leaving a "0" field that the combined batch never writes.
@example(
    calls=[
        ("op_started", ("a", "o1", "a")),
        ("op_finished", ("a", "o1", "succeeded")),
        ("op_accepted", ("a", "o1", "forward", 0, "a")),
        ("op_started", ("a", "o1", "a")),
    ]
)
# A run of step finishes long enough to be scored (``oi:models:pace``), a step finished
# again, one finishing late, the model ended and started again, and failed ops around.
@example(
    calls=[("step_metrics", ("a", n, {"loss": 0.5}, True)) for n in range(9)]
    + [
        ("op_finished", ("a", "o1", "failed")),
        ("step_metrics", ("a", 8, {"loss": 0.5}, True)),
        ("step_metrics", ("a", 3, {"loss": 0.5}, True)),
        ("model_state", ("a", "ended")),
        ("op_finished", ("a", "o2", "failed")),
    ]
    + [("step_metrics", ("a", n, {"loss": 0.5}, True)) for n in range(9, 18)]
    + [("model_state", ("a", "active")), ("step_metrics", ("a", 18, {"loss": 0.5}, True))]
)
def test_a_combined_batch_leaves_what_record_by_record_writes_leave(
    calls: list[tuple[str, tuple[Any, ...]]],
) -> None:
    retention = Retention(max_steps_per_model=10_000)
    results = []
    for batch_size in (1000, 1):
        client = fake()
        rec = Recorder(client, retention, settings=QUIET, batch_size=batch_size, start=False)
        for i, (name, args) in enumerate(calls):
            getattr(rec, name)(*args, at=float(i))
        rec.flush()
        assert rec.stats().written == len(calls)
        results.append(dump(client))
    if _moved_ops(calls):
        # One op id accepted under two steps (OpenRL's ids are unique): record by record,
        # the first step's rollup entry keeps the op as it was until that step is written
        # again; combined, it is rebuilt after the move (docs/redis-schema.md, "Rollups"),
        # and the counters follow the entries. Everything else must still agree.
        for r in results:
            for key in [k for k in r if k.endswith((":rollup:steps", ":rollup"))]:
                del r[key]
    for r in results:  # a counter at 0 reads as one never written (state/rollup.py)
        for key, (kind, value) in list(r.items()):
            if key.endswith(":rollup") and kind == "hash":
                r[key] = (kind, {f: v for f, v in value.items() if v != "0" or f == "last_step"})
    assert results[0] == results[1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=_record_calls(), times=strategies.lists(strategies.integers(0, 5), min_size=40))
def test_combined_writes_with_times_out_of_order_leave_what_one_by_one_leaves(
    calls: list[tuple[str, tuple[Any, ...]]], times: list[int]
) -> None:
    # Records of one model come from several processes: their times need not rise, and
    # the live index's ZADD XX GT must combine exactly all the same.
    retention = Retention(max_steps_per_model=10_000)
    results = []
    for batch_size in (1000, 1):
        client = fake()
        rec = Recorder(client, retention, settings=QUIET, batch_size=batch_size, start=False)
        for i, (name, args) in enumerate(calls):
            getattr(rec, name)(*args, at=float(times[i]))
        rec.flush()
        assert rec.stats().written == len(calls)
        state = dump(client)
        results.append({k: v for k, v in state.items() if ":rollup" not in k})
    assert results[0] == results[1]


def _moved_ops(calls: list[tuple[str, tuple[Any, ...]]]) -> bool:
    steps: dict[tuple[str, str], set[int]] = {}
    for name, args in calls:
        if name == "op_accepted":
            steps.setdefault((args[0], args[1]), set()).add(args[3])
    return any(len(s) > 1 for s in steps.values())


def test_combining_sends_far_fewer_commands_than_records() -> None:
    client = fake()
    rec = Recorder(client, settings=QUIET, start=False)
    for i in range(100):
        oid = f"o{i}"
        rec.op_accepted("m1", oid, "forward", 1, at=1.0)
        rec.op_enqueued("m1", oid, at=1.1)
        rec.op_started("m1", oid, "w1", at=1.2)
        rec.op_finished("m1", oid, at=1.3)
    p = rec._flow.take()
    assert p is not None
    # 100 op hashes + 100 op index keys + a few shared sorted sets, not 4 x 100 x ~3
    assert len(p.commands) < 220


# -- drop policy and counters ---------------------------------------------------------------------


def test_low_value_records_are_shed_first_then_everything_past_capacity() -> None:
    client = fake()
    rec = Recorder(
        client,
        Retention(max_sampler_batches_per_model=10_000),
        settings=QUIET,
        capacity=100,
        batch_size=10,
        start=False,
    )
    assert writes_low_value_kinds() == {"heartbeat", "sampler_batch", "client_log"}
    for i in range(200):
        rec.sampler_batch("m1", 8, 10, 20, 0.1, 0, worker_id="w", at=float(i))
        rec.op_accepted("m1", f"o{i}", "forward", 1, at=float(i))
    st_ = rec.stats()
    assert st_.recorded == 400 and st_.pending == 100
    # Shed level 50: 25 sampler batches and 25 ops get in below it; then 50 more ops (their
    # 50 sampler batches shed) fill it to 100; the last 125 pairs find it full.
    assert st_.dropped_by_reason == {"shed": 50, "full": 250}
    assert st_.dropped_by_kind == {"sampler_batch": 175, "op_accepted": 125}
    rec.flush()
    st_ = rec.stats()
    assert st_.written == 100 and balanced(st_) and st_.pending == 0
    assert client.zcard(keys.sampler_batches("m1")) == 25
    assert sum(client.exists(keys.op("m1", f"o{i}")) for i in range(200)) == 75


def writes_low_value_kinds() -> set[str]:
    return set(LOW_VALUE)


def test_a_retried_batch_is_written_and_counted_once() -> None:
    client = fake()
    flaky = Flaky(client)
    flaky.plan = ["refuse", "lose", "refuse"]
    rec = Recorder(
        flaky,  # type: ignore[arg-type]
        Retention(max_sampler_batches_per_model=10_000),
        settings=RecorderSettings(
            publish_counters=False, backoff_base_s=0.001, backoff_cap_s=0.002, flush_at_exit=False
        ),
        batch_size=50,
        start=False,
    )
    for i in range(50):
        rec.sampler_batch("m1", 8, 10, 20, 0.1, 0, worker_id="w", at=float(i))
        rec.client_log("m1", "INFO", "same message", at=1.0)
    rec.flush(timeout_s=30)
    st_ = rec.stats()
    assert flaky.executes == 4 + 1  # two batches; the first took 4 attempts (one applied)
    assert st_.written == 100 and st_.dropped == 0 and st_.pending == 0
    assert st_.retried == 3 * 50 and st_.failed_attempts == 3
    # applied twice (the lost answer), present once: members carry a stable record id
    assert client.zcard(keys.sampler_batches("m1")) == 50
    assert client.zcard(keys.logs("m1")) == 50


def test_rejected_commands_drop_only_their_records() -> None:
    client = fake()
    client.set(keys.logs("m2"), "not a sorted set")
    rec = Recorder(client, settings=QUIET, start=False)
    rec.client_log("m1", "INFO", "fine", at=1.0)
    rec.client_log("m2", "INFO", "rejected", at=1.0)
    rec.op_accepted("m2", "o1", "forward", 1, at=1.0)
    assert rec.flush() == 2
    st_ = rec.stats()
    assert st_.dropped_by_reason == {"rejected": 1}
    assert st_.dropped_by_kind == {"client_log": 1}
    assert client.zcard(keys.logs("m1")) == 1
    assert client.hget(keys.op("m2", "o1"), "kind") == "forward"
    assert balanced(st_)


def test_close_counts_what_it_could_not_write_and_refuses_later_records() -> None:
    flaky = Flaky(fake())
    flaky.plan = ["refuse"] * 1000
    rec = Recorder(
        flaky,  # type: ignore[arg-type]
        settings=RecorderSettings(
            publish_counters=False, backoff_base_s=0.001, backoff_cap_s=0.01, flush_at_exit=False
        ),
        batch_size=10,
        start=False,
    )
    for i in range(35):
        rec.op_started("m1", f"o{i}", "w1", at=1.0)
    st_ = rec.close(timeout_s=0.2)
    assert st_.written == 0 and st_.pending == 0
    assert st_.dropped_by_reason == {"shutdown": 35}
    rec.op_started("m1", "late", "w1", at=2.0)
    st_ = rec.stats()
    assert st_.dropped_by_reason == {"shutdown": 35, "closed": 1}
    assert st_.recorded == 36 and balanced(st_)


def test_counters_reach_redis_with_the_records() -> None:
    client = fake()
    rec = Recorder(
        client,
        settings=RecorderSettings(recorder_id="rec-1", flush_at_exit=False),
        capacity=10,
        batch_size=10,
        start=False,
    )
    for i in range(12):
        rec.op_started("m1", f"o{i}", "w1", at=1.0)
    rec.flush()
    st_ = rec.stats()
    h = client.hgetall(keys.recorder("rec-1"))
    assert {k: int(h[k]) for k in ("recorded", "written", "dropped", "pending", "retried")} == (
        st_.counters()
    )
    assert st_.counters() == {
        "recorded": 12,
        "written": 10,
        "dropped": 2,
        "pending": 0,
        "retried": 0,
    }
    assert int(h["dropped_full"]) == 2
    assert json.loads(h["dropped_by_kind"]) == {"op_started": 2}
    assert client.zscore(keys.RECORDERS, "rec-1") is not None
    assert client.ttl(keys.recorder("rec-1")) > 0


def test_a_worker_recorder_heartbeats_with_its_current_op_and_counters() -> None:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    worker = WorkerInfo("trainer-0", "trainer", "pod-0", "node-a", "m1", ("GPU-1", "GPU-2"))
    rec = Recorder(client, settings=QUIET, worker=worker, start=False)
    rec.set_status(step=41)
    rec.op_started("m1", "o1", "trainer-0", at=1.0)
    rec.op_started("m1", "o2", "someone-else", at=1.0)
    rec.flush()
    h = client.hgetall(keys.worker("trainer-0"))
    assert (h["role"], h["pod"], h["node"], h["model_id"]) == ("trainer", "pod-0", "node-a", "m1")
    assert json.loads(h["gpu_ids"]) == ["GPU-1", "GPU-2"]
    payload = json.loads(h["payload"])
    assert payload["current_op"] == "o1" and payload["step"] == 41
    assert payload["recorder"] == {
        "recorded": 2,
        "written": 2,
        "dropped": 0,
        "pending": 0,
        "retried": 0,
    }


def test_sampler_batches_and_logs_are_capped_newest_kept() -> None:
    client = fake()
    retention = Retention(
        max_sampler_batches_per_model=5, max_logs_per_model=3, max_log_message_chars=4
    )
    rec = Recorder(client, retention, settings=QUIET, batch_size=4, start=False)
    for i in range(9):
        rec.sampler_batch(
            "m1", 8, 100 + i, 200, 0.25, i, worker_id="s-0", op_id="op-9", at=float(i)
        )
        rec.client_log("m1", "error", f"message {i}", {"i": i}, at=float(i))
    rec.flush()
    batches = [
        json.loads(m) for m in cast(list[str], client.zrange(keys.sampler_batches("m1"), 0, -1))
    ]
    assert [b["prompt_tokens"] for b in batches] == [104, 105, 106, 107, 108]
    assert batches[0] == {
        "id": "rec-test/8",
        "t": 4.0,
        "batch_size": 8,
        "prompt_tokens": 104,
        "generated_tokens": 200,
        "latency_s": 0.25,
        "queue_depth": 4,
        "worker": "s-0",
        "op_id": "op-9",
    }
    logs = [json.loads(m) for m in cast(list[str], client.zrange(keys.logs("m1"), 0, -1))]
    assert [entry["fields"]["i"] for entry in logs] == [6, 7, 8]
    assert logs[-1] == {
        "id": "rec-test/17",
        "t": 8.0,
        "level": "ERROR",
        "msg": "mess",
        "truncated": True,
        "fields": {"i": 8},
    }
    assert client.zscore(keys.model_workers("m1"), "s-0") == 8.0


def test_ended_model_expires_its_logs_and_sampler_batches_too() -> None:
    client = fake()
    rec = Recorder(client, settings=QUIET, start=False)
    rec.model_created("m1", "s1", "base", at=1.0)
    rec.client_log("m1", "INFO", "hi", at=1.5)
    rec.sampler_batch("m1", 1, 1, 1, 0.1, 0, at=1.5)
    rec.model_state("m1", "ended", at=2.0)
    rec.flush()
    assert client.ttl(keys.logs("m1")) > 0
    assert client.ttl(keys.sampler_batches("m1")) > 0


def test_many_threads_record_while_the_flusher_runs_and_every_record_is_accounted() -> None:
    client = fake()
    rec = Recorder(
        client,
        Retention(max_sampler_batches_per_model=100_000),
        settings=RecorderSettings(
            publish_counters=False, flush_interval_s=0.01, flush_at_exit=False
        ),
        capacity=100_000,
        batch_size=64,
    )
    per_thread = 2000

    def produce(t: int) -> None:
        for i in range(per_thread):
            rec.sampler_batch("m1", 1, i, 1, 0.1, t, worker_id=f"w{t}", at=float(i))

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st_ = rec.close(timeout_s=30)
    assert st_.recorded == 4 * per_thread
    assert st_.written == 4 * per_thread and st_.dropped == 0 and st_.pending == 0
    assert client.zcard(keys.sampler_batches("m1")) == 4 * per_thread


# -- asyncio ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_recorder_flushes_in_the_background_on_the_time_trigger() -> None:
    import anyio

    server = fakeredis.FakeServer()
    raw = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        raw,
        settings=RecorderSettings(flush_interval_s=0.01, recorder_id="a-1", flush_at_exit=False),
        worker=WorkerInfo("sampler-0", "sampler", "pod", "node", "m1"),
    )
    rec.model_created("m1", "s1", "Qwen", at=1.0)
    rec.op_accepted("m1", "o1", "sample", 0, at=2.0)
    for _ in range(1000):  # liveness bound only: the flusher runs on its own
        if rec.stats().written == 2 and await raw.exists(keys.worker("sampler-0")):
            break
        await anyio.sleep(0.01)
    else:
        pytest.fail("the background flusher wrote nothing")
    store = RedisStateStore.in_memory(server)
    (model,) = await store.models(["m1"])
    assert isinstance(model, ModelRecord) and model.latest_step == 0
    st_ = await rec.close(timeout_s=5)
    assert st_.written == 2 and balanced(st_)
    assert await raw.hget(keys.recorder("a-1"), "written") == "2"
    await store.aclose()


@pytest.mark.anyio
async def test_async_flush_and_close_account_every_record() -> None:
    server = fakeredis.FakeServer()
    raw = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(raw, settings=QUIET, batch_size=16, capacity=64)
    for i in range(100):
        rec.op_accepted("m1", f"o{i}", "forward", i, at=float(i))
    assert rec.stats().dropped_by_reason == {"full": 36}
    assert await rec.flush() == 64
    rec.op_finished("m1", "o1", at=200.0)
    st_ = await rec.close()
    assert (st_.recorded, st_.written, st_.dropped, st_.pending) == (101, 65, 36, 0)
    assert await raw.hget(keys.op("m1", "o1"), "status") == "succeeded"


@pytest.mark.anyio
async def test_async_flushes_run_on_the_flusher_thread_not_the_callers_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from openrl_inspect.recorder import _send

    seen: list[tuple[str, bool]] = []
    send = _send.LoopPipe.send

    def spy(self: _send.LoopPipe, commands: Any, limit_s: float, meanwhile: Any) -> list[Any]:
        seen.append((threading.current_thread().name, self.loop is caller))
        return send(self, commands, limit_s, meanwhile)

    monkeypatch.setattr(_send.LoopPipe, "send", spy)
    caller = asyncio.get_running_loop()
    server = fakeredis.FakeServer()
    raw = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(raw, settings=QUIET, batch_size=8)
    for i in range(40):
        rec.op_accepted("m1", f"o{i}", "forward", i, at=float(i))
    assert await rec.flush(10) == 40
    rec.op_finished("m1", "o1", at=50.0)
    st_ = await rec.close(10)
    assert (st_.written, st_.pending) == (41, 0)
    assert seen and all(name.startswith("openrl-recorder") for name, _ in seen)
    assert not any(on_callers_loop for _, on_callers_loop in seen)
    # The flusher wrote through a copy of the client: the caller's is still the caller's.
    assert await raw.hget(keys.op("m1", "o1"), "status") == "succeeded"
    await raw.aclose()


@pytest.mark.anyio
async def test_a_recorder_dropped_unclosed_writes_what_it_held_and_stops_its_thread() -> None:
    import gc

    import anyio

    server = fakeredis.FakeServer()
    raw = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(raw, settings=replace(QUIET, flush_interval_s=60.0))
    thread = rec._flusher._thread
    assert thread is not None and thread.is_alive()
    for i in range(5):
        rec.op_accepted("m1", f"o{i}", "forward", i, at=float(i))
    del rec
    gc.collect()
    for _ in range(1000):  # liveness bound only
        written = await raw.exists(*[keys.op("m1", f"o{i}") for i in range(5)])
        if written == 5 and not thread.is_alive():
            break
        await anyio.sleep(0.01)
    else:
        pytest.fail("the dropped recorder neither wrote its records nor stopped")
    await raw.aclose()

"""The model indexes the recorder keeps as it writes (docs/redis-schema.md, "Model
indexes"): by owner, by base model, the live models by last progress; combined exactly
like every other write (``test_recorder_unit``, also with times out of order)."""

from __future__ import annotations

import fakeredis
from openrl_inspect.recorder import Recorder, RecorderSettings, Retention, reindex
from openrl_inspect.recorder._pace import MAX_MODELS, Paces, score
from openrl_inspect.state import keys

QUIET = RecorderSettings(publish_counters=False, recorder_id="idx-test", flush_at_exit=False)


def fake() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True)


def test_models_are_indexed_by_owner_base_and_live_with_their_last_progress() -> None:
    client = fake()
    rec = Recorder(client, settings=QUIET, start=False)
    rec.session_opened("s1", "alice", at=1.0)
    rec.model_created("m1", "s1", "llama", at=2.0)  # the owner seen opening s1
    rec.model_created("m2", "s9", "qwen", at=3.0, owner="bob")  # the owner given
    rec.model_created("m3", "s8", "qwen", at=4.0)  # neither: left to reindex
    rec.op_accepted("m1", "o1", "forward", 0, at=10.0)
    rec.op_finished("m1", "o1", "succeeded", at=12.0)
    rec.op_accepted("m1", "o2", "forward", 0, at=11.0)  # older than the finish: no move
    rec.model_state("m2", "ended", at=20.0)
    rec.op_finished("m2", "o9", "succeeded", at=21.0)  # late: m2 stays out of live
    rec.flush()
    assert client.zrange(keys.models_of_owner("alice"), 0, -1, withscores=True) == [("m1", 2.0)]
    assert client.zrange(keys.models_of_owner("bob"), 0, -1) == ["m2"]
    assert client.zrange(keys.models_of_base("qwen"), 0, -1) == ["m2", "m3"]
    assert client.zrange(keys.MODELS_LIVE, 0, -1, withscores=True) == [
        ("m3", 4.0),
        ("m1", 12.0),
    ]
    # A fresh store: its first writer declares the indexes complete.
    assert client.get(keys.INDEXES_KEY) == str(keys.INDEXES_VERSION)


def test_a_writer_arriving_on_older_data_does_not_declare_the_indexes_complete() -> None:
    client = fake()
    client.set(keys.SCHEMA_VERSION_KEY, "1")  # an older writer was here
    rec = Recorder(client, settings=QUIET, start=False)
    rec.model_created("m1", "s1", "llama", at=1.0)
    rec.flush()
    assert client.get(keys.INDEXES_KEY) is None


def test_an_owner_or_base_model_that_cannot_sit_in_a_key_is_named_by_its_digest() -> None:
    assert keys.models_of_owner("alice") == "oi:models:owner:alice"
    forged = keys.models_of_owner("x}{m:other")
    assert "{" not in forged and "}" not in forged
    assert keys.models_of_base("a b") != keys.models_of_base("a_b")


def test_the_moving_models_indexes_follow_failed_ops_and_the_pace_of_steps() -> None:
    client = fake()
    rec = Recorder(client, settings=QUIET, start=False)
    for n, t in enumerate([0, 2, 4, 6, 8, 10, 12, 14, 24, 34, 44]):  # 2 s steps, then 10 s
        rec.step_metrics("m1", n, {}, finished=True, at=100.0 + t)
    rec.op_finished("m1", "o1", "failed", error="boom", at=150.0)
    rec.op_finished("m1", "o2", "failed", error="late record", at=140.0)  # older: no move
    rec.op_finished("m1", "o3", "succeeded", at=160.0)
    rec.flush()
    # newest 3 step times (10 s) over the median of the 7 before (2 s)
    assert client.zrange(keys.MODELS_PACE, 0, -1, withscores=True) == [("m1", 5.0)]
    assert client.zrange(keys.MODELS_FAILING, 0, -1, withscores=True) == [("m1", 150.0)]
    rec.model_state("m1", "ended", at=170.0)
    rec.flush()
    assert client.zcard(keys.MODELS_PACE) == client.zcard(keys.MODELS_FAILING) == 0


def test_a_failure_older_than_the_retention_leaves_the_failing_index() -> None:
    client = fake()
    rec = Recorder(client, Retention(failing_index_s=100.0), settings=QUIET, start=False)
    rec.op_finished("m1", "o1", "failed", at=1_000.0)
    rec.flush()
    rec.op_finished("m2", "o2", "failed", at=1_200.0)
    rec.flush()
    assert client.zrange(keys.MODELS_FAILING, 0, -1) == ["m2"]


def test_paces_score_runs_of_consecutive_steps_and_ignore_replays_and_late_steps() -> None:
    p = Paces()
    assert [p.finished("m", n, 2.0 * n) for n in range(7)] == [None] * 7
    assert p.finished("m", 7, 14.0) == 1.0  # 7 step times: 3 recent over 4 before
    assert p.finished("m", 7, 14.0) == 1.0  # the same finish again: the same score
    assert p.finished("m", 3, 99.0) is None  # an older step, late: nothing moves
    assert p.finished("m", 8, 22.0) == 1.0  # median of (2, 2, 8) over 2
    assert p.finished("m", 10, 30.0) is None  # a gap: the run starts again
    assert score([0.0, 1.0]) is None and score([5.0] * 9) is None  # no baseline time
    for i in range(MAX_MODELS + 1):
        p.finished(f"x{i}", 0, 0.0)
    assert len(p) == MAX_MODELS


def test_every_models_open_ops_are_one_index_trimmed_by_age() -> None:
    client = fake()
    rec = Recorder(client, Retention(open_ops_index_s=1_000.0), settings=QUIET, start=False)
    rec.op_accepted("m1", "o1", "forward", 0, at=10.0)
    rec.op_accepted("m2", "o2", "forward", 0, at=20.0)
    rec.op_accepted("m2", "o3", "forward", 0, at=30.0)
    rec.op_finished("m2", "o3", "succeeded", at=31.0)
    rec.flush()
    assert client.zrange(keys.OPS_OPEN, 0, -1, withscores=True) == [("o1", 10.0), ("o2", 20.0)]
    rec.op_accepted("m3", "o4", "forward", 0, at=1_015.0)  # o1 is past the retention
    rec.flush()
    assert client.zrange(keys.OPS_OPEN, 0, -1) == ["o2", "o4"]


def test_sessions_are_indexed_by_owner_and_reindex_builds_it_for_older_data() -> None:
    client = fake()
    rec = Recorder(client, settings=QUIET, start=False)
    rec.session_opened("s1", "alice", at=1.0)
    rec.session_opened("s2", "bob", at=2.0)
    rec.session_opened("s3", "alice", at=3.0)
    rec.session_closed("s1", at=4.0)
    rec.flush()
    assert client.zrange(keys.sessions_of_owner("alice"), 0, -1, withscores=True) == [
        ("s1", 1.0),
        ("s3", 3.0),
    ]
    # Data from before the index: an older writer left no entries, and a stale one.
    client.delete(keys.sessions_of_owner("alice"), keys.sessions_of_owner("bob"))
    client.zadd(keys.sessions_of_owner("alice"), {"s-gone": 0.5})
    client.set(keys.INDEXES_KEY, "1")  # complete once, before this index existed
    found = reindex(client)
    assert found.sessions == 3
    assert client.zrange(keys.sessions_of_owner("alice"), 0, -1) == ["s1", "s3"]
    assert client.zrange(keys.sessions_of_owner("bob"), 0, -1) == ["s2"]
    assert client.get(keys.INDEXES_KEY) == str(keys.INDEXES_VERSION)

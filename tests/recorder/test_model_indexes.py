"""The model indexes the recorder keeps as it writes (docs/redis-schema.md, "Model
indexes"): by owner, by base model, the live models by last progress; combined exactly
like every other write (``test_recorder_unit``, also with times out of order)."""

from __future__ import annotations

import fakeredis
from openrl_inspect.recorder import Recorder, RecorderSettings
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

"""The one record encoding: what the recorder writes, the reader's decoders give back.

Production path end to end: record calls -> the recorder's writes (``state.records.encode``)
-> Redis (fakeredis) -> ``HGETALL`` -> the reader's ``from_hash`` decoders.
"""

from __future__ import annotations

from typing import Any

import fakeredis
from hypothesis import HealthCheck, given, settings, strategies
from openrl_inspect.recorder import Recorder, RecorderSettings, WorkerInfo
from openrl_inspect.state import keys
from openrl_inspect.state.records import (
    ModelRecord,
    PlacementRecord,
    SessionRecord,
    WorkerRecord,
    encode,
)

QUIET = RecorderSettings(publish_counters=False, recorder_id="enc", flush_at_exit=False)

IDS = strategies.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True)
# Any text Redis can hold as UTF-8 (no lone surrogates), including the empty string.
TEXT = strategies.text(strategies.characters(exclude_categories=["Cs"]), max_size=30)
TIMES = strategies.floats(min_value=0, max_value=4e9, allow_nan=False)
# JSON values: finite floats (JSON has no NaN or infinity), 64-bit integers.
SCALARS = strategies.one_of(
    strategies.none(),
    strategies.booleans(),
    strategies.integers(min_value=-(2**63), max_value=2**63 - 1),
    strategies.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON = strategies.recursive(
    SCALARS,
    lambda inner: strategies.one_of(
        strategies.lists(inner, max_size=4), strategies.dictionaries(TEXT, inner, max_size=4)
    ),
    max_leaves=12,
)
OBJECTS = strategies.dictionaries(TEXT, JSON, max_size=5)


def _recorder(worker: WorkerInfo | None = None) -> tuple[Recorder, Any]:
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True)
    return Recorder(client, settings=QUIET, worker=worker, start=False), client


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sid=IDS, owner=TEXT, client_info=OBJECTS, at=TIMES)
def test_a_session_reads_back_as_recorded(
    sid: str, owner: str, client_info: dict[str, Any], at: float
) -> None:
    rec, client = _recorder()
    rec.session_opened(sid, owner, client_info, at=at)
    assert rec.flush() == 1
    got = SessionRecord.from_hash(client.hgetall(keys.session(sid)))
    assert (got.id, got.owner, got.client.value(), got.state) == (sid, owner, client_info, "live")
    assert got.created_at == at and got.last_activity_at == at


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mid=IDS, sid=IDS, base=TEXT, lora=OBJECTS, model_settings=OBJECTS, at=TIMES, later=TIMES)
def test_a_model_and_its_transitions_read_back_as_recorded(
    mid: str,
    sid: str,
    base: str,
    lora: dict[str, Any],
    model_settings: dict[str, Any],
    at: float,
    later: float,
) -> None:
    rec, client = _recorder()
    rec.model_created(mid, sid, base, lora, model_settings, at=at)
    rec.model_state(mid, "failed", reason="oom", at=later)
    assert rec.flush() == 2
    got = ModelRecord.from_hash(client.hgetall(keys.model(mid)))
    assert (got.id, got.session_id, got.base_model) == (mid, sid, base)
    assert (got.lora.value(), got.settings.value()) == (lora, model_settings)
    assert (got.state, got.state_at, got.failure_reason) == ("failed", later, "oom")
    assert got.transitions == {"waiting": at, "failed": later}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    wid=IDS,
    role=TEXT,
    pod=TEXT,
    node=TEXT,
    model_id=strategies.one_of(strategies.none(), IDS),
    gpus=strategies.lists(TEXT, max_size=4),
    payload=OBJECTS,
    at=TIMES,
)
def test_a_heartbeat_reads_back_as_recorded(
    wid: str,
    role: str,
    pod: str,
    node: str,
    model_id: str | None,
    gpus: list[str],
    payload: dict[str, Any],
    at: float,
) -> None:
    rec, client = _recorder()
    rec.heartbeat(wid, role, pod, node, model_id, gpus, payload, at=at)
    assert rec.flush() == 1
    got = WorkerRecord.from_hash(client.hgetall(keys.worker(wid)))
    assert (got.id, got.role, got.pod, got.node) == (wid, role, pod, node)
    assert (got.model_id, got.gpu_ids, got.payload.value()) == (model_id, gpus, payload)
    assert got.started_at == at and got.last_heartbeat_at == at


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mid=IDS,
    pid=IDS,
    workload=TEXT,
    namespace=TEXT,
    pods=strategies.lists(TEXT, max_size=4),
    node=TEXT,
    gpus=strategies.lists(TEXT, max_size=4),
    at=TIMES,
    released=TIMES,
)
def test_a_placement_reads_back_as_recorded(
    mid: str,
    pid: str,
    workload: str,
    namespace: str,
    pods: list[str],
    node: str,
    gpus: list[str],
    at: float,
    released: float,
) -> None:
    rec, client = _recorder()
    rec.placement_admitted(mid, pid, workload, namespace, pods, node, gpus, at=at)
    rec.placement_released(mid, pid, at=released)
    assert rec.flush() == 2
    got = PlacementRecord.from_hash(client.hgetall(keys.placement(mid, pid)))
    assert (got.id, got.model_id, got.workload, got.namespace) == (pid, mid, workload, namespace)
    assert (got.pods, got.node, got.gpu_ids) == (pods, node, gpus)
    assert (got.admitted_at, got.released_at) == (at, released)


@given(values=strategies.dictionaries(TEXT, JSON, max_size=6))
def test_encode_skips_none_and_every_value_is_a_string(values: dict[str, Any]) -> None:
    out = encode(values)
    assert set(out) == {k for k, v in values.items() if v is not None}
    assert all(isinstance(v, str) for v in out.values())

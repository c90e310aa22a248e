"""Malformed records, one kind at a time: each fails its own item, never its list.

Over fakeredis for every kind and over a real redis-server for a few: the answer is a
200 with valid JSON (no NaN), the list stands with its good siblings, the bad item is
null with a BAD_RECORD error at its own path naming the record, never a key or host.
"""

from __future__ import annotations

import json
from typing import Any

import fakeredis
import pytest
import redis.asyncio as aioredis
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.state import keys
from support import malformed
from support.harness import GRAPHQL, app_client

pytestmark = pytest.mark.anyio

S, MO, W = keys.session("s-bad"), keys.model("m-bad"), keys.worker("w-bad")
ST, OP = keys.step(malformed.MODEL, malformed.STEP), keys.op(malformed.MODEL, "o-bad")


def _cases() -> list[malformed.Case]:
    def sess(name: str, spoil: malformed.Spoil) -> malformed.Case:
        return malformed.Case(name, malformed.SESSIONS, ("sessions",), "s-bad", spoil)

    def model(name: str, spoil: malformed.Spoil, query: str = malformed.MODELS) -> malformed.Case:
        path = ("models",) if query == malformed.MODELS else ("session", "models")
        return malformed.Case(name, query, path, "m-bad", spoil)

    def step(name: str, spoil: malformed.Spoil, index: int = 1) -> malformed.Case:
        return malformed.Case(
            name, malformed.STEPS, ("model", "steps"), f"{malformed.MODEL}/", spoil, index
        )

    def op(name: str, spoil: malformed.Spoil, query: str = malformed.OPS) -> malformed.Case:
        path = ("model", "step", "ops") if query == malformed.OPS else ("model", "openOps")
        return malformed.Case(name, query, path, "o-bad", spoil)

    def worker(name: str, spoil: malformed.Spoil) -> malformed.Case:
        return malformed.Case(name, malformed.WORKERS, ("workers",), "w-bad", spoil)

    f, steps = malformed.field, keys.steps
    return [
        sess("session-string-type", malformed.retype(S, "string")),
        sess("session-list-type", malformed.retype(S, "list")),
        sess("session-time-yesterday", f(S, "created_at", "yesterday")),
        sess("session-time-nan", f(S, "created_at", "nan")),
        sess("session-time-inf", f(S, "last_activity_at", "inf")),
        sess("session-time-minus-inf", f(S, "closed_at", "-inf")),
        sess("session-time-1e300", f(S, "created_at", "1e300")),
        sess("session-owner-not-utf8", f(S, "owner", b"al\xffice")),
        sess("session-state-unknown", f(S, "state", "exploded")),
        sess("session-client-not-json", f(S, "client", "{not json")),
        sess("session-client-null", f(S, "client", "null")),
        sess("session-client-nan", f(S, "client", '{"a": NaN}')),
        sess("session-client-bomb", f(S, "client", malformed.bomb(100_000))),
        sess("session-client-deep", f(S, "client", '{"a":' + malformed.bomb(100) + "}")),
        sess("session-client-array", f(S, "client", "[1, 2]")),
        sess("session-client-1e400", f(S, "client", '{"x": 1e400}')),
        sess("session-id-of-another", f(S, "id", "s-good1")),
        model("model-set-type", malformed.retype(MO, "set")),
        model("model-state-unknown", f(MO, "state", "exploded")),
        model("model-state-at-nan", f(MO, "state_at", "nan")),
        model("model-transition-inf", f(MO, "failed_at", "inf")),
        model("model-lora-not-json", f(MO, "lora", "rank=8")),
        model("model-settings-null", f(MO, "settings", "null")),
        model("model-lora-infinity", f(MO, "lora", '{"a": Infinity}')),
        model("model-base-not-utf8", f(MO, "base_model", b"\xc3\x28")),
        model("model-negative-step", malformed.score(steps("m-bad"), "x", -5)),
        model("model-step-above-int32", malformed.score(steps("m-bad"), "x", 2.0**40)),
        model("model-step-count-above-int32", malformed.score(steps("m-bad"), "x", 2.0**31 - 1)),
        model("model-step-minus-one", malformed.score(steps("m-bad"), "x", -1)),
        model(
            "session-model-lora-bomb", f(MO, "lora", malformed.bomb(5000)), malformed.SESSION_MODELS
        ),
        model("session-model-zset-type", malformed.retype(MO, "zset"), malformed.SESSION_MODELS),
        step("step-time-yesterday", f(ST, "started_at", "yesterday")),
        step("step-metrics-nan", f(ST, "metrics", '{"loss": NaN}')),
        step("step-string-type", malformed.retype(ST, "string")),
        step("step-number-fraction", malformed.score(steps(malformed.MODEL), "1", 1.5)),
        step("step-number-negative", malformed.score(steps(malformed.MODEL), "1", -4), index=2),
        op("op-status-unknown", f(OP, "status", "exploded")),
        op("op-step-negative", f(OP, "step", "-4")),
        op("op-step-above-int32", f(OP, "step", "99999999999")),
        op("op-metrics-minus-infinity", f(OP, "metrics", '{"a": -Infinity}')),
        op("op-list-type", malformed.retype(OP, "list")),
        op("op-time-1e300", f(OP, "accepted_at", "1e300")),
        op("open-op-status-unknown", f(OP, "status", "lost?"), malformed.OPEN_OPS),
        op("open-op-not-utf8-kind", f(OP, "kind", b"\x80"), malformed.OPEN_OPS),
        worker("worker-gpu-ids-object", f(W, "gpu_ids", '{"a": "b"}')),
        worker("worker-gpu-ids-numbers", f(W, "gpu_ids", "[1, 2]")),
        worker("worker-payload-not-json", f(W, "payload", "{")),
        worker("worker-heartbeat-nan", f(W, "last_heartbeat_at", "nan")),
        worker("worker-zset-type", malformed.retype(W, "zset")),
    ]


CASES = _cases()
REAL = [
    c
    for c in CASES
    if c.name
    in {
        "session-owner-not-utf8",
        "session-list-type",
        "model-set-type",
        "op-status-unknown",
        "worker-gpu-ids-object",
        "step-metrics-nan",
    }
]


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the response: not JSON a browser can parse")

    return json.loads(text, parse_constant=refuse)


async def _check(store: RedisStateStore, case: malformed.Case) -> None:
    async with app_client(store) as client:
        resp = await client.post(GRAPHQL, json={"query": case.query})
    assert resp.status_code == 200, resp.text
    body = _strict(resp.text)
    conn = body["data"]
    for name in case.path:
        conn = conn[name]
    nodes = conn["nodes"]
    assert len(nodes) == 3, body
    assert nodes[case.index] is None, body
    assert all(n is not None for i, n in enumerate(nodes) if i != case.index), body
    errors = body["errors"]
    assert errors, body
    for err in errors:
        assert err["extensions"]["code"] == "BAD_RECORD", err
        assert err["path"][: len(case.path) + 2] == [*case.path, "nodes", case.index], err
        assert case.bad_id in err["message"], err
        assert keys.PREFIX + ":" not in err["message"] and "127.0.0.1" not in err["message"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_a_bad_record_nulls_only_its_item(case: malformed.Case) -> None:
    server = fakeredis.FakeServer()
    raw = fakeredis.FakeAsyncRedis(server=server)
    await malformed.seed(raw)
    await case.spoil(raw)
    await _check(RedisStateStore.in_memory(server), case)


@pytest.mark.parametrize("case", REAL, ids=[c.name for c in REAL])
async def test_a_bad_record_nulls_only_its_item_on_real_redis(
    redis_server: Any, case: malformed.Case
) -> None:
    raw = aioredis.Redis.from_url(redis_server.url)
    await raw.flushdb()
    await malformed.seed(raw)
    await case.spoil(raw)
    store = RedisStateStore(aioredis.Redis.from_url(redis_server.url, decode_responses=True))
    try:
        await _check(store, case)
    finally:
        await store.aclose()
        await raw.aclose()

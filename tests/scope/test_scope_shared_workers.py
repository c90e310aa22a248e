"""A worker reused across owners: it ran alice's op, then heartbeats for bob's model.
Alice's viewer sees none of it now (bob's pod, node, payload, GPUs), the same on every
path: ``Model.workers``, ``worker(id:)`` and ``Op.worker``; bob's viewer sees it."""

from __future__ import annotations

import json
import time

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.principal import Principal, Role
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from scope.test_scope_unreadable import ask

pytestmark = pytest.mark.anyio

BOBS = ("pod-of-bob", "node-of-bob", "GPU-of-bob", "payload-of-bob")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def store() -> RedisStateStore:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        client, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    now = time.time()
    for owner in ("alice", "bob"):
        rec.session_opened(f"s-{owner}", owner, at=now - 60)
        rec.model_created(f"m-{owner}", f"s-{owner}", "qwen", at=now - 50)
    rec.heartbeat("w-shared", "trainer", "pod-a", "node-a", "m-alice", ["GPU-a"], at=now - 40)
    rec.op_accepted("m-alice", "o-alice", "forward", 1, at=now - 39)
    rec.op_started("m-alice", "o-alice", "w-shared", at=now - 38)
    rec.op_finished("m-alice", "o-alice", at=now - 37)
    rec.heartbeat("w-shared", "trainer", *BOBS[:2], "m-bob", [BOBS[2]], {"x": BOBS[3]}, at=now - 5)
    await rec.flush()
    return RedisStateStore.in_memory(server)


WALK = """{
  model(id: "m-alice") { workers { totalCount nodes { id pod node gpuIds payload } } }
  op(id: "o-alice") { id worker { id pod node gpuIds payload } }
  worker(id: "w-shared") { id pod node gpuIds payload }
}"""


def _viewer(name: str) -> Principal:
    return Principal(name, Role.VIEWER, frozenset({name}))


async def test_a_moved_worker_shows_alice_nothing_of_bob_on_any_path(
    store: RedisStateStore,
) -> None:
    answer = await ask(store, _viewer("alice"), WALK)
    text = json.dumps(answer)
    assert not [m for m in BOBS if m in text], text
    data = answer["data"]
    assert data["model"]["workers"]["nodes"] == []
    assert data["op"] == {"id": "o-alice", "worker": None}
    assert data["worker"] is None
    assert [e["code"] for e in answer["errors"]] == ["NOT_FOUND"]


async def test_bob_sees_the_worker_it_serves_now(store: RedisStateStore) -> None:
    answer = await ask(store, _viewer("bob"), '{ worker(id: "w-shared") { pod } }')
    assert answer["data"] == {"worker": {"pod": "pod-of-bob"}}

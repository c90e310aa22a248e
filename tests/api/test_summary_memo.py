"""A model's judgement is kept while its inputs are the same (``resolvers.summary.memo``):
a second poll of the same summaries judges nothing again, a new op judges its model
again, and the answer is the one a fresh judgement gives."""

from __future__ import annotations

import time

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.summary.memo import Judgements
from support.harness import app_client, gql

pytestmark = pytest.mark.anyio

QUERY = """{ models(state: ACTIVE, first: 10) { nodes { id summary(steps: 20) {
  verdict reasons stepsPerMinute medianStepSeconds failedOps stuckOps lostOps openOps
} } } }"""


async def _world() -> tuple[fakeredis.FakeServer, AsyncRecorder]:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(
        client, batch_size=1 << 30, settings=RecorderSettings(publish_counters=False)
    )
    now = time.time()
    rec.session_opened("s-1", "alice", {}, at=now - 100)
    for m in ("m-1", "m-2"):
        rec.model_created(m, "s-1", "Qwen/Qwen3-8B", {}, {}, at=now - 100)
        rec.model_state(m, "active", at=now - 90)
        for i in range(3):
            rec.op_accepted(m, f"op-{i}", "forward_backward", i, "s-1", at=now - 50 + i)
            rec.op_finished(m, f"op-{i}", at=now - 49 + i)
    await rec.flush()
    return server, rec


async def test_a_second_poll_is_answered_from_the_kept_judgements() -> None:
    server, rec = await _world()
    store = RedisStateStore.in_memory(server)
    kept = Judgements(period_s=3600.0)  # one clock period for the whole test
    async with app_client(store, judgements=kept) as http:
        first = await gql(http, QUERY)
        assert (kept.hits, kept.misses) == (0, 2)
        second = await gql(http, QUERY)
        assert (kept.hits, kept.misses) == (2, 2)
        assert second == first
        # A new op on m-1 moves its rollup: m-1 is judged again, m-2 still kept.
        now = time.time()
        rec.op_accepted("m-1", "op-9", "forward_backward", 3, "s-1", at=now - 5)
        rec.op_finished("m-1", "op-9", status="failed", error="boom", at=now - 4)
        await rec.flush()
        third = await gql(http, QUERY)
        assert (kept.hits, kept.misses) == (3, 3)
    async with app_client(store, judgements=None) as http:
        fresh = await gql(http, QUERY)
    assert third == fresh and third != first
    assert "errors" not in third

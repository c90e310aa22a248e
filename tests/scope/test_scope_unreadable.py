"""Scope before decode: another owner's record that cannot be read answers a viewer
exactly as an unknown id (no BAD_RECORD oracle, nothing of what was stored); the
viewer's own unreadable op is BAD_RECORD without the stored value; an operator is told
what is wrong. The same through /graphql, which REST and MCP run through too."""

from __future__ import annotations

import time
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.principal import Principal, Role
from openrl_inspect.execution import build_schema
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.state import keys

pytestmark = pytest.mark.anyio

ALICE = Principal("alice", Role.VIEWER, frozenset({"alice"}))
OPS = Principal("ops", Role.OPERATOR)


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
        rec.op_accepted(f"m-{owner}", f"o-{owner}", "forward", 1, at=now - 40)
        rec.heartbeat(f"w-{owner}", "trainer", "pod", "node", f"m-{owner}", at=now - 5)
    await rec.flush()
    # What an older writer stored, or another program: values the reader refuses.
    for owner in ("alice", "bob"):
        await client.hset(keys.op(f"m-{owner}", f"o-{owner}"), "status", "FAILED")
    await client.hset(keys.model("m-bob"), "state", "PAUSED-SECRET")
    await client.hset(keys.session("s-bob"), "state", "SECRET-STATE")
    await client.hset(keys.worker("w-bob"), "last_heartbeat_at", "SECRET-TIME")
    return RedisStateStore.in_memory(server)


async def ask(store: RedisStateStore, who: Principal, query: str) -> dict[str, Any]:
    ctx = Context.build(Backends(state=store), who)
    result = await build_schema().execute(query, context_value=ctx)
    errors = [{"message": e.message, "code": (e.extensions or {}).get("code")} for e in result.errors or ()]  # fmt: skip
    return {"data": result.data, "errors": errors}


@pytest.mark.parametrize(
    ("field", "ident"),
    [("op", "o-bob"), ("model", "m-bob"), ("session", "s-bob"), ("worker", "w-bob")],
)
async def test_another_owners_unreadable_record_is_not_found_as_unknown(
    store: RedisStateStore, field: str, ident: str
) -> None:
    hidden = await ask(store, ALICE, f'{{ {field}(id: "{ident}") {{ id }} }}')
    unknown = await ask(store, ALICE, f'{{ {field}(id: "nope-1") {{ id }} }}')
    assert hidden["data"] == unknown["data"] == {field: None}
    (h,), (u,) = hidden["errors"], unknown["errors"]
    assert h["code"] == u["code"] == "NOT_FOUND"
    assert h["message"].replace(ident, "X") == u["message"].replace("nope-1", "X")
    # An operator is told the record is unreadable.
    told = await ask(store, OPS, f'{{ {field}(id: "{ident}") {{ id }} }}')
    assert [e["code"] for e in told["errors"]] == ["BAD_RECORD"]


async def test_the_viewers_own_unreadable_op_is_bad_record_without_the_stored_value(
    store: RedisStateStore,
) -> None:
    mine = await ask(store, ALICE, '{ op(id: "o-alice") { id } }')
    ((error,),) = [mine["errors"]]
    assert error["code"] == "BAD_RECORD" and "FAILED" not in error["message"]
    operator = await ask(store, OPS, '{ op(id: "o-alice") { id } }')
    assert "FAILED" in operator["errors"][0]["message"]

"""Around bad records: unselected fields, size caps, ids from the key, dangling pages."""

from __future__ import annotations

import json
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.state import keys
from openrl_inspect.state.decode import MAX_JSON_CHARS, MAX_TEXT_CHARS
from support import malformed
from support.harness import GRAPHQL, app_client, gql

pytestmark = pytest.mark.anyio


async def _world(*spoils: malformed.Spoil) -> RedisStateStore:
    server = fakeredis.FakeServer()
    raw = fakeredis.FakeAsyncRedis(server=server)
    await malformed.seed(raw)
    for spoil in spoils:
        await spoil(raw)
    return RedisStateStore.in_memory(server)


async def test_an_unselected_bad_field_fails_nothing() -> None:
    store = await _world(
        malformed.field(keys.model("m-bad"), "lora", "not json"),
        malformed.field(keys.model("m-bad"), "settings", "null"),
    )
    async with app_client(store) as client:
        quiet = await gql(client, "{ models(state: ACTIVE) { nodes { id state } } }")
        asked = await gql(client, "{ models(state: ACTIVE) { nodes { id lora } } }")
    assert "errors" not in quiet, quiet
    assert [n["id"] for n in quiet["data"]["models"]["nodes"]] == [
        malformed.MODEL,
        "m-bad",
        "m-good2",
    ]
    assert asked["data"]["models"]["nodes"][1] is None
    [err] = asked["errors"]
    assert err["path"] == ["models", "nodes", 1, "lora"]
    assert err["extensions"]["code"] == "BAD_RECORD" and "'lora'" in err["message"]


async def test_large_stored_values_come_back_capped_with_a_marker() -> None:
    big = "x" * (10 * 1024 * 1024)
    store = await _world(
        malformed.field(keys.session("s-bad"), "owner", big),
        malformed.field(keys.session("s-bad"), "client", json.dumps({"blob": big})),
    )
    async with app_client(store) as client:
        resp = await client.post(
            GRAPHQL, json={"query": "{ sessions { nodes { id owner client } } }"}
        )
    assert resp.status_code == 200
    assert len(resp.content) < 2 * MAX_TEXT_CHARS
    bad = resp.json()["data"]["sessions"]["nodes"][1]
    assert bad["owner"].startswith("x" * 100)
    assert bad["owner"].endswith(f"[truncated: {len(big)} characters stored]")
    assert bad["client"]["truncated"] is True
    assert bad["client"]["limitChars"] == MAX_JSON_CHARS


async def test_an_id_stored_empty_is_the_one_asked_for() -> None:
    store = await _world(malformed.field(keys.session("s-bad"), "id", ""))
    async with app_client(store) as client:
        one = await gql(client, '{ session(id: "s-bad") { id } }')
        listed = await gql(client, "{ sessions { nodes { id } } }")
    assert one["data"]["session"]["id"] == "s-bad"
    assert [n["id"] for n in listed["data"]["sessions"]["nodes"]] == [
        "s-good1",
        "s-bad",
        "s-good2",
    ]


async def test_a_page_of_only_dangling_ids_still_moves_on() -> None:
    async def dangle(r: Any) -> None:
        # Three newer ids whose hashes are gone (retention expired them).
        await r.zadd(keys.SESSIONS_LIVE, {f"s-gone{n}": malformed.NOW + 10 + n for n in range(3)})

    store = await _world(dangle)
    page = "query($after: String) { sessions(first: 3, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }"
    async with app_client(store) as client:
        first = await gql(client, page)
        after = first["data"]["sessions"]["pageInfo"]["endCursor"]
        second = await gql(client, page, after=after)
    assert first["data"]["sessions"]["nodes"] == []
    assert first["data"]["sessions"]["pageInfo"]["hasNextPage"] is True
    assert after is not None
    ids = [n["id"] for n in second["data"]["sessions"]["nodes"]]
    assert ids == ["s-good1", "s-bad", "s-good2"]


async def test_a_bad_record_looked_up_by_id_is_a_coded_error() -> None:
    store = await _world(malformed.field(keys.session("s-bad"), "state", "exploded"))
    async with app_client(store) as client:
        body = await gql(
            client, '{ session(id: "s-bad") { id state } ok: session(id: "s-good1") { id } }'
        )
    assert body["data"]["session"] is None
    assert body["data"]["ok"] == {"id": "s-good1"}
    [err] = body["errors"]
    assert err["extensions"]["code"] == "BAD_RECORD"
    assert "exploded" in err["message"] and "s-bad" in err["message"]

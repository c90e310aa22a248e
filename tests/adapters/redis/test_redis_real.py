"""Against a real redis-server: round trips per query, and Redis going away mid-way."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis.asyncio as aioredis
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore, connect
from openrl_inspect.recorder import RecorderSettings, reindex_with
from openrl_inspect.simulator import SimConfig
from openrl_inspect.web.app import PREFIX
from support.harness import app_client, gql, populate
from support.redis_server import RedisServer

pytestmark = pytest.mark.anyio


class CountingConnection(aioredis.Connection):
    """Counts what goes on the wire: one packed send per round trip."""

    sent = 0

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        await super().send_packed_command(command, check_health)


NESTED = """
{ sessions(first: 100) { nodes { id models(first: 100) { nodes { id state
    steps(first: 3) { nodes { number ops(first: 4) { nodes { id kind durationSeconds } } } } } } } } }
"""


async def _trips_for(url: str, models: int, query: str = NESTED) -> tuple[int, int, int]:
    writer = aioredis.Redis.from_url(url, decode_responses=True)
    await writer.flushdb()
    config = SimConfig(
        seed=1, sessions=10, models_per_session=models // 10, steps_per_model=3,
        scenarios=False, nodes_per_pool=(("h100", models),),
    )  # fmt: skip
    await populate(writer, config)
    await writer.aclose()
    pool = aioredis.ConnectionPool.from_url(
        url, decode_responses=True, connection_class=CountingConnection
    )
    # A frozen clock: the warm-up's schema check is the only one (it recurs every 10 s).
    store = RedisStateStore(aioredis.Redis.from_pool(pool), clock=lambda: 0.0)
    async with app_client(store) as client:
        await gql(client, "{ sessions(first: 1) { totalCount } }")  # warm: schema check
        CountingConnection.sent = 0
        before = store.trips.count
        body = await gql(client, query)
    await store.aclose()
    assert "errors" not in body, body
    got = sum(len(s["models"]["nodes"]) for s in body["data"]["sessions"]["nodes"])
    return CountingConnection.sent, store.trips.count - before, got


@pytest.mark.redis_server
async def test_round_trips_do_not_grow_with_the_number_of_models(redis_server: RedisServer) -> None:
    wire_10, counted_10, got_10 = await _trips_for(redis_server.url, 10)
    wire_500, counted_500, got_500 = await _trips_for(redis_server.url, 500)
    assert (got_10, got_500) == (10, 500)
    # sessions page, sessions, models pages, models, steps pages, steps, ops pages, ops
    assert wire_10 == wire_500 == counted_10 == counted_500 == 8


SUMMARIES = """
{ sessions(first: 100) { nodes { models(first: 100) { nodes { id summary(steps: 3) {
    verdict stuckOps lostOps failedOps stepsPerMinute opKinds { kind count } workersAlive } } } } } }
"""


# Round trips of SUMMARIES (14 on a quiet host), with room for batches split by timing.
SUMMARY_TRIPS = 28


@pytest.mark.redis_server
async def test_summaries_round_trips_do_not_grow_with_the_models(
    redis_server: RedisServer,
) -> None:
    wire_10, _, got_10 = await _trips_for(redis_server.url, 10, SUMMARIES)
    wire_500, _, got_500 = await _trips_for(redis_server.url, 500, SUMMARIES)
    assert (got_10, got_500) == (10, 500)
    # The judgements run off the loop (resolvers.pacing): on a loaded host a level's loads
    # can be sent as two batches (a CI run: 18 at 10 models, 14 at 500). What must not
    # happen is growth with the models: unbatched, 500 summaries cost thousands.
    assert wire_10 <= SUMMARY_TRIPS and wire_500 <= SUMMARY_TRIPS, (wire_10, wire_500)


@pytest.mark.redis_server
async def test_redis_stopping_mid_way_costs_coded_errors_then_recovers() -> None:
    server = RedisServer().start()
    try:
        writer = aioredis.Redis.from_url(server.url, decode_responses=True)
        sim = await populate(writer, SimConfig(seed=2, sessions=2))
        await writer.aclose()
        store = RedisStateStore.from_settings(
            RedisSettings(url=server.url, timeout_s=0.5, connect_timeout_s=0.5)
        )
        query = "{ sessions { totalCount nodes { id } } }"
        async with app_client(store) as client:
            ok = await gql(client, query)
            # 2 + the scenarios' sessions
            assert ok["data"]["sessions"]["totalCount"] == len(sim.sessions)

            server.stop()
            resp = await client.post(f"{PREFIX}/graphql", json={"query": query})
            assert resp.status_code == 200
            body = resp.json()
            assert body["data"] is None or body["data"]["sessions"] is None
            (error,) = body["errors"]
            assert error["extensions"] == {"code": "BACKEND_UNAVAILABLE", "backend": "redis"}
            assert str(server.port) not in error["message"]
            ready = await client.get(f"{PREFIX}/readyz")
            assert ready.status_code == 503
            assert ready.json()["backends"][0]["code"] == "BACKEND_UNAVAILABLE"

            server.start()  # same port, empty: Redis came back without its data
            deadline = time.monotonic() + 10
            while True:
                back = await gql(client, query)
                if "errors" not in back or time.monotonic() > deadline:
                    break
            assert "errors" not in back
            assert back["data"]["sessions"]["totalCount"] == 0
            assert (await client.get(f"{PREFIX}/readyz")).status_code == 200
        await store.aclose()
    finally:
        server.cleanup()


@pytest.mark.redis_cluster
async def test_recorder_and_reader_on_a_three_node_cluster(redis_cluster: Any) -> None:
    redis_cluster.flush()  # it counts sessions: none of an earlier test's
    settings = RedisSettings(url=redis_cluster.url, cluster=True)
    writer = connect(settings)
    sim = await populate(writer, SimConfig(seed=4, sessions=3, models_per_session=4))
    # the per-model scripts (trimming, expiry) ran on the model's slot
    mid = sim.scenario_ids["failed"]
    assert await writer.ttl(f"oi:{{m:{mid}}}:model") > 0
    await writer.aclose()
    store = RedisStateStore.from_settings(settings)
    async with app_client(store) as client:
        body = await gql(
            client,
            "{ sessions(first: 20) { totalCount nodes { models(first: 50) { nodes { id state"
            " steps(first: 2) { nodes { ops { nodes { id health } } } } } } } } }",
        )
    await store.aclose()
    assert "errors" not in body, body
    assert body["data"]["sessions"]["totalCount"] == len(sim.sessions)
    models = [m for s in body["data"]["sessions"]["nodes"] for m in s["models"]["nodes"]]
    assert len(models) == len(sim.models)
    assert any(m["steps"]["nodes"] for m in models)


@pytest.mark.redis_server
async def test_the_api_reads_as_a_read_only_acl_user(redis_server: RedisServer) -> None:
    admin = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    await admin.flushdb()
    await populate(admin, SimConfig(seed=9, sessions=2, models_per_session=2))
    # No write command is allowed: if the API ever wrote, these queries would fail.
    await admin.execute_command(  # type: ignore[no-untyped-call]
        "ACL", "SETUSER", "inspector", "on", ">readonly-pw", "~*", "+@read", "-@write", "+ping"
    )
    await admin.aclose()
    url = redis_server.url.replace("redis://", "redis://inspector:readonly-pw@")
    store = RedisStateStore.from_settings(RedisSettings(url=url))
    async with app_client(store) as client:
        body = await gql(
            client,
            "{ sessions { nodes { models { nodes { state steps(first: 2) { nodes {"
            " ops { nodes { health worker { alive } } } } } openOps { totalCount } } } } } }",
        )
        ready = await client.get(f"{PREFIX}/readyz")
    await store.aclose()
    assert "errors" not in body, body
    assert ready.status_code == 200


@pytest.mark.redis_cluster
async def test_filtered_lists_attention_and_reindex_on_a_three_node_cluster(
    redis_cluster: Any,
) -> None:
    # The model indexes live on many slots: every read and write names one key (or,
    # for the indexes' declaration, two keys of one slot).
    redis_cluster.flush()
    settings = RedisSettings(url=redis_cluster.url, cluster=True)
    writer = connect(settings)
    sim = await populate(writer, SimConfig(seed=4, sessions=3, models_per_session=4))
    await writer.aclose()
    store = RedisStateStore.from_settings(settings)
    async with app_client(store) as client:
        listed = await gql(
            client, "{ sessions(first: 20) { nodes { owner models(first: 50) { nodes { id } } } } }"
        )
        owner = listed["data"]["sessions"]["nodes"][0]["owner"]
        mine = [
            m["id"]
            for s in listed["data"]["sessions"]["nodes"]
            if s["owner"] == owner
            for m in s["models"]["nodes"]
        ]
        query = (
            "query($o: String) { models(owner: $o, first: 2) { totalCount nodes { id } } "
            "attention(first: 5) { scanned } }"
        )
        body = await gql(client, query, o=owner)
    assert "errors" not in body, body
    assert body["data"]["models"]["totalCount"] == len(mine)
    # Every live model, and those failed in the last day (all the simulation's).
    assert body["data"]["attention"]["scanned"] == sum(
        1 for m in sim.models.values() if m.state in ("waiting", "placed", "active", "failed")
    )
    found = reindex_with(RecorderSettings(url=redis_cluster.url, cluster=True))
    assert found.models == len(sim.models) and found.without_owner == 0
    async with app_client(store) as client:
        again = await gql(client, query, o=owner)
    await store.aclose()
    assert again["data"] == body["data"]

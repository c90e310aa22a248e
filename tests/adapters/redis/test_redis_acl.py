"""The Redis ACL users of docs/deploy.md (deploy/redis/users.acl), loaded as they are
into a real redis-server: the inspector answers the dashboard's queries and cannot
write, the tracker records placements and can write nothing else, the recorder writes
every record kind (its retention scripts included) — each with no command refused."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
import redis.exceptions
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore, connect
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings, Retention
from openrl_inspect.simulator import SimConfig, Simulation, populate
from openrl_inspect.simulator.kube_twin import mirror_kubernetes
from openrl_inspect.tracker.placements import PlacementTracker
from openrl_inspect.tracker.run import track_once
from support.harness import app_client, gql
from support.redis_server import RedisServer, require_redis
from support.tree import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.redis_server]
# (The cluster test below is marked redis_cluster too.)

ACL_FILE = ROOT / "deploy" / "redis" / "users.acl"
QUERIES = ROOT / "static" / "ui" / "queries"


def acl_users() -> dict[str, list[str]]:
    users = {}
    for line in ACL_FILE.read_text().splitlines():
        if line.startswith("user "):
            _, name, *rules = line.split()
            users[name] = rules
    return users


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    """A redis-server of this module's own (users and data are this test's), with the
    file's users loaded, each with a known password."""
    require_redis()
    own = RedisServer().start()
    admin = redis.Redis(port=own.port, socket_timeout=5)
    try:
        _load(admin, acl_users())
    except Exception:
        own.cleanup()
        raise
    finally:
        admin.close()
    yield own
    own.cleanup()


def _load(admin: redis.Redis, users: dict[str, list[str]]) -> None:
    for name, rules in users.items():
        rules = [f">pw-{name}" if r.startswith(">") else r for r in rules]
        admin.execute_command("ACL", "SETUSER", name, "reset", *rules)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped


def client_as(server: RedisServer, user: str) -> aioredis.Redis:
    return aioredis.Redis(
        port=server.port,
        username=user,
        password=f"pw-{user}",
        decode_responses=True,
        socket_timeout=5,
    )


@pytest.fixture(scope="module")
async def history(server: RedisServer) -> Simulation:
    """A simulated history written by the recorder user: sessions, models, steps, ops,
    workers, sampler batches, client logs, counters; a small step cap runs the trims."""
    client = client_as(server, "openrl-recorder")
    rec = AsyncRecorder(
        client,
        batch_size=1 << 30,
        retention=Retention(max_steps_per_model=6, trim_every_steps=2),
        settings=RecorderSettings(recorder_id="acl-test"),
    )
    sim = Simulation(SimConfig(seed=5, scenarios=False), rec)
    populate(sim, time.time())
    await rec.flush()
    stats = rec.stats()
    await rec.close(5.0)
    await client.aclose()
    assert stats.written == stats.recorded > 0 and stats.dropped == 0, stats
    assert stats.failed_attempts == 0 and stats.last_error is None, stats
    return sim


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    # Module scope: the history fixture is written once for the module.
    return "asyncio"


async def test_recorder_wrote_everything_and_trimmed(
    server: RedisServer, history: Simulation
) -> None:
    admin = aioredis.Redis(port=server.port, decode_responses=True, socket_timeout=5)
    model = next(iter(history.models))
    assert await admin.hget(f"oi:{{m:{model}}}:model", "id") == model
    # The step cap held: the trim script ran under the recorder's user.
    steps = [await admin.zcard(f"oi:{{m:{m}}}:steps") for m in history.models]
    assert max(steps) <= 6 + 2
    assert await admin.exists("oi:recorder:acl-test")
    await admin.aclose()


def _store(server: RedisServer) -> RedisStateStore:
    settings = RedisSettings(
        url=f"redis://openrl-inspect@127.0.0.1:{server.port}/0",
        password="pw-openrl-inspect",
        timeout_s=5,
    )
    return RedisStateStore.from_settings(settings)


def _variables(document: str, history: Simulation) -> dict[str, Any]:
    model = next(m for m in history.models.values() if m.state == "active")
    found = re.search(r"query\s+\w+\s*\(([^)]*)\)", document)
    wanted = set(re.findall(r"\$(\w+)\s*:\s*ID!", found.group(1))) if found else set()
    values = {"id": model.id} if "Model(" in document else {"id": model.session_id}
    return {k: v for k, v in values.items() if k in wanted}


@pytest.mark.parametrize("document", sorted(p.name for p in QUERIES.glob("*.graphql")))
async def test_the_inspector_reads_under_its_user(
    server: RedisServer, history: Simulation, document: str
) -> None:
    query = (QUERIES / document).read_text()
    store = _store(server)
    async with app_client(store) as client:
        body = await gql(client, query, **_variables(query, history))
        ready = await client.get("/api/v1/inspect/readyz")
    await store.aclose()
    assert ready.status_code == 200, ready.text
    codes = {e.get("extensions", {}).get("code") for e in body.get("errors", [])}
    # Only the backends this test leaves out may be missing; nothing refused by Redis.
    assert codes <= {"BACKEND_NOT_CONFIGURED"}, body.get("errors")
    assert body["data"], body


async def test_the_inspector_reads_an_owners_lists_under_its_user(
    server: RedisServer, history: Simulation
) -> None:
    # The lists filtered before the page is cut read every member of an index (ZRANGE)
    # and check the candidates in another (ZMSCORE): the REST /inventory?owner= and
    # GET /models?owner= documents.
    admin = client_as(server, "openrl-recorder")
    owner = await admin.hget(f"oi:{{s:{sorted(history.sessions)[0]}}}:session", "owner")
    await admin.aclose()
    query = """query($owner: String) {
      sessions(owner: $owner) { totalCount nodes { owner } }
      models(owner: $owner) { totalCount }
    }"""
    store = _store(server)
    async with app_client(store) as client:
        body = await gql(client, query, owner=owner)
    await store.aclose()
    assert not body.get("errors"), body.get("errors")
    assert body["data"]["sessions"]["totalCount"] >= 1
    assert {s["owner"] for s in body["data"]["sessions"]["nodes"]} == {owner}
    assert body["data"]["models"]["totalCount"] >= 1


@pytest.mark.parametrize(
    "command",
    [
        ("SET", "oi:schema_version", "9"),
        ("HSET", "oi:{m:x}:model", "state", "failed"),
        ("DEL", "oi:sessions:live"),
        ("EVAL", "return 1", "0"),
        ("KEYS", "*"),
        ("SCAN", "0"),
        ("FLUSHALL",),
        ("CONFIG", "GET", "*"),
        ("GET", "not-openrl"),
        ("PUBLISH", "oi:x", "hello"),
    ],
    ids=lambda c: c[0],
)
async def test_the_inspector_cannot_write_or_wander(
    server: RedisServer, command: tuple[str, ...]
) -> None:
    client = client_as(server, "openrl-inspect")
    with pytest.raises(redis.exceptions.NoPermissionError):
        await client.execute_command(*command)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
    await client.aclose()


async def test_the_tracker_records_placements_under_its_user(
    server: RedisServer, history: Simulation
) -> None:
    kube = MemoryKubernetesSource()
    mirror_kubernetes(history, kube)
    client = client_as(server, "openrl-tracker")
    recorder = AsyncRecorder(client, settings=RecorderSettings(recorder_id="tracker-acl"))
    changes = await track_once(PlacementTracker(recorder), kube, recorder, None)
    stats = recorder.stats()
    await recorder.close(5.0)
    assert changes > 0
    assert (
        stats.written == stats.recorded > 0 and stats.dropped == 0 and stats.last_error is None
    ), stats
    admin = aioredis.Redis(port=server.port, decode_responses=True, socket_timeout=5)
    placed = [m for m in history.models.values() if m.state in ("placed", "active")]
    assert placed
    assert min([await admin.zcard(f"oi:{{m:{m.id}}}:placements") for m in placed]) >= 1
    await admin.aclose()
    for command in (
        ("HSET", "oi:{m:x}:model", "state", "failed"),
        ("ZADD", "oi:models:state:failed", "1", "x"),
        ("GET", "oi:schema_version"),
        ("HGETALL", "oi:{m:x}:placement:p"),
        ("DEL", "oi:{m:x}:placements"),
    ):
        with pytest.raises(redis.exceptions.NoPermissionError):
            await client.execute_command(*command)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
    await client.aclose()


def test_the_documented_lines_are_the_tested_ones() -> None:
    documented = (ROOT / "docs" / "deploy.md").read_text()
    lines = [line for line in ACL_FILE.read_text().splitlines() if line.startswith("user ")]
    assert len(lines) == 3
    for line in lines:
        assert line in documented, line
    assert " ".join(cluster_rules()) in documented


def cluster_rules() -> list[str]:
    [line] = [x for x in ACL_FILE.read_text().splitlines() if x.startswith("# cluster: ")]
    return line.removeprefix("# cluster: ").split()


@pytest.mark.redis_cluster
async def test_the_users_on_a_redis_cluster(redis_cluster: Any) -> None:
    """The same users, plus the file's cluster line, on every node of a 3-node cluster:
    the recorder writes (scripts on each model's slot), the inspector reads."""
    redis_cluster.flush()  # the attention count below: only this test's models
    users = {name: [*rules, *cluster_rules()] for name, rules in acl_users().items()}
    for node in redis_cluster.nodes:
        admin = redis.Redis(port=node.port, socket_timeout=5)
        _load(admin, users)
        admin.close()
    port = redis_cluster.nodes[0].port

    def settings(user: str) -> RedisSettings:
        return RedisSettings(
            url=f"redis://{user}@127.0.0.1:{port}/0",
            cluster=True,
            password=f"pw-{user}",
            timeout_s=5,
        )

    writer = connect(settings("openrl-recorder"))
    rec = AsyncRecorder(
        writer,
        batch_size=1 << 30,
        retention=Retention(max_steps_per_model=6, trim_every_steps=2),
        settings=RecorderSettings(recorder_id="acl-cluster"),
    )
    sim = Simulation(SimConfig(seed=6, sessions=2, models_per_session=3, scenarios=False), rec)
    populate(sim, time.time())
    await rec.flush()
    stats = rec.stats()
    await rec.close(5.0)
    await writer.aclose()
    assert stats.written == stats.recorded > 0 and stats.last_error is None, stats

    store = RedisStateStore.from_settings(settings("openrl-inspect"))
    query = (QUERIES / "overview.graphql").read_text()
    async with app_client(store) as client:
        body = await gql(client, query)
        ready = await client.get("/api/v1/inspect/readyz")
    await store.aclose()
    assert ready.status_code == 200, ready.text
    codes = {e.get("extensions", {}).get("code") for e in body.get("errors", [])}
    assert codes <= {"BACKEND_NOT_CONFIGURED"}, body.get("errors")
    assert body["data"]["attention"]["scanned"] >= len(sim.models)

"""The direct read path (``adapters/redis/_wire.py``) against redis-py's pipeline, on a
real redis-server: the same results for every command the store sends, the same errors,
and a pool left healthy when a connection dies or a read is cancelled half-way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
import redis.exceptions as rexc
from openrl_inspect.adapters.redis import RedisSettings, connect
from openrl_inspect.adapters.redis import _wire as wire
from openrl_inspect.adapters.redis._client import RoundTrips, run
from openrl_inspect.core.errors import BackendTimeout, BackendUnavailable
from redis._parsers.hiredis import _AsyncHiredisParser
from support.redis_server import RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.redis_server]

P = "oi-wire:"
NOT_UTF8 = b"\xff\xfe caf\xe9"


async def _fill(url: str) -> None:
    w = aioredis.Redis.from_url(url)
    await w.delete(*(await w.keys(P + "*") or [P + "none"]))
    await w.hset(P + "h", mapping={"id": "m1", "name": "café ✓", "n": "12", "": "empty name"})
    await w.hset(P + "bad", mapping={"ok": "1", "raw": NOT_UTF8, NOT_UTF8: "key"})
    scores = {"a": 1.5, "b": 1.5, "c": 2.0, "d": -3.25, "e": 1e300, "f": 1 / 3, "g": 17e8 + 0.123}
    await w.zadd(P + "z", scores)
    await w.zadd(P + "zraw", {NOT_UTF8: 5.0, b"text": 6.0, b'{"id":"x"}': 7.0})
    await w.set(P + "s", "vält")
    await w.rpush(P + "list", "x")  # the wrong type for every command below
    await w.aclose()


def _every_kind(pipe: Any) -> None:
    """Each command kind the store sends, as the store queues it (see ``_state``,
    ``_rollups``, ``_client_logs``, ``_sampler_batches``), on present, missing and
    wrong-type keys."""
    for key in ("h", "bad", "missing", "list", "s"):
        pipe.execute_command("HGETALL", P + key, NEVER_DECODE=True)
    for key in ("z", "missing", "list"):
        pipe.zrevrange(P + key, 0, 0, withscores=True)
        pipe.zcard(P + key)
        pipe.zrevrangebyscore(P + key, "+inf", "-inf", start=0, num=5, withscores=True)
        pipe.zrangebyscore(P + key, 1.5, "+inf", start=1, num=3, withscores=True)
        pipe.zrevrangebyscore(P + key, 2.0, 1.5, start=0, num=40, withscores=True)
        pipe.execute_command("ZREVRANGE", P + key, 0, 4, NEVER_DECODE=True)
        pipe.zcount(P + key, "-inf", 2.0)
    for key in ("zraw", "z", "missing", "list"):
        k = P + key
        pipe.execute_command(
            "ZREVRANGEBYSCORE", k, "+inf", "-inf", "LIMIT", 0, 10, "WITHSCORES",
            withscores=True, keys=[k], NEVER_DECODE=True,
        )  # fmt: skip
    for key in ("s", "missing", "list"):
        pipe.get(P + key)


def _shape(results: Any) -> Any:
    """Results comparable across the two paths: an error as its type and message."""
    if isinstance(results, BaseException):
        return (type(results), str(results))
    if isinstance(results, list):
        return [_shape(r) for r in results]
    return (type(results), results)


async def _both(
    client: Any, build: Callable[[Any], object], raise_on_error: bool
) -> tuple[Any, Any]:
    answers = []
    for direct in (True, False):
        pipe = client.pipeline(transaction=False)
        build(pipe)
        assert wire.known(pipe.command_stack)
        try:
            if direct:
                got: Any = await wire.execute(client, pipe, raise_on_error=raise_on_error)
            else:
                got = await pipe.execute(raise_on_error=raise_on_error)
        except rexc.ResponseError as exc:
            got = exc
        answers.append(_shape(got))
    return answers[0], answers[1]


def _store(url: str, **settings: Any) -> aioredis.Redis:
    client = connect(RedisSettings(url=url, **settings))
    assert isinstance(client, aioredis.Redis)
    return client


def _client(url: str, name: str) -> aioredis.Redis:
    if name == "store (RESP3)":
        return _store(url)
    if name == "RESP2":
        return aioredis.Redis.from_url(url, decode_responses=True, protocol=2)
    return aioredis.Redis.from_url(url)  # undecoded, RESP3


@pytest.fixture
async def filled(redis_server: RedisServer) -> str:
    await _fill(redis_server.url)
    return redis_server.url


@pytest.mark.parametrize("name", ["store (RESP3)", "RESP2", "undecoded RESP3"])
@pytest.mark.parametrize("raise_on_error", [False, True])
async def test_every_command_kind_answers_as_the_pipeline(
    filled: str, name: str, raise_on_error: bool
) -> None:
    client = _client(filled, name)
    assert wire.direct(client)
    direct, piped = await _both(client, _every_kind, raise_on_error)
    assert direct == piped
    if raise_on_error:  # the first WRONGTYPE, annotated as redis-py annotates it
        assert direct[0] is rexc.ResponseError and "Command # 4 (HGETALL" in direct[1]
    else:
        assert sum(1 for r in direct if r and r[0] is rexc.ResponseError) == 11
    # a batch without a wrong-type key raises nothing either way
    clean = await _both(
        client, lambda p: [p.execute_command("HGETALL", P + "h"), p.zcard(P + "z")], True
    )
    assert clean[0] == clean[1] and clean[0][1] == (int, 7)
    await client.aclose()


async def test_run_takes_the_direct_path_only_where_it_applies(filled: str) -> None:
    import fakeredis

    store = _store(filled)
    assert wire.direct(store)
    assert not wire.direct(fakeredis.FakeAsyncRedis(decode_responses=True))

    class Own(aioredis.Connection):
        pass

    own = aioredis.Redis(
        connection_pool=aioredis.ConnectionPool.from_url(filled, connection_class=Own)
    )
    assert not wire.direct(own)
    latin = aioredis.Redis.from_url(filled, encoding="latin-1")
    assert not wire.direct(latin)  # hiredis would pack its text as UTF-8
    pipe = store.pipeline(transaction=False)
    pipe.hget(P + "h", "id")  # not a command the direct path knows: the pipeline's
    assert not wire.known(pipe.command_stack)
    trips = RoundTrips()

    def build(p: Any) -> None:
        p.get(P + "s")
        p.hget(P + "h", "id")

    got = await run(store, build, deadline_s=2, trips=trips)
    assert got == ["vält", "m1"] and trips.count == 1
    await store.aclose()
    await own.aclose()
    await latin.aclose()


async def test_a_reply_that_is_not_utf8_fails_alike_and_leaves_the_pool_usable(
    filled: str,
) -> None:
    client = _store(filled, max_connections=1)
    outcomes: list[object] = []
    for direct in (True, False):
        pipe = client.pipeline(transaction=False)
        pipe.hgetall(P + "bad")  # decoded: redis-py's reader cannot
        try:
            call = wire.execute(client, pipe, raise_on_error=False) if direct else pipe.execute()
            outcomes.append(await call)
        except Exception as exc:
            outcomes.append(type(exc))
        assert await client.get(P + "s") == "vält"
    assert outcomes[0] is outcomes[1] is UnicodeDecodeError
    await client.aclose()


# -- a connection dying or a read abandoned half-way --------------------------------------


async def _big(url: str) -> Callable[[Any], None]:
    """A batch whose replies (~24 MB) cannot all sit in socket buffers: a kill or a
    cancellation after the first read is half-way through it."""
    w = aioredis.Redis.from_url(url)
    await w.delete(P + "big")
    await w.hset(P + "big", mapping={f"f{i}": "v" * 100 for i in range(1000)})
    await w.aclose()

    def build(pipe: Any) -> None:
        for _ in range(200):
            pipe.execute_command("HGETALL", P + "big")

    return build


class Reads:
    """Patches the hiredis parser's socket read: ``then`` runs before the n-th read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, at: int, then: Any) -> None:
        self.count = 0
        self.busy = False
        original: Any = _AsyncHiredisParser.read_from_socket

        async def read(parser: Any) -> Any:
            if self.busy:  # ``then``'s own reads (the killer's) pass through
                return await original(parser)
            self.count += 1
            if self.count % at == 0:
                self.busy = True
                try:
                    await then()
                finally:
                    self.busy = False
            return await original(parser)

        monkeypatch.setattr(_AsyncHiredisParser, "read_from_socket", read)


def _zcard(pipe: Any) -> None:
    pipe.zcard(P + "z")


async def _healthy(client: Any) -> None:
    pool = client.connection_pool
    assert not pool._in_use_connections
    got = await run(client, _zcard, deadline_s=2, trips=RoundTrips())
    assert got == [7]


class Victim:
    """A one-connection store whose pooled connection another client kills after a
    batch's first socket read: each new connection once, ``budget`` kills in all."""

    def __init__(self, url: str) -> None:
        self.client = _store(url, max_connections=1)
        self.client.connection_pool.connection_kwargs["client_name"] = "oi-wire-victim"
        self.killer = aioredis.Redis.from_url(url)
        self.killed: list[int] = []
        self.budget = 0

    async def kill(self) -> None:
        for c in await self.killer.client_list():
            if c["name"] == "oi-wire-victim" and int(c["id"]) not in self.killed and self.budget:
                self.budget -= 1
                self.killed.append(int(c["id"]))
                await self.killer.client_kill_filter(_id=str(c["id"]))

    async def both_paths(
        self, monkeypatch: pytest.MonkeyPatch, build: Any, expected: Any, kills: int
    ) -> list[object]:
        """Each path's outcome (direct, then redis-py's pipeline) under ``kills`` kills:
        True for the expected answer, else the error's class."""
        outcomes: list[object] = []
        for direct in (True, False):
            self.budget = kills
            reads = Reads(monkeypatch, 2, self.kill)
            pipe = self.client.pipeline(transaction=False)
            build(pipe)
            try:
                client = self.client
                call = wire.execute(client, pipe, raise_on_error=True) if direct else pipe.execute()
                outcomes.append(_shape(await call) == _shape(expected))
            except rexc.RedisError as exc:
                outcomes.append(type(exc))
            monkeypatch.undo()
            assert reads.count > 2  # it was read on after the kill: killed half-way
            await _healthy(self.client)
        return outcomes

    async def close(self) -> None:
        await self.killer.aclose()
        await self.client.aclose()


async def test_a_connection_killed_mid_read_is_retried_once_on_a_new_one(
    filled: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The client's one retry for a dropped connection, on both paths alike.
    build = await _big(filled)
    v = Victim(filled)
    expected = await run(v.client, build, deadline_s=10, trips=RoundTrips())
    assert await v.both_paths(monkeypatch, build, expected, kills=1) == [True, True]
    assert len(v.killed) == 2
    await v.close()


async def test_a_connection_killed_mid_read_fails_as_the_pipeline_and_spares_the_pool(
    filled: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = await _big(filled)
    v = Victim(filled)
    expected = await run(v.client, build, deadline_s=10, trips=RoundTrips())
    # The retry's connection is killed too: both paths fail alike, after one retry each.
    outcomes = await v.both_paths(monkeypatch, build, expected, kills=2)
    assert outcomes == [rexc.ConnectionError, rexc.ConnectionError]
    assert len(v.killed) == 4
    # through run(): Redis "unreachable", as before
    v.budget = 2
    Reads(monkeypatch, 2, v.kill)
    with pytest.raises(BackendUnavailable):
        await run(v.client, build, deadline_s=10, trips=RoundTrips())
    monkeypatch.undo()
    assert await run(v.client, build, deadline_s=10, trips=RoundTrips()) == expected
    await v.close()


async def test_a_cancelled_read_disconnects_its_connection(
    filled: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = await _big(filled)
    client = _store(filled, max_connections=1)
    await _healthy(client)
    (conn,) = client.connection_pool._available_connections
    stalled = asyncio.Event()

    async def stall() -> None:
        stalled.set()
        await asyncio.sleep(30)

    Reads(monkeypatch, 2, stall)
    task = asyncio.create_task(run(client, build, deadline_s=10, trips=RoundTrips()))
    await asyncio.wait_for(stalled.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not conn.is_connected  # its unread replies went with it
    monkeypatch.undo()
    await _healthy(client)
    await client.aclose()


async def test_a_deadline_mid_read_is_a_timeout_and_disconnects(
    filled: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = await _big(filled)
    client = _store(filled, max_connections=1)
    await _healthy(client)
    (conn,) = client.connection_pool._available_connections

    async def stall() -> None:
        await asyncio.sleep(30)

    Reads(monkeypatch, 2, stall)
    with pytest.raises(BackendTimeout):
        await run(client, build, deadline_s=0.5, trips=RoundTrips())
    assert not conn.is_connected
    monkeypatch.undo()
    await _healthy(client)
    await client.aclose()


async def test_a_socket_timeout_mid_read_reads_as_redis_py_reports_it(
    filled: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = await _big(filled)
    client = _store(filled, max_connections=1, timeout_s=0.2)

    async def stall() -> None:
        await asyncio.sleep(0.5)

    Reads(monkeypatch, 2, stall)
    errors = []
    for direct in (True, False):
        pipe = client.pipeline(transaction=False)
        build(pipe)
        with pytest.raises(rexc.TimeoutError) as caught:
            await (wire.execute(client, pipe, raise_on_error=True) if direct else pipe.execute())
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and errors[0].startswith("Timeout reading from 127.0.0.1:")
    monkeypatch.undo()
    await _healthy(client)
    await client.aclose()

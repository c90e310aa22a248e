"""Scripts by EVALSHA, after the server lost its script cache (a restart, a failover; here
``SCRIPT FLUSH`` between two flushes): every record is written and counted, and the
rollups are what a server that kept its cache holds. Standalone and a 3-node cluster, for
both recorders (``Recorder`` and ``AsyncRecorder``: the one flusher thread either way).
And a Redis user whose ACL grants EVAL but not EVALSHA: the same fallback, warned."""

from __future__ import annotations

from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
from openrl_inspect.recorder import (
    AsyncRecorder,
    Recorder,
    RecorderBase,
    RecorderSettings,
    RecorderStats,
)
from openrl_inspect.recorder._rollup import ROLLUP_SHA
from openrl_inspect.recorder._scripts import TRIM_STEPS, sha
from openrl_inspect.state import keys
from support.redis_server import RedisCluster, RedisServer

TRIM_SHA = sha(TRIM_STEPS)


def _half(rec: RecorderBase, mid: str, first: bool) -> int:
    """Half a model's history at fixed times (two runs write the same); its records."""
    n = 0
    if first:
        rec.model_created(mid, "s-ns", "base", at=1.0)
        n += 1
    for step in range(0, 8) if first else range(8, 17):  # step 8, 16: a trim each
        for j in range(3):
            oid, t = f"{mid}-{step}-{j}", 10.0 * step + j
            rec.op_accepted(mid, oid, "forward_backward", step, at=t)
            rec.op_started(mid, oid, "w-1", at=t + 0.1)
            rec.op_finished(mid, oid, "failed" if j == 2 else "succeeded", at=t + 0.1 * step)
        rec.step_metrics(mid, step, {"loss": 1.0}, finished=True, at=10.0 * step + 5)
        n += 10
    return n


def _rollup(client: Any, mid: str) -> tuple[Any, Any]:
    return (
        client.hgetall(keys.rollup(mid)),
        client.zrange(keys.rollup_steps(mid), 0, -1, withscores=True),
    )


def _settings(url: str, rid: str, **kw: Any) -> RecorderSettings:
    return RecorderSettings(url=url, flush_at_exit=False, recorder_id=rid, **kw)


# Recorder and AsyncRecorder from settings (their own redis-py client), and an
# AsyncRecorder given a redis.asyncio client (sent through a copy on the thread's loop).
MODES = ["sync", "async", "async-client"]


def _recorder(mode: str, settings: RecorderSettings) -> tuple[RecorderBase, Any]:
    """The recorder, and the asyncio client it was given (to close), if any."""
    if mode == "sync":
        return Recorder.from_settings(settings), None
    if mode == "async":
        return AsyncRecorder.from_settings(settings), None
    client: Any = (aioredis.RedisCluster if settings.cluster else aioredis.Redis).from_url(
        settings.url
    )
    return AsyncRecorder(client, settings=settings), client


async def _flush(rec: RecorderBase) -> int:
    if isinstance(rec, Recorder):
        return rec.flush(10)
    assert isinstance(rec, AsyncRecorder)
    return await rec.flush(10)


async def _close(rec: RecorderBase, client: Any) -> RecorderStats:
    if isinstance(rec, Recorder):
        return rec.close(10)
    assert isinstance(rec, AsyncRecorder)
    st = await rec.close(10)
    if client is not None:
        await client.aclose()
    return st


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_server_without_the_scripts_gets_them_sent_again(
    redis_server: RedisServer, mode: str
) -> None:
    # A database of its own (the server is the session's); SCRIPT FLUSH is server-wide.
    url = f"redis://127.0.0.1:{redis_server.port}/11"
    client = redis.Redis.from_url(url, decode_responses=True)
    client.flushdb()
    kept, lost = f"ns-kept-{mode}", f"ns-lost-{mode}"
    try:
        states = []
        for mid, flush_scripts in ((kept, False), (lost, True)):
            rec, given = _recorder(mode, _settings(url, f"rec-{mid}"))
            n = _half(rec, mid, True)
            assert await _flush(rec) == n
            if flush_scripts:
                client.script_flush()
            n += _half(rec, mid, False)
            st = await _close(rec, given)
            assert (st.recorded, st.written, st.dropped, st.pending) == (n, n, 0, 0)
            states.append(_rollup(client, mid))
        # The second half's EVALSHAs found nothing, their EVALs loaded the scripts again.
        assert client.script_exists(ROLLUP_SHA, TRIM_SHA) == [True, True]
        (counters, entries), (counters2, entries2) = states
        assert counters == counters2 and [s for _, s in entries] == [s for _, s in entries2]
        assert [m.replace(kept, lost) for m, _ in entries] == [m for m, _ in entries2]
        assert (
            counters["n:forward_backward"] == "51" and counters["failed:forward_backward"] == "17"
        )
        assert counters["last_step"] == "16" and len(entries) == 17
    finally:
        client.flushdb()
        client.close()


@pytest.mark.redis_cluster
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_cluster_node_without_the_scripts_gets_them_sent_again(
    redis_cluster: RedisCluster, mode: str
) -> None:
    client = redis.RedisCluster.from_url(redis_cluster.url, decode_responses=True)
    mids = [f"ns-cl-{mode}-{i}" for i in range(6)]  # several models: more than one node
    try:
        rec, given = _recorder(mode, _settings(redis_cluster.url, "rec-ns-cl", cluster=True))
        n = sum(_half(rec, mid, True) for mid in mids)
        assert await _flush(rec) == n
        _flush_scripts(client)
        n += sum(_half(rec, mid, False) for mid in mids)
        st = await _close(rec, given)
        assert (st.recorded, st.written, st.dropped, st.pending) == (n, n, 0, 0)
        nodes = {client.get_node_from_key(keys.model(mid)).name for mid in mids}  # type: ignore[no-untyped-call]
        assert len(nodes) > 1
        for mid in mids:
            counters, entries = _rollup(client, mid)
            assert counters["n:forward_backward"] == "51" and counters["last_step"] == "16"
            assert len(entries) == 17
            conn = client.get_redis_connection(client.get_node_from_key(keys.model(mid)))  # type: ignore[no-untyped-call]
            assert conn.script_exists(ROLLUP_SHA) == [True]
    finally:
        _forget(client, mids)
        client.close()


def _flush_scripts(client: redis.RedisCluster) -> None:
    for node in client.get_primaries():  # type: ignore[no-untyped-call]
        client.get_redis_connection(node).script_flush()


def _forget(client: redis.RedisCluster, mids: list[str]) -> None:
    """Remove what the test wrote to the shared cluster (other tests count models)."""
    for node in client.get_primaries():  # type: ignore[no-untyped-call]
        conn = client.get_redis_connection(node)
        for pattern in ["oi:{m:ns-cl-*", "oi:{s:s-ns}*", "oi:opidx:ns-cl-*"]:
            for key in list(conn.scan_iter(match=pattern, count=1000)):
                client.delete(key)
    client.delete(keys.recorder("rec-ns-cl"))
    client.zrem(keys.RECORDERS, "rec-ns-cl")
    client.zrem(keys.SESSIONS_LIVE, "s-ns")
    for state in keys.MODEL_STATES:
        client.zrem(keys.models_in_state(state), *mids)


def test_a_user_without_evalsha_still_writes_everything(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The recorder's ACL before EVALSHA (+eval only): scripts go again as EVAL."""
    admin = redis.Redis(port=redis_server.port, decode_responses=True)
    url = f"redis://old-acl:pw@127.0.0.1:{redis_server.port}/10"
    rules = "+@all -evalsha ~* resetchannels"
    admin.acl_setuser("old-acl", reset=True, enabled=True, passwords=["+pw"])
    admin.execute_command(  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
        "ACL", "SETUSER", "old-acl", *rules.split()
    )
    client = redis.Redis(port=redis_server.port, db=10, decode_responses=True)
    client.flushdb()
    try:
        rec = Recorder.from_settings(_settings(url, "rec-old-acl"))
        mid = "old-acl"
        n = _half(rec, mid, True) + _half(rec, mid, False)
        st = rec.close(20)
        assert (st.recorded, st.written, st.dropped, st.pending) == (n, n, 0, 0)
        counters, entries = _rollup(client, mid)
        assert counters["n:forward_backward"] == "51" and len(entries) == 17
        assert "may not run EVALSHA" in caplog.text
    finally:
        client.flushdb()
        client.close()
        admin.acl_deluser("old-acl")
        admin.close()

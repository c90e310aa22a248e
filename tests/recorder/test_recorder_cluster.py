"""The recorder against a 3-node Redis Cluster: the same code, a model on one slot, and a
node restart mid-run with exact counts afterwards."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest
import redis
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.recorder import (
    AsyncRecorder,
    Recorder,
    RecorderBase,
    RecorderSettings,
    Retention,
)
from openrl_inspect.state import keys
from openrl_inspect.state.records import ModelRecord, OpRecord
from redis.crc import key_slot
from support.recorder_faults import count_present, persist_on_shutdown
from support.redis_server import RedisCluster, require_redis

pytestmark = pytest.mark.redis_cluster


def _history(rec: RecorderBase, mid: str, sid: str) -> int:
    """A small model history touching every per-model key; returns the record count."""
    rec.session_opened(sid, "alice")
    rec.model_created(mid, sid, "Qwen/Qwen3-8B")
    rec.placement_admitted(mid, f"{mid}-p", "wl", "ns", ["pod-0"], "node-0", ["GPU-0"])
    n = 3
    for step in range(6):
        oid = f"{mid}-o{step}"
        rec.op_accepted(mid, oid, "forward_backward", step, session_id=sid)
        rec.op_started(mid, oid, f"{mid}-trainer")
        rec.op_finished(mid, oid, metrics={"loss": 1.0 / (step + 1)})
        rec.sampler_batch(mid, 8, 100, 200, 0.3, 1, worker_id=f"{mid}-sampler")
        rec.client_log(mid, "INFO", f"step {step}")
        rec.step_metrics(mid, step, {"reward_mean": 0.5}, finished=True)
        n += 6
    rec.model_state(mid, "ended")
    return n + 1


def _model_keys(client: redis.RedisCluster, mid: str) -> list[str]:
    found: list[str] = []
    for node in client.get_primaries():  # type: ignore[no-untyped-call]
        conn = client.get_redis_connection(node)
        found += list(conn.scan_iter(match=f"oi:{{m:{mid}}}:*", count=1000))
    return found


def _forget(client: redis.RedisCluster, mids: list[str], sids: list[str], rids: list[str]) -> None:
    """Remove what a test wrote to the shared cluster (other tests count its sessions)."""
    doomed: list[str] = []
    for node in client.get_primaries():  # type: ignore[no-untyped-call]
        conn = client.get_redis_connection(node)
        for pattern in [f"oi:{{m:{m}}}:*" for m in mids] + [f"oi:{{s:{s}}}:*" for s in sids]:
            doomed += list(conn.scan_iter(match=pattern, count=1000))
        for mid in mids:
            doomed += list(conn.scan_iter(match=f"oi:opidx:{mid}-*", count=1000))
    for key in doomed:
        client.delete(key)
    client.delete(*[keys.recorder(r) for r in rids])
    client.zrem(keys.RECORDERS, *rids)
    client.zrem(keys.SESSIONS_LIVE, *sids)
    client.zrem(keys.SESSIONS_CLOSED, *sids)
    for state in keys.MODEL_STATES:
        client.zrem(keys.models_in_state(state), *mids)


@pytest.mark.anyio
async def test_sync_and_async_recorders_write_a_model_to_one_slot(redis_cluster: Any) -> None:
    client = redis.RedisCluster.from_url(redis_cluster.url, decode_responses=True)
    try:
        await _write_and_check(redis_cluster.url, client)
    finally:
        _forget(client, ["cl-sync", "cl-async"], ["cl-s1", "cl-s2"], ["cl-rec-1", "cl-rec-2"])
        client.close()


async def _write_and_check(url: str, client: redis.RedisCluster) -> None:
    settings = RecorderSettings(url=url, cluster=True, flush_at_exit=False, recorder_id="cl-rec-1")
    sync_rec = Recorder.from_settings(settings)
    n_sync = _history(sync_rec, "cl-sync", "cl-s1")
    st_sync = sync_rec.close(timeout_s=10)
    async_rec = AsyncRecorder.from_settings(replace(settings, recorder_id="cl-rec-2"))
    n_async = _history(async_rec, "cl-async", "cl-s2")
    st_async = await async_rec.close(timeout_s=10)
    assert (st_sync.written, st_sync.dropped) == (n_sync, 0)
    assert (st_async.written, st_async.dropped) == (n_async, 0)

    for mid in ("cl-sync", "cl-async"):
        found = _model_keys(client, mid)
        # model, steps, 6 x (step, step ops, op), workers, placements, placement,
        # logs, sampler batches, rollup, rollup steps (ops:open is empty: every op
        # finished)
        assert len(found) == 2 + 6 * 3 + 5 + 2
        assert {key_slot(k.encode()) for k in found} == {key_slot(keys.model(mid).encode())}
        assert all(client.ttl(k) > 0 for k in found)  # ended: retention reached every key
        assert client.zcard(keys.sampler_batches(mid)) == 6
    store = RedisStateStore.from_settings(RedisSettings(url=url, cluster=True))
    try:
        models = await store.models(["cl-sync", "cl-async"])
        assert [m.state if isinstance(m, ModelRecord) else None for m in models] == [
            "ended",
            "ended",
        ]
        assert all(isinstance(m, ModelRecord) and m.latest_step == 5 for m in models)
        ops = await store.ops([("cl-sync", "cl-sync-o5"), ("cl-async", "cl-async-o0")])
        assert all(isinstance(o, OpRecord) and o.status == "succeeded" for o in ops)
    finally:
        await store.aclose()


def test_a_cluster_node_restart_loses_nothing_silently() -> None:
    require_redis()
    cluster = RedisCluster().start()
    try:
        persist_on_shutdown(cluster.url, cluster=True)
        admin = redis.RedisCluster.from_url(cluster.url, decode_responses=True)
        models = [f"m-{i}" for i in range(6)]
        served = admin.get_node_from_key(keys.model("m-0"))  # type: ignore[no-untyped-call]
        victim = next(n for n in cluster.nodes if n.port == served.port)
        rec = Recorder.from_settings(
            RecorderSettings(
                url=cluster.url,
                cluster=True,
                capacity=2_000,
                batch_size=200,
                flush_interval_s=0.02,
                socket_timeout_s=0.3,
                connect_timeout_s=0.3,
                backoff_base_s=0.02,
                backoff_cap_s=0.2,
                flush_at_exit=False,
            ),
            Retention(max_steps_per_model=1_000_000, max_sampler_batches_per_model=10_000_000),
        )
        n = 0
        max_pending = 0
        stop = threading.Event()

        def produce() -> None:
            nonlocal n, max_pending
            while not stop.is_set():
                for _ in range(20):
                    mid = models[n % len(models)]
                    rec.sampler_batch(mid, 8, 1, 1, 0.1, 1, worker_id="sampler-0")
                    rec.op_accepted(mid, f"op-{n}", "forward", n // 100)
                    n += 1
                max_pending = max(max_pending, rec.pending)
                time.sleep(0.002)

        def wait_until(cond: Any, what: str) -> None:
            deadline = time.monotonic() + 15  # liveness bound only
            while not cond():
                if time.monotonic() > deadline:
                    pytest.fail(f"{what} did not happen")
                time.sleep(0.01)

        thread = threading.Thread(target=produce, daemon=True)
        thread.start()
        wait_until(lambda: rec.stats().written > 1_000, "first writes")
        victim.stop()
        wait_until(lambda: rec.stats().dropped_by_reason.get("full", 0) > 0, "overflow")
        victim.start()
        before = rec.stats().written
        wait_until(lambda: rec.stats().written > before + 2_000, "recovery")
        stop.set()
        thread.join(5)
        st = rec.close(timeout_s=5)

        assert max_pending <= rec.capacity + 2 * rec.batch_size
        assert st.failed_attempts > 0 and st.dropped > 0
        assert st.recorded == 2 * n and st.pending == 0
        assert st.written + st.dropped == st.recorded
        ops = [(models[i % len(models)], f"op-{i}") for i in range(n)]
        assert count_present(admin, models, ops) == st.written
        admin.close()
    finally:
        cluster.cleanup()

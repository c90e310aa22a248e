"""The recorder against a real redis-server: round trip, never blocking, and faults.

Fault tests start their own redis-server (the session one is shared), let it save on
shutdown so a restart keeps what was written, and check after recovery that every
record is either in Redis or counted as dropped: ``written + dropped == recorded`` with
``written`` equal to what Redis holds.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from typing import Any, cast

import anyio
import anyio.lowlevel
import pytest
import redis
import redis.asyncio as aioredis
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.recorder import (
    AsyncRecorder,
    Recorder,
    RecorderBase,
    RecorderSettings,
    RecorderStats,
    Retention,
    WorkerInfo,
)
from openrl_inspect.state import keys
from openrl_inspect.state.paging import ListRef, PageRequest
from openrl_inspect.state.records import ModelRecord, OpRecord, WorkerRecord
from support.recorder_faults import SilentServer, count_present, persist_on_shutdown, wait_until
from support.redis_server import RedisServer, require_redis

pytestmark = pytest.mark.redis_server

KEEP_ALL = Retention(max_steps_per_model=1_000_000, max_sampler_batches_per_model=10_000_000)


def fault_settings(url: str, **overrides: Any) -> RecorderSettings:
    values: dict[str, Any] = {
        "url": url,
        "capacity": 2_000,
        "batch_size": 200,
        "flush_interval_s": 0.02,
        "socket_timeout_s": 0.3,
        "connect_timeout_s": 0.3,
        "attempt_timeout_s": 0.5,
        "backoff_base_s": 0.02,
        "backoff_cap_s": 0.2,
        "flush_at_exit": False,
    }
    values.update(overrides)
    return RecorderSettings(**values)


async def poll_until(cond: Any, what: str, bound_s: float = 8.0) -> None:
    """Liveness only: fail instead of hanging if ``cond`` never becomes true."""
    for _ in range(int(bound_s / 0.01)):
        if cond():
            return
        await anyio.sleep(0.01)
    pytest.fail(f"{what} did not happen within {bound_s}s")


class Producer:
    """A sampler/trainer stand-in: pairs of (sampler batch, op accepted), unique ids."""

    def __init__(self, rec: RecorderBase, models: list[str]) -> None:
        self.rec = rec
        self.models = models
        self.n = 0  # pairs recorded
        self.max_pending = 0
        self.stop = threading.Event()

    @property
    def recorded(self) -> int:
        return 2 * self.n

    def op_ids(self) -> list[tuple[str, str]]:
        return [(self.models[i % len(self.models)], f"op-{i}") for i in range(self.n)]

    def chunk(self) -> None:
        rec = self.rec
        for _ in range(20):
            i = self.n
            mid = self.models[i % len(self.models)]
            rec.sampler_batch(mid, 8, 512, 1024, 0.05, 3, worker_id="sampler-0")
            rec.op_accepted(mid, f"op-{i}", "forward_backward", i // 100)
            self.n = i + 1
        self.max_pending = max(self.max_pending, rec.pending)

    def run(self) -> None:
        while not self.stop.is_set():
            self.chunk()
            time.sleep(0.002)


def check_no_silent_loss(st: RecorderStats, producer: Producer, present: int) -> None:
    assert st.recorded == producer.recorded
    assert st.pending == 0
    assert st.written + st.dropped == st.recorded
    assert present == st.written  # what Redis holds is exactly what was counted written


# -- round trip ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sync_recorder_round_trip_through_the_reader(redis_server: Any) -> None:
    worker = WorkerInfo("trainer-rt", "trainer", "pod-rt", "node-1", "m-rt", ("GPU-a",))
    rec = Recorder.from_settings(
        RecorderSettings(url=redis_server.url, recorder_id="rt-1", flush_at_exit=False),
        worker=worker,
    )
    rec.session_opened("s-rt", "alice", {"sdk": "tinker"})
    rec.model_created("m-rt", "s-rt", "Qwen/Qwen3-8B", {"rank": 16})
    for step in range(20):
        for k, kind in enumerate(("sample", "forward_backward", "optim_step")):
            oid = f"rt-{step}-{k}"
            rec.op_accepted("m-rt", oid, kind, step, session_id="s-rt")
            rec.op_enqueued("m-rt", oid)
            rec.op_started("m-rt", oid, "trainer-rt")
            rec.op_finished("m-rt", oid, metrics={"loss": 0.5})
        rec.sampler_batch("m-rt", 16, 2048, 4096, 0.8, 2)
        rec.client_log("m-rt", "INFO", f"step {step} done", {"step": step})
        rec.step_metrics("m-rt", step, {"reward_mean": 0.1 * step}, finished=True)
    st = rec.close(timeout_s=10)
    assert (st.recorded, st.written, st.dropped, st.pending) == (302, 302, 0, 0)

    store = RedisStateStore(aioredis.Redis.from_url(redis_server.url, decode_responses=True))
    try:
        (model,) = await store.models(["m-rt"])
        assert isinstance(model, ModelRecord) and model.latest_step == 19
        (op,) = await store.ops([("m-rt", "rt-19-1")])
        assert (
            isinstance(op, OpRecord) and op.status == "succeeded" and op.worker_id == "trainer-rt"
        )
        (w,) = await store.workers(["trainer-rt"])
        assert isinstance(w, WorkerRecord) and w.gpu_ids == ["GPU-a"]
        assert set(w.payload.value()["recorder"]) == {
            "recorded",
            "written",
            "dropped",
            "pending",
            "retried",
        }
        (page,) = await store.pages([PageRequest(ListRef("open_ops", ("m-rt",)), 10)])
        assert page.total == 0
    finally:
        await store.aclose()
    raw = redis.Redis.from_url(redis_server.url, decode_responses=True)
    assert raw.zcard(keys.sampler_batches("m-rt")) == 20
    logs = [json.loads(m) for m in cast(list[str], raw.zrange(keys.logs("m-rt"), 0, -1))]
    assert [e["fields"]["step"] for e in logs] == list(range(20))
    assert all(e["worker"] == "trainer-rt" for e in logs)
    counters = raw.hgetall(keys.recorder("rt-1"))
    assert int(counters["written"]) == 302 and int(counters["dropped"]) == 0
    raw.close()


def test_a_command_redis_rejects_drops_only_its_record(redis_server: Any) -> None:
    # A real server's error replies, read one by one: the batch is sent again record by
    # record, and only the record whose command was refused is dropped.
    raw = redis.Redis.from_url(redis_server.url, decode_responses=True)
    raw.set(keys.logs("m-wrong"), "not a sorted set")
    rec = Recorder.from_settings(
        RecorderSettings(url=redis_server.url, recorder_id="rej-1", flush_at_exit=False),
        start=False,
    )
    rec.client_log("m-right", "INFO", "fine")
    rec.client_log("m-wrong", "INFO", "refused: WRONGTYPE")
    rec.op_accepted("m-wrong", "o-rej", "forward", 1)
    assert rec.flush(10) == 2
    st = rec.close(10)
    assert (st.recorded, st.written, st.dropped, st.pending) == (3, 2, 1, 0)
    assert dict(st.dropped_by_reason) == {"rejected": 1}
    assert dict(st.dropped_by_kind) == {"client_log": 1}
    assert raw.zcard(keys.logs("m-right")) == 1
    assert raw.hget(keys.op("m-wrong", "o-rej"), "kind") == "forward"
    raw.delete(keys.logs("m-wrong"))
    raw.close()


# -- never blocking -----------------------------------------------------------------------------


def test_sync_record_calls_return_while_the_flusher_is_stuck_on_a_silent_redis() -> None:
    silent = SilentServer()
    rec = Recorder.from_settings(
        fault_settings(silent.url, socket_timeout_s=60.0, capacity=5_000, batch_size=100)
    )
    try:
        rec.op_started("m1", "first", "w1")
        assert silent.received.wait(5), "the flusher never sent its pipeline"
        # The flusher is now blocked in a receive that will not return for a minute.
        done = threading.Event()

        def record() -> None:
            for i in range(20_000):
                rec.op_started("m1", f"o{i}", "w1")
                rec.sampler_batch("m1", 1, 1, 1, 0.1, 0)
            done.set()

        threading.Thread(target=record, daemon=True).start()
        assert done.wait(5), "record calls blocked"  # liveness watchdog, not a timing assert
        closed: list[RecorderStats] = []
        closer = threading.Thread(target=lambda: closed.append(rec.close(timeout_s=0.3)))
        closer.start()
        closer.join(5)
        assert closed, "close() did not return at its deadline"
        st = closed[0]
        assert st.recorded == 40_001 and st.written == 0 and st.pending == 0
        assert st.dropped == st.recorded
        assert set(st.dropped_by_reason) == {"shed", "full", "shutdown"}
        # at close: the full buffer, the stuck batch, and at most one batch prepared
        shutdown = st.dropped_by_reason["shutdown"]
        assert rec.capacity + 1 <= shutdown <= rec.capacity + 1 + rec.batch_size
    finally:
        silent.close()


@pytest.mark.anyio
@pytest.mark.parametrize("given", [False, True], ids=["own-client", "asyncio-client"])
async def test_async_record_calls_and_the_loop_stay_free_while_redis_is_silent(
    given: bool,
) -> None:
    silent = SilentServer()
    settings = fault_settings(silent.url, attempt_timeout_s=60.0, socket_timeout_s=60.0)
    client = aioredis.Redis.from_url(silent.url, socket_timeout=60.0) if given else None
    rec = AsyncRecorder(client, settings=settings)
    try:
        rec.op_started("m1", "first", "w1")
        await poll_until(silent.received.is_set, "the flusher's pipeline")
        # The flusher thread waits for an answer that never comes; the loop runs us.
        for i in range(10_000):
            rec.op_started("m1", f"o{i}", "w1")
            if i % 1000 == 0:
                await anyio.lowlevel.checkpoint()
        with anyio.fail_after(5):
            st = await rec.close(timeout_s=0.3)
        assert st.recorded == 10_001 and st.written == 0 and st.pending == 0
        assert st.dropped == st.recorded
    finally:
        silent.close()
        if client is not None:
            await client.aclose()


# -- faults -------------------------------------------------------------------------------------


def test_redis_stopped_and_restarted_mid_run_loses_nothing_silently() -> None:
    require_redis()
    server = RedisServer().start()
    try:
        persist_on_shutdown(server.url)
        rec = Recorder.from_settings(fault_settings(server.url), KEEP_ALL)
        producer = Producer(rec, ["m-a", "m-b", "m-c"])
        thread = threading.Thread(target=producer.run, daemon=True)
        thread.start()
        wait_until(lambda: rec.stats().written > 1_000, what="first writes")

        server.stop()
        at_stop = producer.n
        # (count the overflow from here: records shed before the stop are not the outage's)
        full = rec.stats().dropped_by_reason.get("full", 0)
        wait_until(
            lambda: (
                rec.stats().dropped_by_reason.get("full", 0) > full
                and 2 * (producer.n - at_stop) > rec.capacity
            ),
            what="overflow",
        )
        outage_records = 2 * (producer.n - at_stop)
        server.start()
        written_before = rec.stats().written
        wait_until(lambda: rec.stats().written > written_before + 2_000, what="recovery")
        producer.stop.set()
        thread.join(5)
        st = rec.close(timeout_s=5)

        # The caller went on recording through the outage, past what the buffer holds...
        assert outage_records > rec.capacity
        # ...and the buffer stayed bounded (in flight: at most two batches).
        assert producer.max_pending <= rec.capacity + 2 * rec.batch_size
        assert st.failed_attempts > 0 and st.dropped > 0
        assert set(st.dropped_by_reason) <= {"shed", "full"}
        client = redis.Redis.from_url(server.url, decode_responses=True)
        present = count_present(client, producer.models, producer.op_ids())
        check_no_silent_loss(st, producer, present)
        # the counters reached Redis once it was back
        h = client.hgetall(keys.recorder(rec.recorder_id))
        assert (int(h["written"]), int(h["dropped"]), int(h["recorded"])) == (
            st.written,
            st.dropped,
            st.recorded,
        )
        client.close()
    finally:
        server.cleanup()


def test_a_frozen_redis_applies_late_and_the_retry_is_counted_once() -> None:
    """SIGSTOP: the flusher times out and sends the batch again once Redis runs; Redis
    may also apply the abandoned attempt when it resumes. Either way each record is in
    Redis once and counted written once."""
    require_redis()
    server = RedisServer().start()
    try:
        rec = Recorder.from_settings(fault_settings(server.url, capacity=50_000), KEEP_ALL)
        producer = Producer(rec, ["m-x"])
        thread = threading.Thread(target=producer.run, daemon=True)
        thread.start()
        wait_until(lambda: rec.stats().written > 500, what="first writes")
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: rec.stats().failed_attempts >= 2, what="timeouts")
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        failed = rec.stats().failed_attempts
        wait_until(lambda: rec.stats().connected is True, what="recovery")
        producer.stop.set()
        thread.join(5)
        st = rec.close(timeout_s=5)
        assert failed >= 2 and st.retried > 0 and st.dropped == 0
        client = redis.Redis.from_url(server.url, decode_responses=True)
        check_no_silent_loss(st, producer, count_present(client, ["m-x"], producer.op_ids()))
        client.close()
    finally:
        server.cleanup()


@pytest.mark.anyio
async def test_async_recorder_survives_a_redis_restart_with_exact_counts() -> None:
    require_redis()
    server = RedisServer().start()
    try:
        persist_on_shutdown(server.url)
        rec = AsyncRecorder.from_settings(fault_settings(server.url), KEEP_ALL)
        producer = Producer(rec, ["m-a", "m-b"])

        async def produce() -> None:
            while not producer.stop.is_set():
                producer.chunk()
                await anyio.sleep(0.002)

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            await poll_until(lambda: rec.stats().written > 1_000, "first writes")
            await anyio.to_thread.run_sync(server.stop)
            at_stop = producer.n
            full = rec.stats().dropped_by_reason.get("full", 0)
            await poll_until(
                lambda: (
                    rec.stats().dropped_by_reason.get("full", 0) > full
                    and 2 * (producer.n - at_stop) > rec.capacity
                ),
                "overflow",
            )
            outage_records = 2 * (producer.n - at_stop)
            await anyio.to_thread.run_sync(server.start)
            before = rec.stats().written
            await poll_until(lambda: rec.stats().written > before + 2_000, "recovery")
            producer.stop.set()
        st = await rec.close(timeout_s=5)
        assert outage_records > rec.capacity
        assert producer.max_pending <= rec.capacity + 2 * rec.batch_size
        assert st.failed_attempts > 0 and st.dropped > 0
        client = redis.Redis.from_url(server.url, decode_responses=True)
        check_no_silent_loss(
            st, producer, count_present(client, producer.models, producer.op_ids())
        )
        client.close()
    finally:
        server.cleanup()

"""The recorder's process mode against a real redis-server: a flusher process fed
through the shared ring. Exact accounting, an outage, the close deadline, a flusher
process that dies, and the choice of mode."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import fakeredis
import pytest
import redis
import redis.asyncio as aioredis
from openrl_inspect.recorder import (
    AsyncRecorder,
    Recorder,
    RecorderBase,
    RecorderSettings,
    WorkerInfo,
)
from openrl_inspect.recorder._child import group_nice
from openrl_inspect.recorder._process import ProcessFlusher
from openrl_inspect.recorder._ring import supported
from openrl_inspect.state import keys
from support.recorder_faults import SilentServer, count_present, persist_on_shutdown, wait_until
from support.recorder_settings import KEEP_ALL, recorder_settings
from support.redis_server import RedisServer, require_redis

pytestmark = [
    pytest.mark.redis_server,
    pytest.mark.skipif(not supported(), reason="no process mode on this platform"),
]


def record_pairs(rec: RecorderBase, start: int, n: int, models: list[str]) -> None:
    """``n`` pairs (sampler batch, op accepted) with unique ids: one key per record."""
    for i in range(start, start + n):
        mid = models[i % len(models)]
        rec.sampler_batch(mid, 8, 512, 1024, 0.05, 3, worker_id="sampler-0")
        rec.op_accepted(mid, f"op-{i}", "forward_backward", i // 100)


def present(url: str, models: list[str], n: int) -> int:
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        ops = [(models[i % len(models)], f"op-{i}") for i in range(n)]
        return count_present(client, models, ops)
    finally:
        client.close()


def flushed(rec: Recorder) -> int:
    """Records written so far, once a flush returns (``flush()`` itself counts only what
    it saw written after it was called; the background flusher may have been first)."""
    rec.flush(30)
    return rec.stats().written


def flusher_of(rec: Recorder | AsyncRecorder) -> ProcessFlusher:
    process = rec._process
    assert process is not None, "expected the process mode"
    return process


def test_every_record_is_written_and_counted_exactly(redis_server: Any) -> None:
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    client.flushall()
    rec = Recorder(client, KEEP_ALL, settings=recorder_settings(redis_server.url))
    flusher_of(rec)
    models = ["pm-a", "pm-b"]
    record_pairs(rec, 0, 5_000, models)
    assert flushed(rec) == 10_000
    st = rec.stats()
    assert (st.recorded, st.written, st.dropped, st.pending) == (10_000, 10_000, 0, 0)
    assert present(redis_server.url, models, 5_000) == 10_000
    st = rec.close(10)
    assert st.recorded == st.written == 10_000 and st.flusher_crashes == 0
    # the counters reached Redis, the heartbeat-less recorder's hash included
    h = client.hgetall(keys.recorder(rec.recorder_id))
    assert (int(h["recorded"]), int(h["written"]), int(h["dropped"])) == (10_000, 10_000, 0)
    client.close()


def test_status_fields_and_the_current_op_reach_the_heartbeat(redis_server: Any) -> None:
    worker = WorkerInfo("pm-trainer", "trainer", "pod", "node", "pm-m", ("GPU-0",))
    rec = Recorder.from_settings(recorder_settings(redis_server.url), worker=worker)
    rec.op_started("pm-m", "pm-op", "pm-trainer")
    rec.set_status(step=7)
    rec.close(10)
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    payload = client.hget(keys.worker("pm-trainer"), "payload")
    client.close()
    assert payload is not None and '"step":7' in payload and '"current_op":"pm-op"' in payload


def worker_payload(url: str, wid: str) -> dict[str, Any]:
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        raw = client.hget(keys.worker(wid), "payload")
    finally:
        client.close()
    return dict(json.loads(raw)) if raw else {}


def test_status_fields_reach_the_heartbeat_while_running_and_the_latest_wins(
    redis_server: Any,
) -> None:
    # set_status only updates a dict; the porter sends the fields at its next port
    worker = WorkerInfo("pm-status", "trainer", "pod", "node", "pm-m", ("GPU-0",))
    s = recorder_settings(redis_server.url, heartbeat_every_s=0.05)
    rec = Recorder.from_settings(s, worker=worker)
    try:
        rec.set_status(step=1, phase="warm-up")
        rec.set_status(step=2)
        rec.op_accepted("pm-m", "op-1", "forward_backward", 2)
        wait_until(
            lambda: worker_payload(redis_server.url, "pm-status").get("step") == 2,
            what="step 2 in the heartbeat",
        )
        assert worker_payload(redis_server.url, "pm-status")["phase"] == "warm-up"
        # a value the JSON encoder refuses spoils neither the porter nor the records
        rec.set_status(step=3, handle=object())
        rec.op_accepted("pm-m", "op-2", "forward_backward", 3)
        assert flushed(rec) == 2
        wait_until(
            lambda: worker_payload(redis_server.url, "pm-status").get("step") == 3,
            what="step 3 in the heartbeat",
        )
    finally:
        st = rec.close(10)
    assert (st.recorded, st.written, st.dropped) == (2, 2, 0)


@pytest.mark.parametrize("flusher", ["thread", "process"])
def test_every_call_after_close_is_counted_closed(redis_server: Any, flusher: str) -> None:
    # once the door is closed, frequent and rare calls alike are refused and counted
    rec = Recorder.from_settings(recorder_settings(redis_server.url, flusher=flusher), KEEP_ALL)
    rec.op_accepted("pm-z", "op-1", "forward_backward", 1)
    assert rec.close(10).written == 1
    rec.op_accepted("pm-z", "op-2", "forward_backward", 1)
    rec.op_finished("pm-z", "op-2", metrics={"loss": 1.0})
    rec.sampler_batch("pm-z", 8, 512, 1024, 0.05, 3, worker_id="sampler-0")
    rec.session_opened("sess-z", "alice")
    st = rec.stats()
    assert (st.recorded, st.written, st.dropped, st.pending) == (5, 1, 4, 0)
    assert dict(st.dropped_by_reason) == {"closed": 4}


def test_redis_stopped_and_restarted_loses_nothing() -> None:
    require_redis()
    server = RedisServer().start()
    try:
        persist_on_shutdown(server.url)
        rec = Recorder.from_settings(recorder_settings(server.url), KEEP_ALL)
        models = ["pm-x", "pm-y"]
        record_pairs(rec, 0, 500, models)
        assert flushed(rec) == 1_000
        server.stop()
        record_pairs(rec, 500, 2_000, models)  # recorded while Redis is away
        deadline = time.monotonic() + 10
        while rec.stats().failed_attempts == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rec.stats().connected is False
        server.start()
        assert flushed(rec) == 5_000
        st = rec.close(10)
        assert (st.recorded, st.written, st.dropped, st.pending) == (5_000, 5_000, 0, 0)
        assert st.failed_attempts > 0
        assert present(server.url, models, 2_500) == 5_000
    finally:
        server.cleanup()


def test_close_returns_at_its_deadline_and_counts_the_rest_as_shutdown() -> None:
    silent = SilentServer()
    rec = Recorder.from_settings(recorder_settings(silent.url, socket_timeout_s=60.0))
    try:
        record_pairs(rec, 0, 1_000, ["pm-s"])
        assert silent.received.wait(10), "the flusher process never sent its pipeline"
        t = time.monotonic()
        st = rec.close(timeout_s=0.5)
        assert time.monotonic() - t < 2.0  # the deadline, plus killing a stuck process
        assert (st.recorded, st.written, st.pending) == (2_000, 0, 0)
        assert st.dropped_by_reason == {"shutdown": 2_000}
        assert sum(st.dropped_by_kind.values()) == 2_000
    finally:
        silent.close()


def test_a_flusher_process_that_dies_is_counted_and_replaced(redis_server: Any) -> None:
    rec = Recorder.from_settings(recorder_settings(redis_server.url), KEEP_ALL)
    models = ["pm-k"]
    record_pairs(rec, 0, 500, models)
    assert flushed(rec) == 1_000
    process = flusher_of(rec)
    proc = process._proc
    assert proc is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    record_pairs(rec, 500, 500, models)
    rec.flush(30)
    st = rec.close(10)
    assert st.flusher_crashes == 1
    assert st.pending == 0 and st.recorded == 2_000
    assert st.written + st.dropped == st.recorded
    assert set(st.dropped_by_reason) <= {"lost"}
    # what was counted written is in Redis; nothing counted lost was counted written
    assert present(redis_server.url, models, 1_000) >= st.written


@pytest.mark.anyio
async def test_async_recorder_with_an_asyncio_client_flushes_from_a_process(
    redis_server: Any,
) -> None:
    client = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    rec = AsyncRecorder(client, KEEP_ALL, settings=recorder_settings(redis_server.url))
    flusher_of(rec)
    record_pairs(rec, 0, 1_000, ["pm-as"])
    await rec.flush(30)
    assert rec.stats().written == 2_000
    st = await rec.close(10)
    assert (st.recorded, st.written, st.dropped, st.pending) == (2_000, 2_000, 0, 0)
    await client.aclose()


def test_many_threads_record_into_the_ring_and_every_record_is_accounted(
    redis_server: Any,
) -> None:
    rec = Recorder.from_settings(recorder_settings(redis_server.url, capacity=1_000), KEEP_ALL)

    def work(t: int) -> None:
        record_pairs(rec, t * 10_000, 3_000, [f"pm-t{t}"])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    rec.flush(30)
    st = rec.close(10)
    assert st.recorded == 24_000 and st.pending == 0
    assert st.written + st.dropped == st.recorded
    assert set(st.dropped_by_reason) <= {"shed", "full"}
    # 1,000 of capacity: the producers outran the flusher and were shed, by the policy


def test_the_mode_follows_the_settings_and_the_client(redis_server: Any) -> None:
    fake = Recorder(fakeredis.FakeRedis(), settings=RecorderSettings(flush_at_exit=False))
    assert fake._process is None  # a fake client cannot cross to another process
    fake.close(1)
    thread = Recorder.from_settings(recorder_settings(redis_server.url, flusher="thread"))
    assert thread._process is None
    thread.close(1)
    auto = Recorder.from_settings(recorder_settings(redis_server.url, flusher="auto"))
    assert auto._process is not None
    auto.close(1)


def test_a_forked_process_neither_writes_into_the_ring_nor_stops_the_flusher(
    redis_server: Any,
) -> None:
    rec = Recorder.from_settings(recorder_settings(redis_server.url), KEEP_ALL)
    models = ["pm-f"]
    record_pairs(rec, 0, 100, models)
    with warnings.catch_warnings():  # 3.12 warns about fork() with threads running
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the forked process: its records are refused and counted, close is a no-op
        code = 1
        try:
            record_pairs(rec, 1_000, 50, models)
            st = rec.close(1)
            ok = st.recorded == st.dropped == 100 and set(st.dropped_by_reason) == {"closed"}
            code = 0 if ok else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    record_pairs(rec, 100, 100, models)
    assert flushed(rec) == 400
    st = rec.close(10)
    assert (st.recorded, st.written, st.dropped, st.pending) == (400, 400, 0, 0)
    assert present(redis_server.url, models, 200) == 400


def test_values_orjson_refuses_are_written_as_the_thread_mode_writes_them(
    redis_server: Any,
) -> None:
    rec = Recorder.from_settings(recorder_settings(redis_server.url), KEEP_ALL)
    rec.op_finished("pm-v", "op-v", metrics={"tags": {"a"}, "big": 2**70, "nan": float("nan")})
    assert flushed(rec) == 1
    st = rec.close(10)
    assert (st.recorded, st.written, st.dropped) == (1, 1, 0)
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    metrics = client.hget(keys.op("pm-v", "op-v"), "metrics")
    client.close()
    assert metrics is not None and str(2**70) in metrics and "{'a'}" in metrics


def test_the_ring_wraps_around_and_loses_nothing(redis_server: Any) -> None:
    rec = Recorder.from_settings(recorder_settings(redis_server.url, capacity=2_000), KEEP_ALL)
    assert flusher_of(rec).ring.size == 1 << 20  # the smallest ring: 1 MiB
    models = ["pm-w"]
    for chunk in range(40):  # ≈ 4.5 MB of records: the ring wraps four times
        record_pairs(rec, chunk * 500, 500, models)
        assert flushed(rec) == (chunk + 1) * 1_000
    st = rec.close(10)
    assert (st.recorded, st.written, st.dropped, st.pending) == (40_000, 40_000, 0, 0)
    assert present(redis_server.url, models, 20_000) == 40_000


def niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def autogroup_nice(path: Path) -> int | None:
    """The niceness of the autogroup a process is in ("/autogroup-85 nice 0"), or None
    where it is in none."""
    try:
        words = path.read_text().split()
    except OSError:
        return None
    return int(words[-1]) if words else None


@pytest.mark.parametrize(
    ("caller", "caller_nice", "mine", "nice", "expected"),
    [
        ("/autogroup-85 nice 0\n", 0, "/autogroup-90 nice 0\n", 19, 19),
        ("/autogroup-85 nice -5\n", 0, "/autogroup-90 nice 0\n", 10, 5),
        ("/autogroup-85 nice 15\n", -10, "/autogroup-90 nice 0\n", 10, 19),
        ("", -10, "/autogroup-90 nice 0\n", 5, -5),  # the caller runs in the root group
        ("", -15, "/autogroup-90 nice 0\n", 0, -15),
        ("", 0, "", 19, None),  # no autogroup for us: our own nice is our weight
        ("/autogroup-85 nice x\n", 0, "/autogroup-90 nice 0\n", 19, None),
    ],
)
def test_the_flusher_group_goes_below_the_caller_or_its_group(
    caller: str, caller_nice: int, mine: str, nice: int, expected: int | None
) -> None:
    assert group_nice(caller, caller_nice, mine, nice) == expected


@pytest.mark.parametrize("nice", [19, 0])
def test_the_flusher_process_runs_niced_below_its_caller(redis_server: Any, nice: int) -> None:
    rec = Recorder.from_settings(recorder_settings(redis_server.url, flusher_nice=nice), KEEP_ALL)
    try:
        record_pairs(rec, 0, 10, ["pm-nice"])
        assert flushed(rec) == 20  # the process is past its start-up
        proc = flusher_of(rec)._proc
        assert proc is not None
        assert niceness(proc.pid) == min(19, niceness(os.getpid()) + nice)
        # Where the kernel has autogroups, the flusher's own session is a scheduling group
        # that competes with ours as an equal, so its group goes below ours too: below our
        # autogroup's niceness, or, where we are in none (our session is init's, as under
        # a CI runner), below our own niceness, which is then our weight against it.
        theirs = autogroup_nice(Path(f"/proc/{proc.pid}/autogroup"))
        if theirs is not None:
            base = autogroup_nice(Path("/proc/self/autogroup"))
            expected = (niceness(os.getpid()) if base is None else base) + nice
            assert theirs == max(-20, min(19, expected))
    finally:
        rec.close(10)


# -- the porter: record calls append locally, a thread moves them into the ring ------------


def written_within(rec: Recorder, n: int, seconds: float) -> bool:
    """Whether ``n`` records are written within ``seconds``, without a blocking flush."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if rec.stats().written >= n:
            return True
        time.sleep(0.02)
    return False


def test_a_record_call_leaves_the_ring_alone_and_flush_soon_writes_at_once(
    redis_server: Any,
) -> None:
    # The time trigger is far away: only flush_soon() can get these written in time.
    rec = Recorder.from_settings(
        recorder_settings(redis_server.url, flush_interval_s=60.0), KEEP_ALL
    )
    try:
        assert flushed(rec) == 0  # the flusher process is up
        ring = flusher_of(rec).ring
        head = ring.words[0]
        record_pairs(rec, 0, 20, ["pm-p"])
        assert ring.words[0] == head  # the calls only queued their tuples
        st = rec.stats()
        assert (st.recorded, st.pending) == (40, 40)
        rec.flush_soon()
        assert written_within(rec, 40, 10.0)
        assert ring.words[0] > head
    finally:
        st = rec.close(10)
    assert (st.recorded, st.written, st.dropped, st.pending) == (40, 40, 0, 0)
    assert present(redis_server.url, ["pm-p"], 20) == 40


def test_the_time_trigger_moves_and_writes_queued_records(redis_server: Any) -> None:
    rec = Recorder.from_settings(
        recorder_settings(redis_server.url, flush_interval_s=0.2), KEEP_ALL
    )
    try:
        record_pairs(rec, 0, 5, ["pm-t"])
        assert written_within(rec, 10, 15.0)  # the flusher process starts in about a second
    finally:
        rec.close(10)


def test_a_record_that_cannot_be_encoded_spoils_only_itself(redis_server: Any) -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text for this")

        __repr__ = __str__

    rec = Recorder.from_settings(recorder_settings(redis_server.url), KEEP_ALL)
    rec.op_accepted("pm-u", "op-1", "forward_backward", 1)
    rec.op_finished("pm-u", "op-1", metrics={"bad": Unprintable()})
    rec.op_accepted("pm-u", "op-2", "forward_backward", 1)
    assert flushed(rec) == 2
    st = rec.close(10)
    assert (st.recorded, st.written, st.dropped, st.pending) == (3, 2, 1, 0)
    assert dict(st.dropped_by_reason) == {"malformed": 1}
    assert dict(st.dropped_by_kind) == {"op_finished": 1}


def test_a_frame_of_any_other_shape_is_dropped_alone_and_the_flusher_lives_on(
    redis_server: Any,
) -> None:
    """No record call makes these frames; a bug or a stray writer could. Each is counted
    and dropped by itself, and the flusher process keeps the records around it (a frame
    of three elements once crashed it, and with it the stretch of the ring it was in)."""
    rec = Recorder.from_settings(recorder_settings(redis_server.url), KEEP_ALL)
    rec.op_accepted("pm-s", "op-1", "forward_backward", 1)
    for bad in (
        ("op_finished", "pm-s", "op-1"),  # three elements
        ("op_finished", 5),  # arguments not a list
        (7, ["pm-s"]),  # a kind that is not a string
        ("", ["not", "fields"]),  # status fields that are not a mapping
        ("no_such_kind", ["pm-s"]),
        ("op_finished", ["pm-s"]),  # a known kind, too few arguments
    ):
        rec._put(bad)  # type: ignore[arg-type]  # the shapes no record call makes
    rec.op_accepted("pm-s", "op-2", "forward_backward", 1)
    assert flushed(rec) == 2
    st = rec.close(10)
    assert (st.recorded, st.written, st.dropped, st.pending) == (8, 2, 6, 0), st
    assert dict(st.dropped_by_kind) == {"unknown": 5, "op_finished": 1}
    assert st.flusher_crashes == 0


def test_records_racing_close_are_each_written_or_counted(redis_server: Any) -> None:
    rec = Recorder.from_settings(recorder_settings(redis_server.url), KEEP_ALL)
    go = threading.Event()

    def hammer(k: int) -> None:
        go.wait()
        for i in range(4_000):
            rec.op_accepted("pm-c", f"op-{k}-{i}", "forward_backward", i // 100)

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    go.set()
    time.sleep(0.01)
    # The race is the point, not the deadline: under two CPU hogs the niced flusher
    # process once missed 10 s (records then counted "shutdown"); close returns when done.
    st = rec.close(60)
    for t in threads:
        t.join()
    after = rec.stats()
    assert after.recorded == 12_000
    assert after.recorded == after.written + after.dropped and after.pending == 0
    assert set(after.dropped_by_reason) <= {"closed"}
    assert st.written == after.written


def test_records_queued_when_the_process_exits_without_close_are_written(
    redis_server: Any, tmp_path: Path
) -> None:
    script = tmp_path / "no_close.py"
    script.write_text(
        "import sys\n"
        "from openrl_inspect.recorder import Recorder, RecorderSettings\n"
        "s = RecorderSettings(url=sys.argv[1], flusher='process', flush_interval_s=60.0,\n"
        "                     flush_at_exit=False)\n"
        "rec = Recorder.from_settings(s)\n"
        "for i in range(30):\n"
        "    rec.op_accepted('pm-x', f'op-{i}', 'forward_backward', 1)\n"
    )
    import subprocess
    import sys

    subprocess.run([sys.executable, str(script), redis_server.url], check=True, timeout=60)
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    try:
        end = time.monotonic() + 20
        while time.monotonic() < end:
            if sum(client.exists(keys.op("pm-x", f"op-{i}")) for i in range(30)) == 30:
                break
            time.sleep(0.1)
        assert sum(client.exists(keys.op("pm-x", f"op-{i}")) for i in range(30)) == 30
    finally:
        client.close()

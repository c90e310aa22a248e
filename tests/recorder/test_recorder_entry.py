"""What the record calls call in the process mode (``Outbox.entry``): the local queue's
own ``append`` while the porter runs and the calls are slow, the checked ``put`` for a
fast caller and once closed; against a real redis-server. Whichever it is, every record
is written or counted, and the queue stays bounded."""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import pytest
from openrl_inspect.recorder import Recorder, RecorderSettings, Retention
from openrl_inspect.recorder._ring import supported
from support.recorder_faults import wait_until

pytestmark = [
    pytest.mark.redis_server,
    pytest.mark.skipif(not supported(), reason="no process mode on this platform"),
]

KEEP_ALL = Retention(max_steps_per_model=1_000_000, max_sampler_batches_per_model=10_000_000)


def recorder(url: str, **overrides: Any) -> Recorder:
    values: dict[str, Any] = {
        "url": url,
        "flusher": "process",
        "capacity": 50_000,
        "batch_size": 200,
        "flush_interval_s": 0.05,
        "socket_timeout_s": 0.3,
        "connect_timeout_s": 0.3,
        "flush_at_exit": False,
    }
    values.update(overrides)
    return Recorder.from_settings(RecorderSettings(**values), KEEP_ALL)


def appends(rec: Recorder) -> bool:
    """Whether the record calls go straight to the local queue's ``append``."""
    process = rec._process
    assert process is not None, "expected the process mode"
    put: Any = rec._put
    return getattr(put, "__self__", None) is process.outbox.local


def until_appending(rec: Recorder, mid: str) -> int:
    """Calls at a trainer's pace until the porter lets them append; returns how many."""
    n, deadline = 0, time.monotonic() + 8.0
    while not appends(rec):
        assert time.monotonic() < deadline, "the record calls never appended"
        rec.op_enqueued(mid, f"op-slow-{n}")
        n += 1
        time.sleep(0.002)
    return n


def test_slow_calls_append_to_the_queue_and_every_record_is_written(redis_server: Any) -> None:
    rec = recorder(redis_server.url)
    rec.op_accepted("pe-s", "op-0", "forward_backward", 0)
    n = 1 + until_appending(rec, "pe-s")
    for i in range(600):  # batches found by the porter's looks
        rec.op_accepted("pe-s", f"op-{i}", "forward_backward", i // 100)
        if i % 5 == 0:  # about 2,000 a second: under a batch (200) per look (50 ms)
            time.sleep(0.002)
    n += 600
    assert rec.flush(30) > 0
    st = rec.stats()
    assert (st.recorded, st.written, st.dropped, st.pending) == (n, n, 0, 0)
    wait_until(lambda: not appends(rec), what="an idle caller going back to put")
    st = rec.close(10)
    assert not appends(rec)
    rec.op_accepted("pe-s", "op-late", "forward_backward", 9)
    st = rec.stats()
    assert (st.recorded, st.written, st.dropped, st.pending) == (n + 1, n, 1, 0)
    assert dict(st.dropped_by_reason) == {"closed": 1}


def test_a_fast_caller_gets_the_checked_put_and_the_queue_stays_bounded(
    redis_server: Any,
) -> None:
    capacity = 2_000
    rec = recorder(redis_server.url, capacity=capacity)
    process = rec._process
    assert process is not None
    local = process.outbox.local
    calls = until_appending(rec, "pe-f")
    state, longest = "appending", 0
    end = time.monotonic() + 3.0
    while time.monotonic() < end:  # as fast as a Python caller can call
        for _ in range(200):
            rec.sampler_batch("pe-f", 8, 512, 1024, 0.05, 3, worker_id="sampler-0")
        calls += 200
        if state == "appending" and not appends(rec):
            state = "checked"  # the porter saw a fast caller: put checks every call
        if state == "checked" and len(local) <= capacity:
            state = "bounded"  # what the unchecked appends left is gone
        if state == "bounded":
            longest = max(longest, len(local))
    assert state == "bounded", f"a fast caller is still {state}"
    assert longest <= capacity
    st = rec.close(10)
    assert st.recorded == calls and st.pending == 0
    assert st.recorded == st.written + st.dropped
    assert set(st.dropped_by_reason) <= {"full", "shed"}


@pytest.mark.parametrize("entry", ["append", "as it is"])
def test_a_forked_process_counts_its_calls_closed_whatever_the_entry(
    redis_server: Any, entry: str
) -> None:
    rec = recorder(redis_server.url)
    rec.op_accepted("pe-k", "op-0", "forward_backward", 0)
    n = 1 + (until_appending(rec, "pe-k") if entry == "append" else 0)
    with warnings.catch_warnings():  # 3.12 warns about fork() with threads running
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            for i in range(50):
                rec.op_accepted("pe-k", f"op-child-{i}", "forward_backward", 0)
            st = rec.stats()
            ok = st.recorded == st.dropped == 50 and set(st.dropped_by_reason) == {"closed"}
            code = 0 if ok and not appends(rec) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    rec.op_accepted("pe-k", "op-1", "forward_backward", 0)
    st = rec.close(10)
    assert (st.recorded, st.written, st.dropped, st.pending) == (n + 1, n + 1, 0, 0)

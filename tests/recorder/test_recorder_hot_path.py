"""The record calls' checked put (``Buffer.put``, ``Outbox.put``): against a real
redis-server, a caller as fast as Python can call keeps the queue within ``capacity``
and every record written or counted, in both flusher modes."""

from __future__ import annotations

import time
from typing import Any

import pytest
from openrl_inspect.recorder import Recorder
from openrl_inspect.recorder._ring import supported
from support.recorder_settings import KEEP_ALL, recorder_settings

pytestmark = pytest.mark.redis_server

MODES = [
    "thread",
    pytest.param(
        "process",
        marks=pytest.mark.skipif(not supported(), reason="no process mode on this platform"),
    ),
]


def queue_of(rec: Recorder) -> Any:
    process = rec._process
    return process.outbox.local if process is not None else rec._buffer.queue


@pytest.mark.parametrize("flusher", MODES)
def test_a_fast_caller_keeps_the_queue_within_capacity(redis_server: Any, flusher: str) -> None:
    capacity = 2_000
    settings = recorder_settings(redis_server.url, flusher=flusher, capacity=capacity)
    rec = Recorder.from_settings(settings, KEEP_ALL)
    assert (rec._process is not None) == (flusher == "process")
    queue, longest, calls = queue_of(rec), 0, 0
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        for i in range(100):
            rec.sampler_batch("ph-f", 8, 512, 1024, 0.05, 3, worker_id="sampler-0")
            rec.op_accepted("ph-f", f"op-{calls}-{i}", "forward_backward", 1)
        calls += 200
        longest = max(longest, len(queue))
    assert longest <= capacity
    st = rec.close(10)
    assert st.recorded == calls and st.pending == 0
    assert st.recorded == st.written + st.dropped
    assert set(st.dropped_by_reason) <= {"full", "shed"}

"""The record calls' checked put (``Buffer.put``): against a real redis-server, a caller as
fast as Python can call keeps the queue within ``capacity`` and every record written or
counted."""

from __future__ import annotations

import time
from typing import Any

import pytest
from openrl_inspect.recorder import Recorder
from support.recorder_settings import KEEP_ALL, recorder_settings

pytestmark = pytest.mark.redis_server


def test_a_fast_caller_keeps_the_queue_within_capacity(redis_server: Any) -> None:
    capacity = 2_000
    rec = Recorder.from_settings(recorder_settings(redis_server.url, capacity=capacity), KEEP_ALL)
    queue, longest, calls = rec._buffer.queue, 0, 0
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

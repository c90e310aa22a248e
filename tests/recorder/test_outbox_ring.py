"""The outbox's framing in the shared ring, without a flusher process: whatever the
record sizes and wherever the reader is, the frames read back are the records put, in
order (CI once lost records where a frame ended exactly at the ring's end)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import orjson
import pytest
from hypothesis import given, settings, strategies
from openrl_inspect.recorder._config import RecorderSettings
from openrl_inspect.recorder._outbox import Outbox
from openrl_inspect.recorder._ring import FLOW, Ring, supported

pytestmark = pytest.mark.skipif(not supported(), reason="no process mode on this platform")

SIZE = 256


@contextmanager
def outbox(size: int = SIZE) -> Iterator[Outbox]:
    ring = Ring(size)
    box = Outbox(RecorderSettings(flusher="process"), 10_000, 10_000, ring)
    try:
        yield box
    finally:
        ring.close()


def record(payload: str) -> tuple[str, tuple[str]]:
    return ("op_accepted", (payload,))


def framed(payload: str) -> int:
    return len(orjson.dumps(record(payload), option=orjson.OPT_APPEND_NEWLINE))


def read_all(box: Outbox, tail: int) -> tuple[list[list[object]], int]:
    """The frames between ``tail`` and the head, and the new tail (the reader's part)."""
    head = box.ring.words[0]
    frames = [orjson.loads(line) for line in box.ring.read(tail, head).split(b"\n") if line.strip()]
    box.ring.words[FLOW] = head  # the flusher's tail: these bytes are free again
    return frames, head


def test_a_frame_that_ends_exactly_at_the_end_is_followed_at_offset_zero() -> None:
    with outbox() as box:
        base = framed("")
        first = "a" * (SIZE // 2 - base)
        second = "b" * (SIZE - SIZE // 2 - base)
        assert framed(first) + framed(second) == SIZE
        for p in (first, second):
            box.put(record(p))
        box.port()
        frames, tail = read_all(box, 0)
        assert frames == [["op_accepted", [first]], ["op_accepted", [second]]]
        assert tail == SIZE
        box.put(record("c"))  # starts at offset 0 of the second lap
        box.port()
        assert read_all(box, tail)[0] == [["op_accepted", ["c"]]]
        assert box.stats("t").dropped == 0


@settings(max_examples=200, deadline=None)
@given(
    strategies.lists(
        strategies.tuples(
            # frames of 23 - 64 bytes, often 32 or 64: some end exactly at the ring's end
            strategies.one_of(
                strategies.sampled_from([9, 41]), strategies.integers(min_value=0, max_value=41)
            ),
            strategies.booleans(),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_frames_read_back_are_the_records_put_in_order(puts: list[tuple[int, bool]]) -> None:
    """Random sizes, the reader catching up at random points: nothing lost or reordered.
    The ring always has room here: at most two frames of at most a quarter of it are
    unread, plus a gap before its end."""
    with outbox() as box:
        tail, got, sent = 0, [], []
        for i, (length, read_now) in enumerate(puts):
            payload = f"{i:02d}" + "x" * length
            sent.append(["op_accepted", [payload]])
            box.put(record(payload))
            box.port()
            if read_now or i % 2:
                frames, tail = read_all(box, tail)
                got += frames
        got += read_all(box, tail)[0]
        assert got == sent
        assert box.stats("t").dropped == 0

"""The shared ring between a recorder and its flusher process, and the counters it reports.

One anonymous shared file (``memfd``), mapped by both processes:

- a data region of ``size`` bytes holding records as newline-terminated JSON
  (``orjson.dumps((kind, args))``; JSON never holds a raw newline). The caller writes at
  ``head``, the flusher reads up to ``head`` from ``tail``; both are absolute byte
  positions (``% size`` to index). A record never wraps: one that does not fit before
  the end is written at offset 0 and the gap is filled with spaces (JSON whitespace);
- ``head`` (written by the caller only) in the header's first word;
- two counter slots written by the flusher only, alternately: it fills the slot that is
  not current, then bumps ``generation`` (current slot = ``generation % 2``). A reader
  copies the current slot and checks that ``generation`` did not move, so it always
  sees one whole snapshot, also after the flusher died mid-update.

A single 8-byte aligned store is not torn on the platforms the process mode is used on
(x86-64, whose stores and loads are not reordered with each other, see ``supported``).
"""

from __future__ import annotations

import array
import mmap
import os
import platform
import tempfile
from dataclasses import dataclass, field

from openrl_inspect.recorder._writes import WRITES

# "unknown": a frame the flusher process could not decode (counted, never expected)
KINDS: tuple[str, ...] = (*WRITES, "unknown")
KIND_INDEX = {k: i for i, k in enumerate(KINDS)}
# Reasons a record is dropped after it entered the ring (counted by the flusher process,
# or by the recorder for a flusher process that died or missed the close deadline).
LATE_REASONS = ("invalid", "rejected", "shutdown", "lost")

_HEADER = 16_384
_GEN = 8  # word index of the generation counter
FLOW = 16  # word index of tail, taken, settled, batched
# The recorder's drops at the door, per (reason, kind), written by the recorder only
# (the flusher process publishes them to Redis with its own counters).
DOOR_REASONS = ("full", "shed", "closed", "malformed")
DOOR = 64
_SLOTS = (1024, 8192)  # byte offsets of the two slots
_ERR_BYTES = 64
# slot words: tail, taken, written, retried, batches, failures, connected, then per kind
# taken, written, then per (late reason, kind) dropped; then the last error's name.
_FIXED = 7
_NK = len(KINDS)
_WORDS = _FIXED + 2 * _NK + len(LATE_REASONS) * _NK


def door_word(reason: str, kind: str) -> int:
    return DOOR + DOOR_REASONS.index(reason) * _NK + KIND_INDEX[kind]


def door_drops(words: memoryview) -> dict[tuple[str, str], int]:
    """The recorder's drops at the door, as ``Buffer.dropped`` keys them."""
    out = {}
    for r in DOOR_REASONS:
        for kind in KINDS:
            n = words[door_word(r, kind)]
            if n:
                out[(r, kind)] = n
    return out


def supported() -> bool:
    """Whether the process mode's shared memory works here (see the module docstring)."""
    return os.name == "posix" and platform.machine().lower() in ("x86_64", "amd64")


@dataclass
class Counters:
    """One slot: what the flusher process has taken from the ring and settled."""

    tail: int = 0
    taken: int = 0
    written: int = 0
    retried: int = 0
    batches: int = 0
    failures: int = 0
    connected: bool | None = None
    taken_by_kind: list[int] = field(default_factory=lambda: [0] * _NK)
    written_by_kind: list[int] = field(default_factory=lambda: [0] * _NK)
    # (late reason, kind index) -> records
    dropped: dict[tuple[str, int], int] = field(default_factory=dict)
    last_error: str | None = None

    @property
    def settled(self) -> int:
        return self.written + sum(self.dropped.values())

    def unsettled_by_kind(self) -> dict[str, int]:
        """Records taken from the ring and neither written nor dropped, by kind."""
        out: dict[str, int] = {}
        for k, kind in enumerate(KINDS):
            n = self.taken_by_kind[k] - self.written_by_kind[k]
            n -= sum(v for (_, i), v in self.dropped.items() if i == k)
            if n:
                out[kind] = n
        return out


class Ring:
    """The shared file, mapped; ``fd`` is handed to the flusher process."""

    def __init__(self, size: int, fd: int | None = None) -> None:
        self.size = size
        if fd is None:
            fd = _anonymous_file(_HEADER + size)
        self.fd = fd
        self._map = mmap.mmap(fd, _HEADER + size)
        mv = memoryview(self._map)
        self.header = mv[:_HEADER]
        # head at 0 (the caller's); the flusher's: generation at _GEN, and for flow
        # control tail, taken and settled at _FLOW (also in the slot)
        self.words = mv[:1024].cast("q")
        self.data = mv[_HEADER:]

    def close(self) -> None:
        self.words.release()
        self.header.release()
        self.data.release()
        self._map.close()
        os.close(self.fd)

    # -- the data region -------------------------------------------------------------------

    def read(self, tail: int, head: int) -> bytes:
        """The bytes between two absolute positions (at most ``size``)."""
        a, b = tail % self.size, head % self.size
        if head == tail:
            return b""
        if a < b:
            return bytes(self.data[a:b])
        return bytes(self.data[a:]) + bytes(self.data[:b])

    # -- the counter slots ------------------------------------------------------------------

    def load(self) -> Counters:
        """The current slot, as one consistent snapshot."""
        while True:
            gen = self.words[_GEN]
            start = _SLOTS[gen % 2]
            raw = bytes(self.header[start : start + 8 * _WORDS + _ERR_BYTES])
            if self.words[_GEN] == gen:
                return _decode(raw)

    def store(self, c: Counters, batched: int | None = None) -> None:
        """Write ``c`` into the slot that is not current, then make it current.

        ``batched``: records taken into batches (in flight or settled), for the door.
        """
        gen = self.words[_GEN]
        start = _SLOTS[(gen + 1) % 2]
        raw = _encode(c)
        self.header[start : start + len(raw)] = raw
        self.words[_GEN] = gen + 1
        w = self.words
        w[FLOW], w[FLOW + 1], w[FLOW + 2] = c.tail, c.taken, c.settled
        w[FLOW + 3] = c.settled if batched is None else batched


def _anonymous_file(n: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("openrl-recorder", 0)
    else:  # another POSIX system: an unlinked temporary file
        with tempfile.TemporaryFile() as f:
            fd = os.dup(f.fileno())
    os.ftruncate(fd, n)
    return fd


def _encode(c: Counters) -> bytes:
    connected = -1 if c.connected is None else int(c.connected)
    words = [c.tail, c.taken, c.written, c.retried, c.batches, c.failures, connected]
    words += c.taken_by_kind + c.written_by_kind
    words += [c.dropped.get((r, k), 0) for r in LATE_REASONS for k in range(_NK)]
    err = (c.last_error or "").encode("ascii", "replace")[:_ERR_BYTES]
    return array.array("q", words).tobytes() + err.ljust(_ERR_BYTES, b"\0")


def _decode(raw: bytes) -> Counters:
    words = array.array("q")
    words.frombytes(raw[: 8 * _WORDS])
    err = raw[8 * _WORDS :].rstrip(b"\0").decode("ascii", "replace") or None
    tail, taken, written, retried, batches, failures, connected = words[:_FIXED]
    at = _FIXED
    taken_k = list(words[at : at + _NK])
    written_k = list(words[at + _NK : at + 2 * _NK])
    at += 2 * _NK
    dropped: dict[tuple[str, int], int] = {}
    for r in LATE_REASONS:
        for k in range(_NK):
            if words[at]:
                dropped[(r, k)] = words[at]
            at += 1
    return Counters(
        tail,
        taken,
        written,
        retried,
        batches,
        failures,
        None if connected < 0 else bool(connected),
        taken_k,
        written_k,
        dropped,
        err,
    )

"""What both flushers share: building the client, the constructor, flush bookkeeping."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, Self, TypeVar

from openrl_inspect.recorder._buffer import log
from openrl_inspect.recorder._calls import RecorderBase
from openrl_inspect.recorder._config import RecorderSettings, Retention, WorkerInfo
from openrl_inspect.recorder._connect import client_spec
from openrl_inspect.recorder._outbox import Outbox
from openrl_inspect.recorder._process import ProcessFlusher, process_mode
from openrl_inspect.recorder._ring import Ring

C = TypeVar("C")


class ClientRecorder(RecorderBase, Generic[C]):
    """What both flushers share: the constructor, the client, the flush bookkeeping.

    A subclass builds its own client (``_new_client``) and flusher (``_init_flusher``).
    """

    def __init__(
        self,
        client: C | None = None,
        retention: Retention | None = None,
        *,
        settings: RecorderSettings | None = None,
        batch_size: int | None = None,
        capacity: int | None = None,
        worker: WorkerInfo | None = None,
        clock: Callable[[], float] = time.time,
        start: bool = True,
    ) -> None:
        super().__init__(
            retention,
            settings=settings,
            batch_size=batch_size,
            capacity=capacity,
            worker=worker,
            clock=clock,
        )
        self._owns_client = client is None
        self._process = self._init_process(client, start)
        self._init_flusher(client, start)

    def _init_process(self, client: C | None, start: bool) -> ProcessFlusher | None:
        """A flusher process, if the settings and the client allow one."""
        spec = client_spec(client)
        if not process_mode(self.settings, spec) or spec is None:
            return None
        ring = Ring(ProcessFlusher.ring_size(self.settings, self.capacity))
        outbox = Outbox(self.settings, self.batch_size, self.capacity, ring)
        try:
            process = ProcessFlusher(
                self.settings, self.retention, self.worker, self.recorder_id, spec, outbox, start
            )
        except Exception:
            log.exception("recorder: the flusher process did not start; a thread flushes")
            ring.close()
            return None
        self._attach(outbox)
        return process

    def _init_flusher(self, client: C | None, start: bool) -> None:
        """Set up the flusher (``self._process`` if there is one), with ``client`` or
        (None) a client of its own."""
        raise NotImplementedError

    @classmethod
    def from_settings(
        cls,
        settings: RecorderSettings,
        retention: Retention | None = None,
        *,
        worker: WorkerInfo | None = None,
        start: bool = True,
    ) -> Self:
        return cls(None, retention, settings=settings, worker=worker, start=start)

    def _flush_mark(self, timeout_s: float | None) -> tuple[int, int, float]:
        """What a flush waits for: (records to settle, written before, deadline)."""
        timeout = self.settings.flush_timeout_s if timeout_s is None else timeout_s
        door = self._door
        if isinstance(door, Outbox):
            door.port()  # what the record calls queued, into the ring: the flush sees it
            return door.count, door.counters().written, time.monotonic() + timeout
        buf = self._buffer
        with buf.lock:
            target = buf.taken + len(buf.queue)
            before = buf.written
        return target, before, time.monotonic() + timeout

    def _written_since(self, before: int) -> int:
        if isinstance(self._door, Outbox):
            return self._door.counters().written - before
        with self._buffer.lock:
            return self._buffer.written - before

    def _close_deadline(self, timeout_s: float | None) -> float:
        timeout = self.settings.close_timeout_s if timeout_s is None else timeout_s
        return time.monotonic() + timeout

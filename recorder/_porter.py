"""The porter: the thread that moves the process mode's local queue into the shared ring,
and picks what the record calls call while it runs.

It moves the queue every ``flush_interval_s``, when a batch is waiting, at
``flush_soon()`` (then it also wakes the flusher process) and when ``Outbox.put`` asks.
While the record calls come steadily but slower than a batch per look, they append to
the queue directly (``Outbox.choose_entry``) and the porter looks at the queue every
``POLL_S``: a look finds a batch in time, and the queue cannot outgrow a look's worth of
calls. A caller faster than that, or idle for an interval, gets ``put`` again, which
asks for the moves itself; the porter then looks once an interval, so that an idle
process is not woken 20 times a second.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openrl_inspect.recorder._outbox import Outbox

log = logging.getLogger("openrl_inspect.recorder")

# How often the porter looks at the local queue while the calls append to it unchecked.
# The most records it can hold beyond a batch is a look's worth of calls (about 125,000
# at the fastest a Python caller makes them). A look costs the porter thread about
# 0.1 ms of CPU (a wake-up on this VM): 20 a second are 2 - 3 ms/s, against the 1 - 4 us
# each record call saves (docs/benchmarks.md, issue 17, sixth pass).
POLL_S = 0.05


class Porter:
    """One outbox's porter thread."""

    def __init__(self, box: Outbox, interval: float) -> None:
        self._box = box
        self._interval = interval
        self._ev = threading.Event()
        self._thread: threading.Thread | None = None
        self.asked = False  # a move asked by ``put`` (a batch is waiting), not done yet
        self._nudged = False  # flush_soon: wake the flusher process after the move
        self.stopping = False

    def start(self) -> None:
        """Start the thread (idempotent)."""
        if self._thread is None and not self.stopping:
            self._thread = threading.Thread(
                target=self._run, name="openrl-recorder-porter", daemon=True
            )
            self._thread.start()

    def ask(self) -> None:
        """From ``put``: a batch is waiting (once until the next move)."""
        if not self.asked:
            self.asked = True
            self._ev.set()

    def nudge(self) -> None:
        """Move now and wake the flusher process (``flush_soon``); returns at once."""
        self._nudged = True
        self._ev.set()

    def stop(self) -> None:
        self.stopping = True
        self._ev.set()

    def forget(self) -> None:
        """In a forked process: the thread did not survive the fork; none is started."""
        self._thread = None
        self.stopping = True

    def _run(self) -> None:
        box, interval = self._box, self._interval
        poll = min(interval, POLL_S)
        now = time.monotonic()
        next_move, seen, seen_at, active_at = now + interval, box.seen(), now, -interval
        wait = interval
        while not self.stopping:
            self._ev.wait(wait)
            self._ev.clear()
            if self.stopping:
                return
            try:
                now = time.monotonic()
                nudged, self._nudged = self._nudged, False
                due = nudged or self.asked or now >= next_move
                if due or len(box.local) >= box.batch_size:
                    if box.port() or nudged:
                        box.wake()
                    if due:
                        next_move = now + interval
                now = time.monotonic()  # a move may have taken a while
                if now - seen_at >= poll:  # a rate over a look at least (asks come sooner)
                    was, seen = seen, box.seen()
                    if seen != was:
                        active_at = now
                    # slower than a batch per look, and not idle for a whole interval
                    slow = (seen - was) * poll < box.batch_size * (now - seen_at)
                    appending = slow and now - active_at < interval
                    box.choose_entry(appending)
                    seen_at = now
                    # idle or fast: ``put`` asks for the moves, a look per interval will do
                    wait = max(0.0, min(poll, next_move - now)) if appending else interval
            except Exception:  # the porter must outlive anything
                log.exception("recorder: moving records into the ring failed")

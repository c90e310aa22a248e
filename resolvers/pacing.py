"""Keeping the event loop free while one request judges many models.

The diagnosis is pure computation over gathered evidence: a request that judges
thousands of models would run it all on the event loop, and every other request (and
``/healthz``, a liveness probe) would wait behind it. ``off_loop`` runs such a piece on
one worker thread shared by the process: the loop answers others meanwhile, and pieces
still queued when their request is cancelled (past its deadline) never run, so a late
request stops its work, not only its answer. One worker, not many: the pieces hold the
GIL, and each thread more would take a share of it from the loop.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


@functools.cache
def _worker() -> ThreadPoolExecutor:
    # Made on first use, not at import: nothing starts a thread until a request needs it.
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="openrl-inspect-judge")


async def off_loop(work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)`` on the judging thread; cancelling the caller cancels it
    if it has not started."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_worker(), functools.partial(work, *args, **kwargs))

"""Stopping the work of a client that went away.

``unless_disconnected`` runs a request's work beside a watch on its ASGI ``receive``:
when ``http.disconnect`` arrives first, the work is cancelled (its pooled connections,
admission slot and CPU freed) and the caller learns there is nobody to answer. A shared
execution (``single_flight``) is cancelled only when no other request still waits for
it: the cancellation reaches this request's wait, not the work others need.

The body must have been read before the watch starts: the watch consumes what
``receive`` gives.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from openrl_inspect.core.errors import ClientDisconnected
from starlette.types import Receive

T = TypeVar("T")


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(receive: Receive, work: Awaitable[T]) -> T:
    """``work``'s result, or ``ClientDisconnected`` once the client has gone (``work``
    cancelled and awaited, so its clean-up has run)."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_until_disconnect(receive))
    try:
        await asyncio.wait((task, watch), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        watch.cancel()
        raise
    watch.cancel()
    await asyncio.wait((watch,))
    if not watch.cancelled():
        # A receive that failed counts as a client gone; its exception is retrieved
        # here, not left for the loop to log.
        watch.exception()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    raise ClientDisconnected

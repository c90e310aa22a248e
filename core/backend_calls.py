"""Timing backend calls for the inspector's own metrics, without the adapters knowing
who counts.

Adapters wrap each round trip in ``timed(backend)``; whoever wants the figures sets an
observer for the current context (``observing``): the app's metrics middleware does it
per request and the lifespan does it for the background work it starts (the watch
cache's LISTs), so each app counts into its own registry and a process with several
apps (the tests) never mixes them. With no observer set, ``timed`` costs one context
variable lookup.

The outcome is ``ok``, the ``BackendError`` code (``BACKEND_TIMEOUT`` ...), ``cancelled``
(the request's deadline) or ``error`` for anything else: a fixed vocabulary, so the
metrics' label values stay bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar, Token
from typing import Protocol

from openrl_inspect.core.errors import BackendError

#: The outcomes that are not a ``BackendError`` code.
OUTCOMES = ("ok", "cancelled", "error")


class CallObserver(Protocol):
    def backend_call(self, backend: str, outcome: str, seconds: float) -> None: ...


_observer: ContextVar[CallObserver | None] = ContextVar("openrl_inspect_calls", default=None)


def observing(observer: CallObserver | None) -> Token[CallObserver | None]:
    """Send this context's (and its child tasks') calls to ``observer``."""
    return _observer.set(observer)


def stop_observing(token: Token[CallObserver | None]) -> None:
    _observer.reset(token)


@contextlib.contextmanager
def timed(backend: str) -> Iterator[None]:
    """Time one call to ``backend`` and report it with its outcome, if anyone listens."""
    observer = _observer.get()
    if observer is None:
        yield
        return
    started = time.perf_counter()
    outcome = "error"
    try:
        yield
        outcome = "ok"
    except BackendError as exc:
        outcome = exc.code
        raise
    except asyncio.CancelledError:
        outcome = "cancelled"
        raise
    finally:
        observer.backend_call(backend, outcome, time.perf_counter() - started)

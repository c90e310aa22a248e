"""Serving the app with uvicorn, with bounds on slow and idle clients.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but starts
that timer only after a first response and restarts it on every byte, so a client that
connects and never sends, or sends its headers a byte at a time, holds a connection
for as long as it likes. ``GuardedH11Protocol`` gives the request line and headers a
deadline from the moment the connection opens (or the previous response ends) that
arriving bytes do not extend. The body has its own deadline in ``RequestGuard``.

Once started (the app's lifespan has opened the backends), the garbage collector is
tuned and run between requests (``web.collector``).
"""

from __future__ import annotations

import asyncio
import gc
import socket
from typing import Any

import h11
import uvicorn
from openrl_inspect.web.collector import GcSettings, IdleCollector, tune_gc
from openrl_inspect.web.guard import HttpSettings
from uvicorn.protocols.http.h11_impl import H11Protocol


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose headers are late."""

    header_timeout_s = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's own
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def protocol(header_timeout_s: float) -> type[GuardedH11Protocol]:
    return type("Protocol", (GuardedH11Protocol,), {"header_timeout_s": header_timeout_s})


class _Server(uvicorn.Server):
    gc_settings = GcSettings()
    _collector: asyncio.Task[None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        tune_gc(self.gc_settings)
        if self.gc_settings.idle:
            # uvicorn's own set of the request tasks in flight: empty between requests.
            state = self.server_state
            collector = IdleCollector(self.gc_settings, lambda: bool(state.tasks))
            self._collector = asyncio.create_task(collector.run())

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._collector is not None:
            self._collector.cancel()
            gc.enable()
        await super().shutdown(sockets=sockets)


def serve(
    app: Any,
    host: str,
    port: int,
    log_level: str,
    http: HttpSettings,
    gc_settings: GcSettings | None = None,
) -> None:
    """Run ``app`` until interrupted; logging is already configured (``jsonlog``)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        log_config=None,
        # RequestGuard writes one JSON line per request, with more in it.
        access_log=False,
        http=protocol(http.header_timeout_s),
        timeout_keep_alive=max(1, round(http.keep_alive_s)),
        h11_max_incomplete_event_size=http.max_header_bytes,
    )
    runner = _Server(config)
    runner.gc_settings = gc_settings or GcSettings()
    runner.run()

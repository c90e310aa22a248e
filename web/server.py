"""Serving the app with uvicorn, with bounds on slow and idle clients.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but starts
that timer only after a first response and restarts it on every byte, so a client that
connects and never sends, or sends its headers a byte at a time, holds a connection
for as long as it likes. ``GuardedH11Protocol`` gives the request line and headers a
deadline from the moment the connection opens (or the previous response ends) that
arriving bytes do not extend. The body has its own deadline in ``RequestGuard``.

It also reads each request's head before h11 does, whatever the packet boundaries
(h11's size limit holds only for a head that arrives in pieces), and answers, closing
the connection: 431 for a head past ``max_header_bytes`` or ``max_headers`` lines; 400
for a bare LF line ending, and for both ``Content-Length`` and ``Transfer-Encoding``
(RFC 9112 6.3: the framing is ambiguous, a smuggling vector, and the connection must
close).

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

_REFUSALS = {
    431: b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
    400: b"HTTP/1.1 400 Bad Request\r\n",
}


def head_problem(head: bytes, max_headers: int) -> int | None:
    """The status a complete request head (up to its blank line) is refused with."""
    lines = head.split(b"\n")
    if any(not line.endswith(b"\r") for line in lines[:-1]):
        return 400  # a bare LF: h11 takes it, a proxy in front may split differently
    if len(lines) - 2 > max_headers:
        return 431
    names = {line.split(b":", 1)[0].strip().lower() for line in lines[1:]}
    if b"content-length" in names and b"transfer-encoding" in names:
        return 400
    return None


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose headers are late, too large or
    ambiguous."""

    header_timeout_s = 10.0
    max_header_bytes = 16384
    max_headers = 100
    _header_timer: asyncio.TimerHandle | None = None
    _head: bytes = b""

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
        if self.conn.their_state is h11.IDLE and not self._head_allowed(data):
            return
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()
            self._head = b""

    def _head_allowed(self, data: bytes) -> bool:
        """Reads the head as it arrives; false when it was refused."""
        seen = self._head + data
        end = seen.find(b"\n\r\n")
        bare = seen.find(b"\n\n")
        ends = [i for i in (end, bare) if i >= 0]
        if not ends:
            if len(seen) > self.max_header_bytes:
                return self._refuse(431)
            self._head = seen
            return True
        head = seen[: min(ends) + 1]
        status = 431 if len(head) > self.max_header_bytes else head_problem(head, self.max_headers)
        if status is not None:
            return self._refuse(status)
        self._head = b""
        return True

    def _refuse(self, status: int) -> bool:
        self._head = b""
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(
                _REFUSALS[status] + b"content-length: 0\r\nconnection: close\r\n\r\n"
            )
            self.transport.close()
        return False

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def protocol(http: HttpSettings) -> type[GuardedH11Protocol]:
    bounds = {
        "header_timeout_s": http.header_timeout_s,
        "max_header_bytes": http.max_header_bytes,
        "max_headers": http.max_headers,
    }
    return type("Protocol", (GuardedH11Protocol,), bounds)


class Server(uvicorn.Server):
    """uvicorn's server with the collector as `serve` runs it (``web.collector``)."""

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
        http=protocol(http),
        timeout_keep_alive=max(1, round(http.keep_alive_s)),
        h11_max_incomplete_event_size=http.max_header_bytes,
    )
    runner = Server(config)
    runner.gc_settings = gc_settings or GcSettings()
    runner.run()

"""The HTTP front of the API: every request gets an id, a bounded body and a log line.

``RequestGuard`` is plain ASGI middleware in front of the routes. It

- gives each request an id (the caller's ``X-Request-ID`` when it is short and plain,
  else a new one), sent back in ``X-Request-ID``;
- reads a request body while it streams, refusing it once it passes
  ``HttpSettings.max_body_bytes`` (413) or takes longer than ``body_timeout_s`` (408),
  so an oversized or slow body never sits whole in memory;
- writes one JSON line per request (``openrl_inspect.request``): id, method, path,
  status, duration, operation name, error codes, and the principal (or why none was
  admitted) that the authentication middleware sets.

Every refusal is JSON: ``{"errors": [{"message": ..., "extensions": {"code": ...}}]}``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from dataclasses import dataclass

from openrl_inspect.core.errors import BodyTooLarge, RequestRefused, RequestTimeout
from openrl_inspect.core.responses import refused
from openrl_inspect.telemetry.records import RECORD, RequestRecord, unanswered
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("openrl_inspect.request")

_CLIENT_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


@dataclass(frozen=True)
class HttpSettings:
    """The HTTP front. Env prefix ``OPENRL_INSPECT_HTTP_``."""

    max_body_bytes: int = 1 << 20
    # The whole body must arrive within this many seconds of the headers.
    body_timeout_s: float = 10.0
    # The request line and headers must arrive within this many seconds.
    header_timeout_s: float = 10.0
    # An idle keep-alive connection is closed after this many seconds.
    keep_alive_s: float = 5.0
    # Request line and headers together, in bytes, and the number of header lines:
    # past either, 431 and the connection closed (web/server.py), however they arrive.
    max_header_bytes: int = 16384
    max_headers: int = 100
    max_json_depth: int = 64
    # Origins a browser may call the API from; none by default (CORS closed).
    cors_origins: tuple[str, ...] = ()


class RequestGuard:
    def __init__(self, app: ASGIApp, settings: HttpSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        offered = headers.get("x-request-id", "")
        record = RequestRecord(offered if _CLIENT_ID.fullmatch(offered) else uuid.uuid4().hex)
        scope[RECORD] = record
        status: int | None = None
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", record.id.encode()),
                ]
            await send(message)

        try:
            await self._handle(scope, receive, send_with_id, headers, record)
        finally:
            log.info(
                "request",
                extra={
                    "request_id": record.id,
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": unanswered(record) if status is None else status,
                    "duration_ms": round((time.perf_counter() - started) * 1e3, 1),
                    "operation": record.operation,
                    "codes": sorted(set(record.codes)),
                    "principal": record.principal,
                    "auth_failure": record.auth_failure,
                },
            )

    async def _handle(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers, record: RequestRecord
    ) -> None:
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        try:
            body = await self._read(headers, receive)
        except RequestRefused as exc:
            record.codes.append(exc.code)
            # The rest of an unread body is not worth reading: close the connection.
            await refused(exc, {"connection": "close"})(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, headers: Headers, receive: Receive) -> bytes:
        limit = self.settings.max_body_bytes
        too_large = BodyTooLarge(f"The request body is larger than {limit} bytes.")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.settings.body_timeout_s):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        break
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        raise too_large
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            raise RequestTimeout(
                f"The request body did not arrive within {self.settings.body_timeout_s:g} s."
            ) from None
        return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect, when it comes

    return replay

"""A raw ASGI client that sends its request, then disconnects when told to: a client
that goes away before its answer, which httpx cannot play."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import ASGIApp, Message


class GoneClient:
    """Sends ``body`` to ``path`` (``path?query`` for a GET), then receives
    ``http.disconnect`` once ``gone`` is set; what the app sent is in ``sent``."""

    def __init__(self, path: str, body: bytes = b"", token: str | None = None) -> None:
        self.path = path
        self.body = body
        self.token = token
        self.gone = asyncio.Event()
        self.sent: list[Message] = []

    def scope(self) -> dict[str, Any]:
        path, _, query = self.path.partition("?")
        headers = [
            (b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
            (b"content-length", str(len(self.body)).encode()),
        ]  # fmt: skip
        if self.token is not None:
            headers.append((b"authorization", f"Bearer {self.token}".encode()))
        return {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST" if self.body else "GET", "scheme": "http", "path": path,
            "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
            "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 5000), "headers": headers,
        }  # fmt: skip

    async def call(self, app: ASGIApp) -> None:
        messages: list[Message] = [{"type": "http.request", "body": self.body}]

        async def receive() -> Message:
            if messages:
                return messages.pop(0)
            await self.gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            self.sent.append(message)

        await app(self.scope(), receive, send)

"""A local Cloud Logging that speaks the REST wire format of ``entries:list``.

``POST /v2/entries:list`` takes ``{resourceNames, filter, orderBy, pageSize,
pageToken}`` and answers ``{entries: [LogEntry...], nextPageToken}`` (both keys left
out when empty, as the service does). The filter is really applied, by the evaluator
of the subset the adapter writes; a filter outside it is a 400 INVALID_ARGUMENT, as is
a page token from another query. Errors use Google's JSON error body.

Knobs for tests: ``fail_status`` (answer every request with that HTTP status),
``delay_s`` (hold each request that long, released at once on stop), ``trickle_s``
(send the answer one byte per that many seconds, so no single read ever times out),
``garbage``
(answer 200 with a body that is not JSON), ``max_page_entries`` (serve short pages
like the service does), and ``request_count`` / ``requests`` / ``issued_tokens`` to see what was asked and
answered.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from openrl_inspect.adapters.logs._filter_eval import compile_filter
from openrl_inspect.adapters.logs._paging import sort_key
from openrl_inspect.core.errors import FilterSyntaxError

_DEFAULT_PAGE_SIZE = 50
_MAX_PAGE_SIZE = 1000
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class _ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class FakeCloudLogging:
    """The fake service; ``start()`` binds a free loopback port, ``stop()`` frees it."""

    def __init__(self, project: str = "fake-project") -> None:
        self.project = project
        self.entries: list[dict[str, Any]] = []
        self.fail_status: int | None = None
        self.delay_s = 0.0
        self.garbage = False
        self.trickle_s: float | None = None
        self.max_page_entries: int | None = None
        self.requests: list[dict[str, Any]] = []
        self.issued_tokens: list[str] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def start(self) -> FakeCloudLogging:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes; with Nagle on, each answer on a
            # kept-alive connection would wait for a delayed ACK (~40 ms).
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                fake._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._released.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()  # slow requests end now
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def add(self, *entries: Mapping[str, Any]) -> None:
        self.entries.extend(dict(entry) for entry in entries)

    # ------------------------------------------------------------------- serving

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        with self._lock:
            self.requests.append(
                body if isinstance(body, dict) else {"invalid": raw.decode(errors="replace")}
            )
        if self.delay_s:
            self._released.wait(self.delay_s)
        if handler.path.split("?")[0] != "/v2/entries:list":
            self._send_error(handler, 404, "no such method")
            return
        if self.fail_status is not None:
            self._send_error(handler, self.fail_status, "failing on purpose")
            return
        if self.garbage:
            self._send(handler, 200, b"<html>not json</html>", "text/html")
            return
        try:
            answer = self._list(body)
        except _ApiError as exc:
            self._send_error(handler, exc.status, exc.message)
            return
        self._send(handler, 200, json.dumps(answer).encode(), "application/json")

    def _list(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _ApiError(400, "the request body is not a JSON object")
        if body.get("resourceNames") != [f"projects/{self.project}"]:
            raise _ApiError(404, "unknown resource")
        filter_ = body.get("filter", "")
        order = body.get("orderBy", "timestamp asc")
        if order not in ("timestamp asc", "timestamp desc"):
            raise _ApiError(400, "invalid orderBy")
        size = body.get("pageSize", _DEFAULT_PAGE_SIZE)
        if not isinstance(size, int) or size < 1:
            raise _ApiError(400, "invalid pageSize")
        size = min(size, _MAX_PAGE_SIZE, self.max_page_entries or _MAX_PAGE_SIZE)
        try:
            matches = compile_filter(filter_) if filter_ else (lambda _e: True)
        except FilterSyntaxError as exc:
            raise _ApiError(400, f"invalid filter: {exc}") from None
        query_print = hashlib.sha256(f"{order}\n{filter_}".encode()).hexdigest()[:16]
        offset = self._offset(body.get("pageToken"), query_print)
        rows = sorted(
            (entry for entry in list(self.entries) if matches(entry)),
            key=sort_key,
            reverse=order == "timestamp desc",
        )
        page = rows[offset : offset + size]
        answer: dict[str, Any] = {}
        if page:
            answer["entries"] = page
        if offset + size < len(rows):
            token = json.dumps({"o": offset + size, "q": query_print}).encode()
            answer["nextPageToken"] = base64.urlsafe_b64encode(token).decode()
            with self._lock:
                self.issued_tokens.append(answer["nextPageToken"])
        return answer

    @staticmethod
    def _offset(token: Any, query_print: str) -> int:
        if token is None:
            return 0
        try:
            body = json.loads(base64.urlsafe_b64decode(str(token)))
        except ValueError:
            raise _ApiError(400, "invalid page token") from None
        if (
            not isinstance(body, dict)
            or body.get("q") != query_print
            or not isinstance(body.get("o"), int)
        ):
            raise _ApiError(400, "page token does not match the request")
        return int(body["o"])

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, payload: bytes, content_type: str
    ) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            if self.trickle_s is None:
                handler.wfile.write(payload)
                return
            for i in range(len(payload)):
                if self._released.wait(self.trickle_s):
                    handler.close_connection = True
                    return
                handler.wfile.write(payload[i : i + 1])
        except OSError:
            pass  # the client gave up (a timeout test); nothing to tell it

    def _send_error(self, handler: BaseHTTPRequestHandler, status: int, message: str) -> None:
        reason = _STATUS_NAMES.get(status, HTTPStatus(status).phrase.upper().replace(" ", "_"))
        body = {"error": {"code": status, "message": message, "status": reason}}
        self._send(handler, status, json.dumps(body).encode(), "application/json")


@pytest.fixture
def fake_cloud_logging() -> Iterator[FakeCloudLogging]:
    fake = FakeCloudLogging().start()
    try:
        yield fake
    finally:
        fake.stop()

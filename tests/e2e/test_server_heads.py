"""A request's head, sent in one write to the real server (uvicorn on a socket): too
many or too large headers are 431, an ambiguous framing (Content-Length with
Transfer-Encoding) and bare LF line endings are 400, and the connection is closed."""

from __future__ import annotations

import socket
import subprocess

import pytest
from e2e.test_server_limits import server

__all__ = ["server"]  # the demo on a socket, as the slow-client tests start it


def _answer(port: int, request: bytes) -> bytes:
    """Everything the server sends for ``request`` sent in one write, until it closes
    the connection (a kept-open connection fails the read's timeout)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(5)
        sock.sendall(request)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
        return out


HEAD = b"GET /api/v1/inspect/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (HEAD + b"".join(b"X-H%d: v\r\n" % i for i in range(10_000)) + b"\r\n", b"431"),
        (HEAD + b"X-Big: " + b"a" * 100_000 + b"\r\n\r\n", b"431"),
        (
            b"POST /api/v1/inspect/graphql HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"400",
        ),
        (b"GET /api/v1/inspect/healthz HTTP/1.1\nHost: 127.0.0.1\n\n", b"400"),
    ],
    ids=["many-headers", "one-huge-header", "content-length-and-chunked", "bare-lf"],
)
def test_a_bad_head_in_one_write_is_refused_and_the_connection_closed(
    server: tuple[int, subprocess.Popen[str]], request_bytes: bytes, status: bytes
) -> None:
    port, _ = server
    answer = _answer(port, request_bytes)
    assert answer.split(b" ", 2)[1] == status, answer[:200]


def test_a_plain_head_is_still_answered(server: tuple[int, subprocess.Popen[str]]) -> None:
    port, _ = server
    answer = _answer(port, HEAD + b"Connection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]

"""Slow and idle clients against the real server (uvicorn on a socket), and its logs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from support.ports import free_port, wait_for_port

LIMITS = {
    "OPENRL_INSPECT_HTTP_HEADER_TIMEOUT_S": "1",
    "OPENRL_INSPECT_HTTP_KEEP_ALIVE_S": "1",
    "OPENRL_INSPECT_HTTP_BODY_TIMEOUT_S": "1",
    "OPENRL_INSPECT_HTTP_MAX_BODY_BYTES": "65536",
    "OPENRL_INSPECT_DEMO_TICK_S": "60",
}


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[int, subprocess.Popen[str]]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "openrl_inspect.cli", "demo", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **LIMITS},
    )
    try:
        wait_for_port(port, timeout_s=30)
        yield port, proc
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


def _closed_after(sock: socket.socket, drip: bytes = b"", every_s: float = 0.3) -> float:
    """Seconds until the server closes ``sock`` while we send ``drip`` a byte at a time."""
    started = time.monotonic()
    sock.settimeout(every_s)
    sent = 0
    while time.monotonic() - started < 10:
        try:
            if sock.recv(4096) == b"":
                return time.monotonic() - started
        except TimeoutError:
            pass
        except ConnectionResetError:
            return time.monotonic() - started
        if sent < len(drip):
            try:
                sock.send(drip[sent : sent + 1])
            except (BrokenPipeError, ConnectionResetError):
                return time.monotonic() - started
            sent += 1
    return time.monotonic() - started


@pytest.mark.parametrize(
    "drip",
    [
        b"",  # connects and says nothing
        b"POST /api/v1/inspect/graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100,
    ],
    ids=["idle", "slow-headers"],
)
def test_idle_and_slow_header_connections_are_closed(
    server: tuple[int, subprocess.Popen[str]], drip: bytes
) -> None:
    port, _ = server
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert _closed_after(sock, drip) < 3


def test_a_slow_body_gets_408_and_a_kept_alive_idle_connection_is_closed(
    server: tuple[int, subprocess.Popen[str]],
) -> None:
    port, _ = server
    head = (
        b"POST /api/v1/inspect/graphql HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    )
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head)
        sock.settimeout(5)
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /api/v1/inspect/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        assert _closed_after(sock) < 3  # keep-alive of 1 s


def test_a_declared_large_body_is_refused_before_it_is_sent_and_logs_are_json(
    server: tuple[int, subprocess.Popen[str]],
) -> None:
    port, proc = server
    url = f"http://127.0.0.1:{port}/api/v1/inspect/graphql"
    resp = httpx.post(url, content=b" " * 200_000, headers={"content-type": "application/json"})
    assert resp.status_code == 413
    assert resp.json()["errors"][0]["extensions"]["code"] == "BODY_TOO_LARGE"
    ok = httpx.post(url, json={"query": "query Probe { sessions { totalCount } }"})
    assert ok.status_code == 200 and ok.headers["x-request-id"]
    proc.terminate()
    out, _ = proc.communicate(timeout=15)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    requests = [line for line in lines if line.get("logger") == "openrl_inspect.request"]
    probe = [line for line in requests if line.get("operation") == "Probe"]
    assert (
        probe and probe[0]["status"] == 200 and probe[0]["request_id"] == ok.headers["x-request-id"]
    )
    assert any(line["status"] == 413 and line["codes"] == ["BODY_TOO_LARGE"] for line in requests)

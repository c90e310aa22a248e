"""``/readyz`` says why a backend is down, in words safe to show: refused, timed out,
credentials refused, or not speaking Redis's protocol (redis-py against real sockets)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from openrl_inspect.adapters.redis import RedisSettings, RedisStateStore
from openrl_inspect.web.app import PREFIX
from support.harness import app_client
from support.ports import free_port
from support.redis_server import RedisServer, require_redis

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextmanager
def listener(answer: bytes | None) -> Iterator[int]:
    """A TCP server on loopback that accepts and answers ``answer`` to anything (or, with
    ``None``, never answers)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            held.append(conn)
            if answer is not None:
                conn.recv(4096)
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


async def _redis_check(url: str, **settings: float | str) -> dict[str, object]:
    store = RedisStateStore.from_settings(
        RedisSettings(url=url, timeout_s=1.0, connect_timeout_s=1.0, **settings)  # type: ignore[arg-type]
    )
    async with app_client(store) as client:
        resp = await client.get(f"{PREFIX}/readyz")
    await store.aclose()
    assert resp.status_code == 503
    (redis,) = [b for b in resp.json()["backends"] if b["name"] == "redis"]
    assert isinstance(redis, dict)
    return redis


async def test_a_refused_connection() -> None:
    redis = await _redis_check(f"redis://127.0.0.1:{free_port()}/0")
    assert redis == {
        "name": "redis",
        "ok": False,
        "code": "BACKEND_UNAVAILABLE",
        "reason": "Redis refused the connection",
    }


async def test_a_server_that_never_answers() -> None:
    with listener(None) as port:
        redis = await _redis_check(f"redis://127.0.0.1:{port}/0")
    assert redis["code"] == "BACKEND_TIMEOUT" and "did not answer" in str(redis["reason"])


async def test_a_server_speaking_another_protocol() -> None:
    http = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"
    with listener(http) as port:
        redis = await _redis_check(f"redis://127.0.0.1:{port}/0")
    assert redis["code"] == "BACKEND_PROTOCOL_ERROR"
    assert redis["reason"] == "Redis gave an answer that is not Redis's protocol"


@pytest.mark.redis_server
async def test_refused_credentials() -> None:
    require_redis()
    server = RedisServer().start()
    try:
        # Set a password on the running server; the inspector does not know it.
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as conn:
            conn.sendall(b"CONFIG SET requirepass sesame\r\n")
            assert conn.recv(100).startswith(b"+OK")
        redis = await _redis_check(server.url, password="wrong")
    finally:
        server.cleanup()
    assert redis["code"] == "BACKEND_UNAVAILABLE"
    assert redis["reason"] == "Redis refused the inspector's credentials"
    assert "sesame" not in str(redis) and "wrong" not in str(redis)

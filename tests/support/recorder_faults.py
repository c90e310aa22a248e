"""Helpers for the recorder's fault tests: a Redis that never answers, persistence across
a restart, and counting what the recorder's records left in Redis."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

import pytest
import redis
from openrl_inspect.state import keys


class SilentServer:
    """Accepts connections and reads what is sent, but never answers a byte."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        self.received = threading.Event()  # set once a request arrived
        self._conns: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._swallow, args=(conn,), daemon=True).start()

    def _swallow(self, conn: socket.socket) -> None:
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            self.received.set()

    def close(self) -> None:
        self._closed = True
        self.sock.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()


def persist_on_shutdown(url: str, cluster: bool = False) -> None:
    """Make a test redis-server save its data when stopped, so a restart keeps it.

    The servers of ``support.redis_server`` start with ``--save ""``; with a save point
    set, redis-server writes its RDB on SIGTERM and loads it when started again.
    """
    if cluster:
        client: Any = redis.RedisCluster.from_url(url, decode_responses=True)
        client.config_set("save", "3600 1", target_nodes=redis.RedisCluster.ALL_NODES)
    else:
        client = redis.Redis.from_url(url, decode_responses=True)
        client.config_set("save", "3600 1")
    client.close()


def count_present(client: Any, model_ids: Iterable[str], op_ids: Iterable[tuple[str, str]]) -> int:
    """Sampler batches stored for the models plus op hashes that exist: one per record."""
    pipe = client.pipeline(transaction=False)
    mids = list(model_ids)
    for mid in mids:
        pipe.zcard(keys.sampler_batches(mid))
    for mid, oid in op_ids:
        pipe.exists(keys.op(mid, oid))
    return int(sum(pipe.execute()))


def wait_until(cond: Any, bound_s: float = 8.0, what: str = "condition") -> None:
    """Liveness only: fail instead of hanging if ``cond`` never becomes true."""
    deadline = time.monotonic() + bound_s
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {bound_s}s")
        time.sleep(0.01)

"""Real redis-server processes for tests: standalone, and a 3-master Redis Cluster."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from support.ports import free_port, free_port_pair, wait_for_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"


def require_redis() -> None:
    if not Path(REDIS_SERVER).exists():
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (the README's test command installs it)")
        pytest.skip("redis-server is not installed")


class RedisServer:
    """One redis-server on a free loopback port, with no persistence."""

    def __init__(self, port: int | None = None, cluster: bool = False) -> None:
        # A cluster node also listens on port + 10000 (the cluster bus).
        self.port = port or (free_port_pair(10000) if cluster else free_port())
        self.cluster = cluster
        self.dir = tempfile.mkdtemp(prefix="oi-redis-")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [
            REDIS_SERVER,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", self.dir,
            "--protected-mode", "no",
        ]  # fmt: skip
        if self.cluster:
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
            args += ["--cluster-node-timeout", "2000"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_port(self.port)
        except TimeoutError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class RedisCluster:
    """Three masters on loopback, slots spread by ``redis-cli --cluster create``."""

    def __init__(self) -> None:
        self.nodes = [RedisServer(cluster=True) for _ in range(3)]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self) -> RedisCluster:
        try:
            self._start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def _start(self) -> None:
        for node in self.nodes:
            node.start()
        addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
        subprocess.run(
            [REDIS_CLI, "--cluster", "create", *addrs, "--cluster-yes"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
        )
        self._wait_ok()

    def _wait_ok(self, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = subprocess.run(
                [REDIS_CLI, "-p", str(self.nodes[0].port), "cluster", "info"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout
            if "cluster_state:ok" in out:
                return
            time.sleep(0.1)
        raise TimeoutError("the Redis Cluster did not reach cluster_state:ok")

    def flush(self) -> None:
        """Empty every master: the cluster is shared by the whole session's tests."""
        for node in self.nodes:
            subprocess.run(
                [REDIS_CLI, "-p", str(node.port), "flushall"],
                check=True,
                stdout=subprocess.DEVNULL,
                timeout=10,
            )

    def cleanup(self) -> None:
        for node in self.nodes:
            node.cleanup()

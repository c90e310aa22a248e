"""Shared fixtures. Servers that tests need are started on free loopback ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.redis_server import RedisCluster, RedisServer, require_redis


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    require_redis()
    server = RedisServer().start()
    yield server
    server.cleanup()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    require_redis()
    cluster = RedisCluster().start()
    yield cluster
    cluster.cleanup()

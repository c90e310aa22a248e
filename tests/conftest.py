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


# A marker per real dependency, so each can be selected or left out (`-m "not browser"`):
# a test gets the marker of every real server among the fixtures it uses.
_FIXTURE_MARKERS = {
    "redis_server": "redis_server",
    "redis_cluster": "redis_cluster",
    "prometheus": "prometheus",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in _FIXTURE_MARKERS.items():
            if fixture in used:
                item.add_marker(marker)

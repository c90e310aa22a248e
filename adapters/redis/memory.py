"""The in-memory twin of the Redis adapter: the real store over an in-process fakeredis."""

from __future__ import annotations

from typing import Any

from openrl_inspect.adapters.redis._state import RedisStateStore


def in_memory_store(server: Any | None = None) -> RedisStateStore:
    """A ``RedisStateStore`` over a fakeredis ``server`` (a new one if None)."""
    return RedisStateStore.in_memory(server)

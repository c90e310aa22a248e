"""How the recorder connects: clients built from settings, and a client's connection
parameters carried to a flusher process that rebuilds it there."""

from __future__ import annotations

import pickle
from typing import Any

import redis
import redis.asyncio as aioredis
from openrl_inspect.recorder import _wire as wire
from openrl_inspect.recorder._config import RecorderSettings
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode
from redis.retry import Retry

# ("settings", None) | ("redis", (connection class, kwargs)) | ("cluster", (nodes, kwargs))
ClientSpec = tuple[str, Any]
# A client's connection parameters that a flusher process takes (with every ``ssl_*``);
# the rest are per-process machinery (pools, retry, notification handlers).
_PORTABLE = frozenset(
    {
        "host",
        "port",
        "db",
        "path",
        "username",
        "password",
        "socket_timeout",
        "socket_connect_timeout",
        "socket_keepalive",
        "socket_keepalive_options",
        "client_name",
        "protocol",
        "encoding",
        "encoding_errors",
        "health_check_interval",
    }
)


def sync_client(s: RecorderSettings) -> redis.Redis | redis.RedisCluster:
    common: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": s.socket_timeout_s,
        "socket_connect_timeout": s.connect_timeout_s,
        "retry": Retry(NoBackoff(), 0),  # the flusher retries, with its own backoff
    }
    if s.cluster:
        return redis.RedisCluster.from_url(s.url, **common)
    return redis.Redis.from_url(s.url, **common)


def async_client(s: RecorderSettings) -> aioredis.Redis | aioredis.RedisCluster:
    common: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": s.socket_timeout_s,
        "socket_connect_timeout": s.connect_timeout_s,
        "retry": AsyncRetry(NoBackoff(), 0),
    }
    if s.cluster:
        return aioredis.RedisCluster.from_url(s.url, **common)
    return aioredis.Redis.from_url(s.url, **common)


def client_spec(client: Any) -> ClientSpec | None:
    """How a flusher process rebuilds ``client``; None: it cannot (use a thread)."""
    if client is None:
        return ("settings", None)
    spec: ClientSpec | None = None
    if wire.direct_sync(client) or wire.direct_async(client):
        pool = client.connection_pool
        cls = getattr(redis.connection, pool.connection_class.__name__, None)
        if cls is not None:
            spec = ("redis", (cls, _portable(pool.connection_kwargs)))
    elif type(client) in (redis.RedisCluster, aioredis.RedisCluster):
        nm = client.nodes_manager
        nodes = [(n.host, n.port) for n in nm.startup_nodes.values()]
        spec = ("cluster", (nodes, _portable(getattr(nm, "connection_kwargs", {}))))
    if spec is None:
        return None
    try:
        pickle.dumps(spec)
        # what the flusher process will build, built here without connecting
        kind, (cls, kwargs) = spec
        connection = cls if kind == "redis" else redis.connection.Connection
        connection(**kwargs).disconnect()
    except Exception:
        return None
    return spec


def _portable(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Plain values only (an asyncio client keeps sentinels and handlers here too)."""
    out: dict[str, Any] = {}
    for k, v in kwargs.items():
        if not (k in _PORTABLE or k.startswith("ssl_")):
            continue
        plain = isinstance(v, str | int | float | bytes) and not isinstance(v, type)
        if plain or (k == "socket_keepalive_options" and isinstance(v, dict)):
            out[k] = v
    return out


def build_client(spec: ClientSpec, s: RecorderSettings) -> redis.Redis | redis.RedisCluster:
    """The recorder's client, rebuilt here from its connection parameters."""
    kind, params = spec
    if kind == "settings":
        return sync_client(s)
    cls, kwargs = params
    kwargs = {**kwargs, "retry": Retry(NoBackoff(), 0)}  # the flow retries, with backoff
    kwargs.setdefault("socket_timeout", s.socket_timeout_s)
    kwargs.setdefault("socket_connect_timeout", s.connect_timeout_s)
    if kind == "cluster":
        nodes = [ClusterNode(host, port) for host, port in cls]  # type: ignore[no-untyped-call]
        return redis.RedisCluster(startup_nodes=nodes, **kwargs)
    return redis.Redis(connection_pool=redis.ConnectionPool(connection_class=cls, **kwargs))

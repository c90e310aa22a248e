"""Opening a Redis client (standalone or Cluster) and running commands on it safely.

Every call has a timeout: the socket timeouts of the client and an overall deadline
around each round trip. redis-py exceptions are translated here into the hierarchy of
``adapters.errors`` and never travel further up.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from openrl_inspect.core import lazy
from openrl_inspect.core.backend_calls import timed
from openrl_inspect.core.errors import (
    BackendBusy,
    BackendError,
    BackendProtocolError,
    BackendTimeout,
    BackendUnavailable,
)
from openrl_inspect.core.settings import check_url

if TYPE_CHECKING:
    import redis.asyncio as aioredis
    import redis.exceptions as rexc
    from redis.asyncio.cluster import RedisCluster
else:
    # redis-py loads when a client is first opened (see ``openrl_inspect.core.lazy``).
    aioredis = lazy.module("redis.asyncio")
    rexc = lazy.module("redis.exceptions")

BACKEND = "redis"
T = TypeVar("T")


@dataclass(frozen=True)
class RedisSettings:
    """Where OpenRL's state lives. Env prefix ``OPENRL_INSPECT_REDIS_``."""

    url: str = "redis://127.0.0.1:6379/0"
    cluster: bool = False
    timeout_s: float = 2.0
    connect_timeout_s: float = 1.0
    # Connections in the pool; a call waits up to pool_timeout_s for a free one and is
    # then answered BACKEND_BUSY (Redis is fine; this inspector is saturated).
    max_connections: int = 32
    pool_timeout_s: float = 1.0
    # The password, kept out of the URL so it is in no command line: from the
    # environment (OPENRL_INSPECT_REDIS_PASSWORD) or, better, a file (a mounted Secret).
    # A password written in the URL wins over both.
    password: str | None = field(default=None, repr=False)
    password_file: str | None = None

    def __post_init__(self) -> None:
        check_url("url", self.url, ("redis", "rediss", "unix"))

    def secret(self) -> str | None:
        """The password from ``password`` or ``password_file`` (trailing newline dropped).

        A ``ValueError`` names the file, never its content.
        """
        if self.password:
            return self.password
        if not self.password_file:
            return None
        try:
            with open(self.password_file, encoding="utf-8") as f:
                return f.read(4096).rstrip("\r\n") or None
        except (OSError, UnicodeDecodeError) as exc:
            problem = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            raise ValueError(
                f"the Redis password file {self.password_file!r} cannot be read ({problem})"
            ) from None


class Pipe(Protocol):
    """The part of a redis-py pipeline the adapters use (sync and async alike)."""

    def __getattr__(self, name: str) -> Any: ...


# A store's way to run one round trip: queue commands on a pipeline, get their answers.
Run = Callable[[Callable[[Pipe], None]], Awaitable[list[Any]]]


class RoundTrips:
    """Counts network round trips: one per pipeline or single command executed."""

    def __init__(self) -> None:
        self.count = 0


class PoolExhausted(Exception):
    """Every pooled connection stayed in use for the pool's whole wait."""


# lazy: redis-py and hiredis load when a client opens (``core.lazy``).
@functools.cache
def _waiting_pool() -> Any:
    """redis-py's blocking pool, telling a full pool apart from an unreachable Redis.

    Both raise redis-py's ``ConnectionError``; only the wait for a free connection ends in
    a timeout, which this pool raises as ``PoolExhausted`` (still a ``ConnectionError``
    for redis-py). Built on first use: redis-py loads when a client opens.
    """
    import redis.asyncio
    import redis.exceptions

    class Exhausted(redis.exceptions.ConnectionError, PoolExhausted):
        pass

    class WaitingPool(redis.asyncio.BlockingConnectionPool):
        async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().get_connection(*args, **kwargs)  # type: ignore[no-untyped-call]
            except redis.exceptions.ConnectionError as exc:
                if isinstance(exc.__cause__, asyncio.TimeoutError | TimeoutError):
                    raise Exhausted("no connection available") from exc
                raise

    return WaitingPool


# lazy: redis-py loads when a client opens (``core.lazy``).
def connect(settings: RedisSettings) -> aioredis.Redis | RedisCluster:
    """Build (not yet connect) an asyncio client for ``settings``.

    Standalone clients wait for a pooled connection (a ``WaitingPool``); a Cluster client's
    per-node pools do not wait, and a full one is reported busy all the same.
    """
    from redis.asyncio.cluster import RedisCluster
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError as DroppedConnection

    common: dict[str, Any] = {
        "decode_responses": True,
        # RESP2, as redis-py 7 spoke by default: redis-py 8 speaks RESP3 unless told, and
        # turns its replies back into RESP2 shapes in Python (each sorted-set score is
        # formatted to text and parsed again: ZRANGE WITHSCORES took twice as long).
        "protocol": 2,
        "socket_timeout": settings.timeout_s,
        "socket_connect_timeout": settings.connect_timeout_s,
        # One quick retry for a dropped connection (every read is idempotent), not
        # redis-py's default of several, and none for a timeout, so a dead Redis costs a
        # request about one timeout, not many. The asyncio client needs the asyncio
        # Retry: given redis-py's sync one, it awaited the first attempt outside it and
        # never retried.
        "retry": Retry(
            ExponentialBackoff(cap=0.2, base=0.05), 1, supported_errors=(DroppedConnection,)
        ),
    }
    password = settings.secret()
    if password is not None:
        common["password"] = password
    if settings.cluster:
        return RedisCluster.from_url(
            settings.url, max_connections=settings.max_connections, **common
        )
    # With a pool given, redis-py takes the retry policy from the pool's connections.
    pool = _waiting_pool().from_url(
        settings.url,
        max_connections=settings.max_connections,
        timeout=settings.pool_timeout_s,
        **common,
    )
    return aioredis.Redis.from_pool(pool)


def translate(exc: BaseException) -> BackendError:
    """Map a redis-py (or asyncio) exception to our hierarchy; the message is safe to show."""
    if isinstance(exc, BackendError):
        return exc
    if isinstance(exc, PoolExhausted | rexc.MaxConnectionsError):
        return BackendBusy(
            BACKEND, "Redis answers, but all of the inspector's connections are busy"
        )
    if isinstance(exc, rexc.TimeoutError | asyncio.TimeoutError | TimeoutError):
        return BackendTimeout(BACKEND, "Redis did not answer in time")
    if isinstance(exc, rexc.AuthenticationError | rexc.AuthorizationError):
        return BackendUnavailable(BACKEND, "Redis refused the inspector's credentials")
    if isinstance(exc, rexc.NoPermissionError):
        return BackendUnavailable(BACKEND, "Redis refused a command (ACL)")
    if _caused_by(exc, ConnectionRefusedError):
        return BackendUnavailable(BACKEND, "Redis refused the connection")
    if _caused_by(exc, socket.gaierror):
        return BackendUnavailable(BACKEND, "Redis's host name does not resolve")
    if isinstance(exc, rexc.ConnectionError | ConnectionError | OSError):
        return BackendUnavailable(BACKEND, "Redis is unreachable")
    if isinstance(exc, rexc.RedisClusterException):
        return BackendUnavailable(BACKEND, "Redis Cluster is not available")
    if isinstance(exc, rexc.ResponseError):
        return BackendProtocolError(BACKEND, "Redis rejected a command")
    return BackendProtocolError(BACKEND, "Redis gave an answer that is not Redis's protocol")


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` is, or was raised from, a ``kind`` (redis-py wraps socket errors)."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


async def run(
    client: aioredis.Redis | RedisCluster,
    build: Callable[[Pipe], None],
    *,
    deadline_s: float,
    trips: RoundTrips,
    raise_on_error: bool = True,
) -> list[Any]:
    """Queue commands with ``build`` on one non-transactional pipeline and execute it.

    One call is one round trip (one per node on a Cluster), whatever ``build`` queued.
    With ``raise_on_error=False`` a command Redis refuses (a key of the wrong type) is
    that command's result, an exception, and the others still answer.
    """
    pipe: Any = client.pipeline(transaction=False)
    build(pipe)
    if len(pipe) == 0:
        return []
    trips.count += 1
    return list(await guarded(pipe.execute(raise_on_error=raise_on_error), deadline_s))


async def guarded(call: Awaitable[T], deadline_s: float) -> T:
    with timed(BACKEND):
        try:
            async with asyncio.timeout(deadline_s):
                return await call
        except BackendError:
            raise
        except Exception as exc:  # translated, never leaked: see module docstring
            raise translate(exc) from exc

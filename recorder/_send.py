"""Sending a batch of commands as one pipeline, from the recorder's flusher thread.

The answer is one result per command, a ``ResponseError`` in place of a command Redis
rejected; connection errors and timeouts raise.

- ``DirectPipe``, for a plain ``redis.Redis``: the commands go through redis-py's own
  ``Connection`` methods, and the next batch is compiled while Redis works on this one.
- ``SyncPipe``: any other redis-py client (Cluster, or anything with its ``pipeline``),
  through its pipeline; its pool hands the thread a connection of its own.
- ``LoopPipe``: an asyncio client. Its connections belong to the caller's event loop,
  so the flusher sends through a copy of it (``loop_copy``: the same server and
  parameters, a pool of its own) on an event loop of its own.

Scripts go by ``EVALSHA``. A node without the script cached (a restart, a failover: the
cache is neither persisted nor replicated, and each cluster node has its own) answers
``NOSCRIPT`` without running anything; those commands, and only those, are sent again
as ``EVAL`` in a second pipeline, in their order. So are those a user whose ACL grants
EVAL but not EVALSHA may not run (warned once). The scripts are idempotent, so running
one after the batch's later commands leaves what the batch leaves when nothing else
moved in between (see ``_rollup`` for a step trimmed in that batch).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

import redis
import redis.asyncio as aioredis
import redis.exceptions as rexc
from openrl_inspect.recorder._config import RecorderSettings
from openrl_inspect.recorder._scripts import body
from redis.asyncio.cluster import ClusterNode
from redis.backoff import NoBackoff
from redis.retry import Retry

log = logging.getLogger("openrl_inspect.recorder")

Command = tuple[Any, ...]


def _nothing() -> None:
    pass


class Pipe:
    """Sends a batch as one pipeline, and what ``EVALSHA`` could not run again as ``EVAL``."""

    def execute(
        self, commands: Sequence[Command], limit_s: float, meanwhile: Callable[[], None] = _nothing
    ) -> list[Any]:
        """One result per command; ``limit_s`` bounds an asyncio client's attempt, and
        ``meanwhile`` runs while Redis works, where the pipe can tell when that is."""
        results = self.send(commands, limit_s, meanwhile)
        again = _noscript(commands, results)
        if again:
            retried = self.send([_as_eval(commands[i]) for i in again], limit_s, _nothing)
            for i, r in zip(again, retried, strict=True):
                results[i] = r
        return results

    def send(
        self, commands: Sequence[Command], limit_s: float, meanwhile: Callable[[], None]
    ) -> list[Any]:
        raise NotImplementedError

    def close(self) -> None:
        """Close what the recorder opened (no attempt is in the pipe)."""


class SyncPipe(Pipe):
    def __init__(self, client: Any, owned: bool) -> None:
        self.client = client
        self.owned = owned

    def send(
        self, commands: Sequence[Command], limit_s: float, meanwhile: Callable[[], None]
    ) -> list[Any]:
        # ``meanwhile`` is not run: the pipeline sends and reads in one call.
        pipe = self.client.pipeline(transaction=False)
        for cmd in commands:
            pipe.execute_command(*cmd)
        return list(pipe.execute(raise_on_error=False))

    def close(self) -> None:
        if self.owned:
            self.client.close()


class DirectPipe(SyncPipe):
    """A plain ``redis.Redis``: the batch is packed, sent and its replies read on one of
    its connections by redis-py's own ``Connection`` methods, what its pipeline does
    too, without the pipeline's bookkeeping (about half the Python per command here) and
    with ``meanwhile`` between the send and the replies."""

    def send(
        self, commands: Sequence[Command], limit_s: float, meanwhile: Callable[[], None]
    ) -> list[Any]:
        pool = self.client.connection_pool
        conn = pool.get_connection()
        try:
            conn.send_packed_command(conn.pack_commands(commands))
            meanwhile()
            out: list[Any] = []
            for _ in range(len(commands)):
                try:
                    out.append(conn.read_response())
                except rexc.ResponseError as exc:  # a rejected command: its own result
                    out.append(exc)
            return out
        except BaseException:
            conn.disconnect()  # replies may be left unread: the connection is spent
            raise
        finally:
            pool.release(conn)


class LoopPipe(Pipe):
    def __init__(self, client: Any) -> None:
        self.client = loop_copy(client)
        self.loop = asyncio.new_event_loop()

    def send(
        self, commands: Sequence[Command], limit_s: float, meanwhile: Callable[[], None]
    ) -> list[Any]:
        return self.loop.run_until_complete(asyncio.wait_for(self._send(commands), limit_s))

    async def _send(self, commands: Sequence[Command]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for cmd in commands:
            pipe.execute_command(*cmd)
        return list(await pipe.execute(raise_on_error=False))

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.client.aclose())
        finally:
            self.loop.close()


# Per-pool machinery that a pool of the copy makes for itself (redis-py 8).
_PER_POOL = frozenset({"maint_notifications_pool_handler", "himport_registry"})
_CLUSTER_PARAMETERS = frozenset(inspect.signature(aioredis.RedisCluster).parameters) - {
    "host",
    "port",
    "startup_nodes",
}


def loop_copy(client: Any) -> Any:
    """A client to the same server(s) as the asyncio ``client``, with its parameters and a
    connection pool of its own, for the flusher's loop."""
    if isinstance(client, aioredis.RedisCluster):
        params: dict[str, Any] = dict(client.get_connection_kwargs())
        kwargs = {k: v for k, v in params.items() if k in _CLUSTER_PARAMETERS}
        kwargs["ssl"] = issubclass(params.get("connection_class") or object, aioredis.SSLConnection)
        known = client.get_nodes() or client.startup_nodes  # none known before its first call
        nodes = [ClusterNode(n.host, n.port) for n in known]
        return aioredis.RedisCluster(startup_nodes=nodes, **kwargs)
    pool = getattr(client, "connection_pool", None)
    if isinstance(pool, aioredis.ConnectionPool):
        kwargs = {k: v for k, v in pool.connection_kwargs.items() if k not in _PER_POOL}
        copy = aioredis.ConnectionPool(
            connection_class=pool.connection_class, max_connections=2, **kwargs
        )
        return aioredis.Redis.from_pool(copy)
    raise TypeError(f"the recorder cannot copy a {type(client).__name__} for its thread")


def sync_client(s: RecorderSettings) -> redis.Redis | redis.RedisCluster:
    """The recorder's own client, from its settings."""
    common: dict[str, Any] = {
        "socket_timeout": s.socket_timeout_s,
        "socket_connect_timeout": s.connect_timeout_s,
        "retry": Retry(NoBackoff(), 0),  # the flusher retries, with its own backoff
    }
    if s.cluster:
        return redis.RedisCluster.from_url(s.url, **common)
    return redis.Redis.from_url(s.url, **common)


def pipe_for(client: Any, owned: bool) -> Pipe:
    """How the flusher thread sends through ``client`` (an asyncio one through a copy)."""
    if isinstance(client, aioredis.Redis | aioredis.RedisCluster):
        return LoopPipe(client)  # the caller's client stays the caller's to close
    if type(client) is redis.Redis:
        return DirectPipe(client, owned)
    return SyncPipe(client, owned)


def _errors(results: list[Any]) -> bool:
    # One pass over the types in C: a batch's results are thousands of replies.
    return any(issubclass(t, Exception) for t in set(map(type, results)))


def _noscript(commands: Sequence[Command], results: list[Any]) -> list[int]:
    """Where an ``EVALSHA`` ran nothing and an ``EVAL`` may: the script was not cached,
    or the user may not run EVALSHA at all (an ACL from before it, docs/deploy.md)."""
    if not _errors(results):
        return []
    return [
        i
        for i, r in enumerate(results)
        if isinstance(r, rexc.ResponseError)
        and _eval_may(r)
        and str(commands[i][0]).upper() == "EVALSHA"
    ]


_warned_acl = False


def _eval_may(exc: rexc.ResponseError) -> bool:
    msg = str(exc)
    if isinstance(exc, rexc.NoScriptError) or msg.startswith("NOSCRIPT"):
        return True
    refused = isinstance(exc, rexc.NoPermissionError) or msg.startswith("NOPERM")
    if refused and "'evalsha'" in msg.lower():
        global _warned_acl
        if not _warned_acl:
            _warned_acl = True
            log.warning(
                "recorder: the Redis user may not run EVALSHA; scripts are sent again as "
                "EVAL, one more round trip per batch: add +evalsha to its ACL "
                "(docs/deploy.md, Redis ACL users)"
            )
        return True
    return False


def _as_eval(cmd: Command) -> Command:
    return ("EVAL", body(cmd[1]), *cmd[2:])

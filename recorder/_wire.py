"""Sending a batch of commands as one pipeline, sync or asyncio.

For a standalone ``redis.Redis`` (or ``redis.asyncio.Redis``) with redis-py's own
connection classes, the commands are packed by hiredis in one buffer, written with one
send and their replies read back on the same connection: redis-py's pipeline does the
same round trip but spends several microseconds per command in Python, which is most of
the recorder's flush cost. Every other client (Redis Cluster, fakeredis, a wrapper)
goes through its own ``pipeline(transaction=False)``, which routes commands to nodes.

Either way the answer is one result per command, a ``ResponseError`` in place of a
command Redis rejected; connection errors and timeouts raise.

Scripts go by ``EVALSHA``. A node that does not have the script cached (it restarted,
or a replica took over: the cache is neither persisted nor replicated, and each cluster
node has its own) answers ``NOSCRIPT`` without running anything; those commands, and
only those, are sent again as ``EVAL`` in a second pipeline on the same client, in their
order, and their results take the place of the ``NOSCRIPT`` errors. So are those a user
may not run because its ACL grants EVAL but not EVALSHA (written before the recorder
used EVALSHA): nothing is lost while the ACL is updated, and a warning says so.

The scripts are idempotent, so running one after the batch's later commands leaves what
the batch leaves when nothing else moved in between; see ``_rollup`` for what a step
trimmed in that batch changes. Every script of a batch goes by ``EVALSHA``, so when a
node lost its cache, a batch's rollup and the trim after it are both re-sent, the trim
still last.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import hiredis
import redis
import redis.asyncio as aioredis
import redis.exceptions as rexc
from openrl_inspect.recorder._scripts import body

log = logging.getLogger("openrl_inspect.recorder")

Command = tuple[Any, ...]


def _direct(client: Any, pool_module: str, client_type: type) -> bool:
    pool = getattr(client, "connection_pool", None)
    if type(client) is not client_type or pool is None:
        return False
    cls = getattr(pool, "connection_class", None)
    return cls is not None and cls.__module__ == pool_module


def direct_sync(client: Any) -> bool:
    """True when ``client`` is a plain standalone ``redis.Redis``."""
    return _direct(client, "redis.connection", redis.Redis)


def direct_async(client: Any) -> bool:
    """True when ``client`` is a plain standalone ``redis.asyncio.Redis``."""
    return _direct(client, "redis.asyncio.connection", aioredis.Redis)


def pack(commands: Sequence[Command]) -> bytes:
    return b"".join([hiredis.pack_command(c) for c in commands])


def _nothing() -> None:
    pass


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


def _eval_may(exc: rexc.ResponseError) -> bool:
    # redis-py strips the error code into the class; hiredis alone keeps it in the text.
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


_warned_acl = False


def _as_eval(cmd: Command) -> Command:
    return ("EVAL", body(cmd[1]), *cmd[2:])


def execute_sync(
    client: Any, commands: Sequence[Command], meanwhile: Callable[[], None] = _nothing
) -> list[Any]:
    """Send ``commands`` as one pipeline; ``meanwhile`` runs while Redis works on them."""
    results = _execute_sync(client, commands, meanwhile)
    again = _noscript(commands, results)
    if again:
        retried = _execute_sync(client, [_as_eval(commands[i]) for i in again], _nothing)
        for i, r in zip(again, retried, strict=True):
            results[i] = r
    return results


def _execute_sync(
    client: Any, commands: Sequence[Command], meanwhile: Callable[[], None]
) -> list[Any]:
    if not direct_sync(client):
        pipe = client.pipeline(transaction=False)
        for cmd in commands:
            pipe.execute_command(*cmd)
        meanwhile()
        return list(pipe.execute(raise_on_error=False))
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        conn.send_packed_command([pack(commands)])
        meanwhile()
        return _read_replies(conn._sock, len(commands))
    except BaseException:
        conn.disconnect()
        raise
    finally:
        pool.release(conn)


def _read_replies(sock: Any, n: int) -> list[Any]:
    """``n`` replies read straight off the socket by one hiredis reader: redis-py's
    ``read_response`` costs several microseconds of Python per reply. The replies are
    bytes (the recorder only looks for errors); a rejected command's reply is a
    ``ResponseError`` with Redis's message."""
    reader = hiredis.Reader(replyError=rexc.ResponseError)
    out: list[Any] = []
    while len(out) < n:
        reply = reader.gets()
        if reply is False:
            data = sock.recv(65_536)
            if not data:
                raise rexc.ConnectionError("Connection closed by server.")
            reader.feed(data)
        else:
            out.append(reply)
    return out


async def execute_async(
    client: Any, commands: Sequence[Command], meanwhile: Callable[[], None] = _nothing
) -> list[Any]:
    """Send ``commands`` as one pipeline; ``meanwhile`` runs while Redis works on them."""
    results = await _execute_async(client, commands, meanwhile)
    again = _noscript(commands, results)
    if again:
        evals = [_as_eval(commands[i]) for i in again]
        retried = await _execute_async(client, evals, _nothing)
        for i, r in zip(again, retried, strict=True):
            results[i] = r
    return results


async def _execute_async(
    client: Any, commands: Sequence[Command], meanwhile: Callable[[], None]
) -> list[Any]:
    if not direct_async(client):
        pipe = client.pipeline(transaction=False)
        for cmd in commands:
            pipe.execute_command(*cmd)
        meanwhile()
        return list(await pipe.execute(raise_on_error=False))
    pool = client.connection_pool
    conn = await pool.get_connection()
    try:
        await conn.send_packed_command([pack(commands)])
        meanwhile()
        out: list[Any] = []
        for _ in range(len(commands)):
            try:
                out.append(await conn.read_response())
            except rexc.ResponseError as exc:
                out.append(exc)
        return out
    except BaseException:
        await conn.disconnect()
        raise
    finally:
        await pool.release(conn)

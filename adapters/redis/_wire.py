"""Executing a batch of reads straight on the wire, for a plain standalone client.

redis-py's pipeline spends several microseconds of Python per command: packing each
argument through its encoder, then one ``read_response`` per reply through the
connection's timeout and parser layers. The nested queries send tens of thousands of
commands per request, so for a plain ``redis.asyncio.Redis`` (redis-py's own connection
classes and its hiredis parser) the batch is packed by hiredis in one buffer, sent with
one write, and the replies are taken off the connection's own hiredis reader in one
loop. Anything else (Redis Cluster, fakeredis, another parser, a command or option not
listed below) goes through the pipeline it was queued on, which is the reference: this
path must answer exactly as it would.

What is kept identical, and how:

- decoding: the replies come from the connection's own hiredis ``Reader``, which
  redis-py configured with the client's encoder (``decode_responses``, encoding and
  its error handler) and its error classes; ``NEVER_DECODE`` reads undecoded as
  redis-py does (``gets(False)``);
- conversion: each reply goes through the client's own ``response_callbacks`` with the
  options redis-py passes them (``NEVER_DECODE`` and ``keys`` dropped), so RESP2 or
  RESP3, legacy shapes or not, the result is the callback's;
- errors: a command Redis rejects is a ``ResponseError`` in its place; with
  ``raise_on_error`` the pipeline's own ``raise_first_error`` raises the first one,
  annotated as redis-py annotates it; socket timeouts and closed connections raise
  redis-py's ``TimeoutError`` and ``ConnectionError`` with its messages, and the batch
  is retried by the connection's ``retry`` policy as the pipeline retries it;
- the connection: taken from the client's pool (its wait and its ``PoolExhausted``),
  connected and health-checked by redis-py's own ``send_packed_command``, disconnected
  on any failure or cancellation before it goes back (a half-read connection would
  hand the next caller someone else's replies), released in ``finally``.

Not reproduced: the pipeline's OpenTelemetry duration/error records and its HIMPORT
fieldset preparation (the inspector sends no HIMPORT commands).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import hiredis
import redis.asyncio as aioredis
import redis.exceptions as rexc
from redis._parsers.hiredis import NOT_ENOUGH_DATA, _AsyncHiredisParser
from redis.client import NEVER_DECODE
from redis.utils import HIREDIS_AVAILABLE

# The commands the store sends, whose replies redis-py turns into results with nothing
# but the parser and a response callback (no EMPTY_RESPONSE, no client-side state).
_COMMANDS = frozenset(
    {"GET", "HGETALL", "ZCARD", "ZCOUNT"}
    | {"ZRANGE", "ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE"}
)
# Options redis-py's parse_response understands for them; anything else, the pipeline.
_OPTIONS = frozenset({NEVER_DECODE, "keys", "withscores", "score_cast_func"})
_DROPPED = frozenset({NEVER_DECODE, "keys"})

Stack = Sequence[tuple[tuple[Any, ...], Mapping[str, Any]]]


def direct(client: Any) -> bool:
    """True when ``client`` is a plain standalone ``redis.asyncio.Redis`` whose
    connections are redis-py's own with its hiredis parser."""
    if type(client) is not aioredis.Redis:
        return False
    pool = getattr(client, "connection_pool", None)
    cls = getattr(pool, "connection_class", None)
    if cls is None or cls.__module__ != "redis.asyncio.connection":
        return False
    kwargs = pool.connection_kwargs  # type: ignore[union-attr]
    # hiredis packs text as strict UTF-8, as redis-py's encoder does by default only.
    encoding = kwargs.get("encoding", "utf-8"), kwargs.get("encoding_errors", "strict")
    if encoding != ("utf-8", "strict"):
        return False
    parser = kwargs.get("parser_class", _AsyncHiredisParser)
    return parser is _AsyncHiredisParser and HIREDIS_AVAILABLE


def known(stack: Stack) -> bool:
    """True when every queued command has a conversion this path reproduces."""
    for args, options in stack:
        if args[0] not in _COMMANDS or not options.keys() <= _OPTIONS:
            return False
    return True


async def execute(client: Any, pipe: Any, *, raise_on_error: bool) -> list[Any]:
    """The results ``pipe.execute(raise_on_error=...)`` would give for its queued
    commands; the caller has checked ``direct(client)`` and ``known(stack)``."""
    stack: Stack = pipe.command_stack
    packed = b"".join([hiredis.pack_command(args) for args, _ in stack])
    decode = [NEVER_DECODE not in options for _, options in stack]
    pool = client.connection_pool
    conn = await pool.get_connection()
    try:
        replies: list[Any] = await conn.retry.call_with_retry(
            lambda: _exchange(conn, packed, decode),
            lambda error, failures: conn.disconnect(error=error, failure_count=failures),
            with_failure_count=True,
        )
    finally:
        await pool.release(conn)
    out = await _convert(client.response_callbacks, stack, replies)
    if raise_on_error:
        pipe.raise_first_error(stack, out)
    return out


async def _exchange(conn: Any, packed: bytes, decode: list[bool]) -> list[Any]:
    # send_packed_command connects (AUTH, SELECT, HELLO), health-checks and bounds the
    # write; on failure it has disconnected already.
    await conn.send_packed_command(packed)
    try:
        if type(conn._parser) is _AsyncHiredisParser:
            replies = await _read(conn, decode)
        else:  # a parser swapped after connect: redis-py's own read, reply by reply
            replies = await _read_each(conn, decode)
    except TimeoutError:  # our socket timeout (the caller's deadline is a cancellation)
        await conn.disconnect(nowait=True)
        raise rexc.TimeoutError(f"Timeout reading from {conn._host_error()}") from None
    except OSError as exc:
        await conn.disconnect(nowait=True)
        raise rexc.ConnectionError(
            f"Error while reading from {conn._host_error()} : {exc.args}"
        ) from None
    except BaseException:
        # Cancelled or failed mid-read: the rest of the replies are still on the way.
        await conn.disconnect(nowait=True)
        raise
    if conn.health_check_interval:
        conn.next_health_check = asyncio.get_running_loop().time() + conn.health_check_interval
    return replies


async def _read(conn: Any, decode: list[bool]) -> list[Any]:
    """One reply per command off the connection's hiredis reader, reading the socket
    only when the reader has no complete reply (a few reads per batch, not one per
    reply); each socket read is bounded by the socket timeout as redis-py's are."""
    parser = conn._parser
    if not parser._connected:
        raise rexc.ConnectionError("Connection closed by server.")
    reader = parser._reader
    timeout = conn.socket_timeout
    push = parser._hiredis_PushNotificationType
    out: list[Any] = []
    append = out.append
    for flag in decode:
        reply = reader.gets() if flag else reader.gets(False)
        while True:
            while reply is NOT_ENOUGH_DATA:
                async with asyncio.timeout(timeout):
                    await parser.read_from_socket()
                reply = reader.gets() if flag else reader.gets(False)
            if push is not None and type(reply) is push:
                # An out-of-band message (RESP3): redis-py's handler, then our reply.
                await parser.handle_push_response(reply)
                reply = reader.gets() if flag else reader.gets(False)
                continue
            break
        if isinstance(reply, rexc.ConnectionError):
            raise reply
        if type(reply) is list and reply and isinstance(reply[0], rexc.ConnectionError):
            raise reply[0]
        append(reply)
    return out


async def _read_each(conn: Any, decode: list[bool]) -> list[Any]:
    out: list[Any] = []
    for flag in decode:
        try:
            out.append(await conn.read_response(disable_decoding=not flag))
        except rexc.ResponseError as exc:
            out.append(exc)
    return out


async def _convert(callbacks: Any, stack: Stack, replies: list[Any]) -> list[Any]:
    """Each reply as redis-py's ``parse_response`` leaves it: the callback of its
    command with the options it is given, an error as it is."""
    found: dict[str, Any] = {}
    out: list[Any] = []
    for (args, options), reply in zip(stack, replies, strict=True):
        if isinstance(reply, rexc.ResponseError):
            out.append(reply)
            continue
        name = args[0]
        if name not in found:
            found[name] = callbacks.get(name)
        callback = found[name]
        if callback is None:
            out.append(reply)
            continue
        result = callback(reply, **{k: v for k, v in options.items() if k not in _DROPPED})
        out.append(await result if inspect.isawaitable(result) else result)
    return out

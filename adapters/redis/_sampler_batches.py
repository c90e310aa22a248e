"""Sampler batches: what the samplers recorded per batch, read from Redis in batches.

The recorder keeps them per model in the capped sorted set ``oi:{m:MID}:sampler:batches``
(``state.keys.sampler_batches``; see docs/redis-schema.md): member the record's compact
JSON (``id``, ``t``, ``batch_size``, ``prompt_tokens``, ``generated_tokens``,
``latency_s``, ``queue_depth``, ``worker``, ``op_id``), score its time.
:meth:`RedisSamplerBatches.sampler_batches` reads the newest members of a time window of
many models' sets in one pipeline round trip, newest first, at most ``MAX_BATCHES`` a
request, resuming strictly before a (score, member) position.

Members are read undecoded and decoded one by one, so a member that is not UTF-8, not
JSON, not an object or has no time spoils only itself: it comes back as a
``BadRecord`` and is counted in ``undecodable``.

There is no separate twin: this class over ``RedisStateStore.in_memory`` (fakeredis) is
the in-memory twin, as for the rest of the Redis adapter.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from openrl_inspect.adapters.redis._client import Pipe, run
from openrl_inspect.adapters.redis._state import RedisStateStore, StateStore
from openrl_inspect.core.errors import BadRecord, DecodeError, InvalidInput
from openrl_inspect.state import keys
from openrl_inspect.state.memo import Memo
from openrl_inspect.state.records import SamplerBatchRecord

__all__ = [
    "MAX_BATCHES",
    "RedisSamplerBatches",
    "SamplerBatchEntry",
    "SamplerBatchReader",
    "SamplerBatchRequest",
    "SamplerBatchSlice",
    "decode_sampler_batch",
]

# Members one request may ask for per model (the recorder keeps up to 10,000).
MAX_BATCHES = 2000
# Extra members read so that entries sharing the resume position's score can be
# skipped without another round trip; more ties than this end the page early.
_TIE_SLACK = 32
_KIND = "sampler batch"


@dataclass(frozen=True, slots=True)
class SamplerBatchRequest:
    """The newest ``limit`` batches of one model in ``[start, end]`` (epoch seconds),
    strictly older than ``after`` = (score, member) when given."""

    model_id: str
    start: float = -math.inf
    end: float = math.inf
    limit: int = 500
    after: tuple[float, str] | None = None


@dataclass(frozen=True, slots=True)
class SamplerBatchEntry:
    """One member with its position in the model's set (what a cursor resumes after)."""

    score: float
    member: str
    record: SamplerBatchRecord | BadRecord


@dataclass(frozen=True, slots=True)
class SamplerBatchSlice:
    """What one request found, newest first, at most its ``limit``.

    ``in_window`` counts the window's members, read or not (ZCOUNT, ignoring ``after``);
    ``truncated`` says members past these may exist; ``undecodable`` counts the entries
    that are a ``BadRecord``. ``problem`` is set, and the rest empty, when the model's
    set itself cannot be read (a key of another Redis type).
    """

    entries: tuple[SamplerBatchEntry, ...]
    in_window: int
    truncated: bool
    undecodable: int
    problem: BadRecord | None = None

    def records(self) -> list[SamplerBatchRecord]:
        """The readable batches, newest first (the undecodable ones skipped)."""
        return [e.record for e in self.entries if isinstance(e.record, SamplerBatchRecord)]


class SamplerBatchReader(Protocol):
    """Batch in, one slice per request out, in request order."""

    async def sampler_batches(
        self, requests: Sequence[SamplerBatchRequest]
    ) -> list[SamplerBatchSlice]: ...


class RedisSamplerBatches:
    """``SamplerBatchReader`` over the Redis adapter's client (one round trip a batch)."""

    def __init__(self, store: RedisStateStore) -> None:
        self._store = store

    @classmethod
    def of(cls, state: StateStore) -> RedisSamplerBatches | None:
        """The reader for a state store, when it is the Redis adapter (or its twin)."""
        return cls(state) if isinstance(state, RedisStateStore) else None

    async def sampler_batches(
        self, requests: Sequence[SamplerBatchRequest]
    ) -> list[SamplerBatchSlice]:
        for req in requests:
            _check(req)
        if not requests:
            return []
        counts = [_scan_size(req) for req in requests]

        def build(pipe: Pipe) -> None:
            for req, count in zip(requests, counts, strict=True):
                key = keys.sampler_batches(req.model_id)
                top = req.end if req.after is None else min(req.end, req.after[0])
                # Undecoded: a member that is not UTF-8 spoils only itself.
                pipe.execute_command(
                    "ZREVRANGEBYSCORE", key, _bound(top), _bound(req.start),
                    "LIMIT", 0, count, "WITHSCORES",
                    withscores=True, keys=[key], NEVER_DECODE=True,
                )  # fmt: skip
                pipe.zcount(key, _bound(req.start), _bound(req.end))

        await self._store.check_schema()
        raw = await run(
            self._store.client,
            build,
            deadline_s=self._store.deadline_s,
            trips=self._store.trips,
            raise_on_error=False,
        )
        return [
            _slice(req, count, raw[2 * i], raw[2 * i + 1])
            for i, (req, count) in enumerate(zip(requests, counts, strict=True))
        ]


def _slice(req: SamplerBatchRequest, count: int, fetched: Any, in_window: Any) -> SamplerBatchSlice:
    if isinstance(fetched, Exception) or isinstance(in_window, Exception):
        # The key holds another Redis type: this model's batches fail, not the batch.
        bad = BadRecord(_KIND, req.model_id, "its batches are stored with the wrong Redis type")
        return SamplerBatchSlice((), 0, False, 0, problem=bad)
    pairs = [(m, float(s)) for m, s in fetched]
    if req.after is not None:
        after = req.after
        pairs = [(m, s) for m, s in pairs if (s, _text(m)) < after]
    entries = tuple(_entry(req.model_id, member, score) for member, score in pairs[: req.limit])
    undecodable = sum(1 for e in entries if isinstance(e.record, BadRecord))
    truncated = len(pairs) > req.limit or len(fetched) >= count
    return SamplerBatchSlice(entries, int(in_window), truncated, undecodable)


def _text(member: Any) -> str:
    return member.decode("utf-8", "replace") if isinstance(member, bytes) else str(member)


# A sampler batch is written once and polled many times (the summaries read a model's
# recent batches on every dashboard refresh): decoded entries are kept by their text
# (full, 15 MiB, measured with tracemalloc; 16,384 are about 240 models' recent batches
# as the summaries read them, twice a dashboard page of 100).
_ENTRIES: Memo[tuple[str, float, str], SamplerBatchEntry] = Memo(16_384)


def _entry(model_id: str, member: Any, score: float) -> SamplerBatchEntry:
    if isinstance(member, bytes):
        try:
            text = member.decode("utf-8")
        except UnicodeDecodeError:
            # Kept as text for its cursor; UTF-8 orders as its code points, so text
            # compares as Redis orders ties (this replaced one only roughly).
            text = member.decode("utf-8", "replace")
            bad = BadRecord(_KIND, f"{model_id}@{score!r}", "it is not UTF-8 text")
            return SamplerBatchEntry(score, text, bad)
    else:
        text = str(member)
    key = (model_id, score, text)
    entry = _ENTRIES.get(key)
    if entry is None:
        entry = SamplerBatchEntry(score, text, decode_sampler_batch(model_id, score, text))
        if not isinstance(entry.record, BadRecord):  # an error is each request's own
            _ENTRIES.put(key, entry)
    return entry


def decode_sampler_batch(
    model_id: str, score: float, member: str
) -> SamplerBatchRecord | BadRecord:
    """One member as a record, or a ``BadRecord`` for it alone."""
    body: Any
    try:
        body = orjson.loads(member)
    except orjson.JSONDecodeError:
        try:
            # json accepts NaN and Infinity, which the record then drops field by field.
            body = json.loads(member)
        except (ValueError, RecursionError):
            return BadRecord(_KIND, f"{model_id}@{score!r}", "it is not JSON")
    if not isinstance(body, dict):
        return BadRecord(_KIND, f"{model_id}@{score!r}", "it is not a JSON object")
    try:
        return SamplerBatchRecord.from_json(model_id, body)
    except DecodeError as exc:
        ident = body.get("id")
        named = ident if isinstance(ident, str) and ident else f"{model_id}@{score!r}"
        return BadRecord(_KIND, named, str(exc))


def _bound(value: float) -> str | float:
    if value == math.inf:
        return "+inf"
    if value == -math.inf:
        return "-inf"
    return value


def _scan_size(req: SamplerBatchRequest) -> int:
    return req.limit + 1 + (_TIE_SLACK if req.after is not None else 0)


def _check(req: SamplerBatchRequest) -> None:
    if not keys.valid_id(req.model_id):
        raise InvalidInput("not a valid model id")
    if math.isnan(req.start) or math.isnan(req.end) or req.end < req.start:
        raise InvalidInput("the time window is not a window (NaN, or it ends before it starts)")
    if not 1 <= req.limit <= MAX_BATCHES:
        raise InvalidInput(f"limit must be between 1 and {MAX_BATCHES}")
    if req.after is not None and math.isnan(req.after[0]):
        raise InvalidInput("invalid resume position")

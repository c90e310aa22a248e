"""The Redis adapter: OpenRL's state (docs/redis-schema.md) read in batches.

Every method takes a batch of keys and costs one pipeline round trip (one per node on a
Cluster) whatever the batch size, returning one result per key in key order, ``None``
for a miss. Only index reads: hashes by key and sorted sets by range, never ``KEYS`` and
never ``SCAN``.

The in-memory twin is this class over an in-process fakeredis (``in_memory``): the demo
and unit tests exercise the real command path, and the twin cannot drift from it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from openrl_inspect.adapters.redis._client import (
    BACKEND,
    Pipe,
    RedisSettings,
    RoundTrips,
    connect,
    guarded,
    run,
)
from openrl_inspect.adapters.redis._model_index import decode_live, filtered, queue_live
from openrl_inspect.adapters.redis._pages import read_pages, score_pairs
from openrl_inspect.adapters.redis._rollups import decode_rollups, queue_rollups
from openrl_inspect.adapters.redis._session_index import owned
from openrl_inspect.core.errors import (
    BackendProtocolError,
    BadRecord,
    DecodeError,
    IndexesNotBuilt,
    SchemaVersionError,
)
from openrl_inspect.state import keys
from openrl_inspect.state.decode import MAX_INT
from openrl_inspect.state.filters import LiveAsk, LiveModels, ModelQuery, SessionQuery
from openrl_inspect.state.paging import Page, PageRequest
from openrl_inspect.state.records import (
    ModelRecord,
    OpRecord,
    PlacementRecord,
    SessionRecord,
    StepRecord,
    WorkerRecord,
)
from openrl_inspect.state.rollup import ModelRollup

if TYPE_CHECKING:
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import RedisCluster

_VERSION_CHECK_EVERY_S = 10.0
_NOT_BUILT = (
    "the model indexes are not built for data written before them (or by an older "
    "version, without the indexes this one reads); "
    "run `openrl-inspect reindex` with the recorder's credentials"
)


class StateStore(Protocol):
    """Reads of OpenRL's state. Batch in, one result per key out, in key order."""

    async def check_schema(self) -> None: ...

    async def ready(self) -> None: ...

    async def pages(self, requests: Sequence[PageRequest]) -> list[Page]: ...

    async def sessions(self, ids: Sequence[str]) -> list[SessionRecord | BadRecord | None]: ...

    async def models(self, ids: Sequence[str]) -> list[ModelRecord | BadRecord | None]: ...

    async def steps(
        self, keys: Sequence[tuple[str, int]]
    ) -> list[StepRecord | BadRecord | None]: ...

    async def ops(self, keys: Sequence[tuple[str, str]]) -> list[OpRecord | BadRecord | None]: ...

    async def op_models(self, op_ids: Sequence[str]) -> list[str | None]: ...

    async def workers(self, ids: Sequence[str]) -> list[WorkerRecord | BadRecord | None]: ...

    async def placements(
        self, keys: Sequence[tuple[str, str]]
    ) -> list[PlacementRecord | BadRecord | None]: ...

    async def rollups(
        self, requests: Sequence[tuple[str, int]]
    ) -> list[ModelRollup | BadRecord | None]: ...

    async def model_pages(self, queries: Sequence[ModelQuery]) -> list[Page]: ...

    async def session_pages(self, queries: Sequence[SessionQuery]) -> list[Page]: ...

    async def indexes_built(self) -> bool: ...

    async def live_models(self, ask: LiveAsk) -> LiveModels: ...


class RedisStateStore:
    """``StateStore`` over redis.asyncio, standalone or Cluster."""

    def __init__(
        self,
        client: aioredis.Redis | RedisCluster,
        *,
        timeout_s: float = 2.0,
        clock: Any = time.monotonic,
    ) -> None:
        self._client = client
        self._deadline = timeout_s
        self._clock = clock
        self._version_checked_at: float | None = None
        self._indexed_at: float | None = None  # when the indexes were last seen built
        self.trips = RoundTrips()

    @classmethod
    def from_settings(cls, settings: RedisSettings) -> RedisStateStore:
        # A round trip's deadline spans its wait for a pooled connection: a wait that
        # runs out is the pool's own (BACKEND_BUSY, retry), not a late Redis (TIMEOUT);
        # the command itself is bounded by the socket timeout.
        return cls(connect(settings), timeout_s=settings.pool_timeout_s + settings.timeout_s + 0.5)

    @classmethod
    def in_memory(cls, server: Any = None) -> RedisStateStore:
        """The twin: this adapter over an in-process fakeredis (shared via ``server``)."""
        # lazy: only the demo and the tests use fakeredis.
        import fakeredis

        client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
        return cls(client)

    @property
    def client(self) -> aioredis.Redis | RedisCluster:
        return self._client

    @property
    def deadline_s(self) -> float:
        """The deadline of one round trip (the settings' timeout and a margin)."""
        return self._deadline

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _run(self, build: Any) -> list[Any]:
        await self.check_schema()
        return await run(self._client, build, deadline_s=self._deadline, trips=self.trips)

    async def ready(self) -> None:
        """Readiness: reach Redis now and check the schema version, whatever the cache."""
        self._version_checked_at = None
        await self.check_schema()

    async def check_schema(self) -> None:
        """Refuse data written by a newer schema than this reader understands.

        Checked at most every few seconds, not per request: an upgrade of the writers
        is rare, and this keeps a request's round trips fixed.
        """
        now = self._clock()
        if self._version_checked_at is not None and (
            now - self._version_checked_at < _VERSION_CHECK_EVERY_S
        ):
            return
        self.trips.count += 1
        raw = await guarded(self._client.get(keys.SCHEMA_VERSION_KEY), self._deadline)
        if raw is not None:
            try:
                version = int(raw)
            except ValueError:
                raise BackendProtocolError(BACKEND, "schema version key is not a number") from None
            if version > keys.SCHEMA_VERSION:
                raise SchemaVersionError(
                    BACKEND,
                    f"state schema version {version} is newer than this inspector "
                    f"understands ({keys.SCHEMA_VERSION}); upgrade openrl-inspect",
                )
        self._version_checked_at = now

    async def indexes_built(self) -> bool:
        """Whether the model indexes are known complete (``oi:models:indexed``), or there
        is nothing yet to index; a yes is remembered as the schema check is, a no (or an
        empty store) asked again each time."""
        now = self._clock()
        if self._indexed_at is not None and now - self._indexed_at < _VERSION_CHECK_EVERY_S:
            return True
        raw = await self._run(lambda pipe: pipe.get(keys.INDEXES_KEY).get(keys.SCHEMA_VERSION_KEY))
        if raw[0] is None:
            # A store no recorder has written yet has nothing to index (its first writer
            # declares the indexes complete); asked again until then.
            return raw[1] is None
        try:
            version = int(raw[0])
        except ValueError:
            version = 0
        if version < keys.INDEXES_VERSION:
            return False  # complete once, before indexes this reader needs were added
        self._indexed_at = now
        return True

    # -- lists ---------------------------------------------------------------------

    async def model_pages(self, queries: Sequence[ModelQuery]) -> list[Page]:
        """Filtered model lists (``state.filters``), each counted exactly; one needing
        the model indexes is refused (``IndexesNotBuilt``) until they are known built."""
        if any(q.indexed for q in queries) and not await self.indexes_built():
            raise IndexesNotBuilt(BACKEND, _NOT_BUILT)
        return [await filtered(self._run, q) for q in queries]

    async def session_pages(self, queries: Sequence[SessionQuery]) -> list[Page]:
        """Owners' session lists (``state.filters.SessionQuery``), each counted exactly;
        refused (``IndexesNotBuilt``) until the indexes are known built."""
        if not await self.indexes_built():
            raise IndexesNotBuilt(BACKEND, _NOT_BUILT)
        return [await owned(self._run, q) for q in queries]

    async def live_models(self, ask: LiveAsk) -> LiveModels:
        """How many models are live, those (up to ``cap``) that last moved before
        ``quiet_before``, longest quiet first, those failed since ``failed_since``,
        newest first, and those with an op failed since ``failing_since`` or a pace score
        above ``slow_above``: one round trip."""
        if not await self.indexes_built():
            raise IndexesNotBuilt(BACKEND, _NOT_BUILT)
        raw = await self._run(partial(queue_live, ask=ask))
        return decode_live(raw, ask)

    async def pages(self, requests: Sequence[PageRequest]) -> list[Page]:
        return await read_pages(self._run, requests)

    # -- records ---------------------------------------------------------------------

    async def _run_records(self, build: Any) -> list[Any]:
        """Like ``_run``, but a command refused by Redis (a key of the wrong type) is
        that command's result, so it fails its own record and not the batch."""
        await self.check_schema()
        return await run(
            self._client, build, deadline_s=self._deadline, trips=self.trips, raise_on_error=False
        )

    async def sessions(self, ids: Sequence[str]) -> list[SessionRecord | BadRecord | None]:
        raw = await self._run_records(lambda pipe: [_hgetall(pipe, keys.session(i)) for i in ids])
        return [
            _record("session", SessionRecord.from_hash, h, {"id": i})
            for i, h in zip(ids, raw, strict=True)
        ]

    async def models(self, ids: Sequence[str]) -> list[ModelRecord | BadRecord | None]:
        def build(pipe: Pipe) -> None:
            for mid in ids:
                _hgetall(pipe, keys.model(mid))
                pipe.zrevrange(keys.steps(mid), 0, 0, withscores=True)
                pipe.zcard(keys.steps(mid))

        raw = await self._run_records(build)
        out: list[ModelRecord | BadRecord | None] = []
        for i, mid in enumerate(ids):
            h, latest, kept = raw[3 * i], raw[3 * i + 1], raw[3 * i + 2]
            if isinstance(latest, Exception) or isinstance(kept, Exception):
                out.append(BadRecord("model", mid, "its steps index has the wrong type"))
                continue
            pairs = score_pairs(latest)
            latest_step = pairs[0][1] if pairs else None

            def make(h: dict[str, str], n: float | None = latest_step, k: int = int(kept)) -> Any:
                return ModelRecord.from_hash(h, n, k)

            out.append(_record("model", make, h, {"id": mid}))
        return out

    async def steps(
        self, step_keys: Sequence[tuple[str, int]]
    ) -> list[StepRecord | BadRecord | None]:
        def build(pipe: Pipe) -> None:
            for mid, n in step_keys:
                _hgetall(pipe, keys.step(mid, n))
                pipe.zcard(keys.step_ops(mid, n))

        raw = await self._run_records(build)
        out: list[StepRecord | BadRecord | None] = []
        for i, (mid, n) in enumerate(step_keys):
            h, count = raw[2 * i], raw[2 * i + 1]
            if not 0 <= n <= MAX_INT:
                out.append(BadRecord("step", f"{mid}/{n}", "its number is out of range"))
            elif isinstance(count, Exception):
                out.append(BadRecord("step", f"{mid}/{n}", "its ops index has the wrong type"))
            elif not h and count == 0:
                out.append(None)
            else:

                def make(h: dict[str, str], mid: str = mid, n: int = n, c: int = count) -> Any:
                    return StepRecord.from_hash(mid, n, h, c)

                out.append(_record("step", make, h or {}, {}, ident=f"{mid}/{n}", keep=True))
        return out

    async def ops(self, op_keys: Sequence[tuple[str, str]]) -> list[OpRecord | BadRecord | None]:
        raw = await self._run_records(
            lambda pipe: [_hgetall(pipe, keys.op(m, o)) for m, o in op_keys]
        )
        return [
            _record("op", OpRecord.from_hash, h, {"id": o, "model_id": m})
            for (m, o), h in zip(op_keys, raw, strict=True)
        ]

    async def op_models(self, op_ids: Sequence[str]) -> list[str | None]:
        raw = await self._run(lambda pipe: [pipe.get(keys.op_index(o)) for o in op_ids])
        return [str(v) if v else None for v in raw]

    async def workers(self, ids: Sequence[str]) -> list[WorkerRecord | BadRecord | None]:
        raw = await self._run_records(lambda pipe: [_hgetall(pipe, keys.worker(w)) for w in ids])
        return [
            _record("worker", WorkerRecord.from_hash, h, {"id": w})
            for w, h in zip(ids, raw, strict=True)
        ]

    async def placements(
        self, placement_keys: Sequence[tuple[str, str]]
    ) -> list[PlacementRecord | BadRecord | None]:
        raw = await self._run_records(
            lambda pipe: [_hgetall(pipe, keys.placement(m, p)) for m, p in placement_keys]
        )
        return [
            _record("placement", PlacementRecord.from_hash, h, {"id": p, "model_id": m})
            for (m, p), h in zip(placement_keys, raw, strict=True)
        ]

    async def rollups(
        self, requests: Sequence[tuple[str, int]]
    ) -> list[ModelRollup | BadRecord | None]:
        """Each model's rollup with its newest ``n`` step entries (``(model id, n)``):
        two commands a model, one round trip for the batch."""
        raw = await self._run_records(partial(queue_rollups, requests=requests))
        return decode_rollups(requests, raw)


def _hgetall(pipe: Pipe, key: str) -> Any:
    # Undecoded: a value that is not UTF-8 fails its own record, not the whole answer.
    return pipe.execute_command("HGETALL", key, NEVER_DECODE=True)


def _record(
    kind: str,
    make: Any,
    raw: Any,
    names: dict[str, str],
    *,
    ident: str = "",
    keep: bool = False,
) -> Any:
    """One hash: the record, ``None`` if it does not exist (``keep`` decodes an empty one)
    or a ``BadRecord``; a field the key names (``names``) may be empty, never another."""
    ident = ident or names.get("id", "")
    if isinstance(raw, Exception):
        return BadRecord(kind, ident, "it is stored with the wrong Redis type")
    if not raw and not keep:
        return None
    try:
        h = _text_hash(raw)
        for name, value in names.items():
            if h.setdefault(name, value) in ("", value):
                h[name] = value
            else:
                raise DecodeError(f"field {name!r} names another record")
        return make(h)
    except DecodeError as exc:
        return BadRecord(kind, ident, str(exc))


def _text_hash(raw: dict[Any, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in raw.items():
        field = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise DecodeError(f"field {field[:40]!r} is not UTF-8 text") from None
        out[field] = str(value)
    return out

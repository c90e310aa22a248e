"""What each telemetry record writes, and how a batch of records becomes Redis commands.

A write function adds a record's effect to a :class:`Batch`; the batch turns all its
records into as few commands as possible (write combining) and the flusher sends them
as one pipeline. Combining is exact for what the records do:

- HSET fields of one key merge in record order (a later record's field wins), as
  successive HSETs would;
- ZADD and ZREM on one key keep, per member, the last operation (its score, or its
  removal), then send one ZADD and one ZREM;
- HSETNX keeps the first value per field (later ones would have been no-ops);
- SET keeps the last value; trims keep the widest cutoff; EXPIRE keeps the last TTL;
- EXPIREs, trims and the per-model Lua scripts run after the batch's other writes,
  so a key created in the batch gets its TTL, and a trim sees every step of the batch.

Every command is idempotent (HSET, HSETNX, ZADD, ZREM, SET, EXPIRE, trims, and scripts
that only trim or expire): replaying a batch after a failed or half-applied pipeline
leaves the same state as writing it once. Records that add a list entry (sampler
batches, client logs) carry a record id fixed when the record is taken from the buffer,
so a replay re-adds the same sorted-set member, not a copy.

Retention is enforced as the records are written, so nothing needs a sweeper: ended
models and closed sessions get TTLs, steps past the per-model cap are trimmed, capped
sorted sets keep their newest entries, global indexes drop entries older than their
retention.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from openrl_inspect.state import keys

DAY = 86_400.0

Command = tuple[Any, ...]


@dataclass(frozen=True)
class Retention:
    """How much history is kept. Env prefix ``OPENRL_INSPECT_RETENTION_``."""

    max_steps_per_model: int = 1000
    ended_model_ttl_s: float = 7 * DAY
    closed_session_ttl_s: float = 7 * DAY
    worker_ttl_s: float = 1 * DAY
    op_index_ttl_s: float = 30 * DAY
    # Trimming walks the oldest steps; doing it every few steps amortises it.
    trim_every_steps: int = 8
    # Capped per-model sorted sets: the newest entries are kept.
    max_sampler_batches_per_model: int = 10_000
    max_logs_per_model: int = 5_000
    # A client log message longer than this is cut (and marked ``truncated``).
    max_log_message_chars: int = 4_096
    # Recorder counters hashes (``oi:recorder:RID``) and their index.
    recorder_ttl_s: float = 1 * DAY


# Runs on the model's slot only (every key below shares its hash tag).
TRIM_STEPS = """
local p = ARGV[2]
local n = redis.call('ZCARD', KEYS[1])
local cap = tonumber(ARGV[1])
if n <= cap then return 0 end
local old = redis.call('ZRANGE', KEYS[1], 0, n - cap - 1)
for _, s in ipairs(old) do
  local opskey = p .. ':step:' .. s .. ':ops'
  for _, o in ipairs(redis.call('ZRANGE', opskey, 0, -1)) do
    redis.call('DEL', p .. ':op:' .. o)
    redis.call('ZREM', p .. ':ops:open', o)
  end
  redis.call('DEL', opskey, p .. ':step:' .. s)
end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - cap - 1)
return #old
"""

EXPIRE_MODEL = """
local p = ARGV[2]
local ttl = ARGV[1]
for _, s in ipairs(redis.call('ZRANGE', p .. ':steps', 0, -1)) do
  local opskey = p .. ':step:' .. s .. ':ops'
  for _, o in ipairs(redis.call('ZRANGE', opskey, 0, -1)) do
    redis.call('EXPIRE', p .. ':op:' .. o, ttl)
  end
  redis.call('EXPIRE', opskey, ttl)
  redis.call('EXPIRE', p .. ':step:' .. s, ttl)
end
for _, pl in ipairs(redis.call('ZRANGE', p .. ':placements', 0, -1)) do
  redis.call('EXPIRE', p .. ':placement:' .. pl, ttl)
end
for _, k in ipairs({':steps', ':ops:open', ':workers', ':placements', ':logs',
                    ':sampler:batches'}) do
  redis.call('EXPIRE', p .. k, ttl)
end
redis.call('EXPIRE', KEYS[1], ttl)
return 1
"""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def dumps(value: Any) -> str:
    """Compact JSON with sorted keys (orjson; json with ``str`` for exotic values)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def encode(values: Mapping[str, Any]) -> dict[str, str]:
    """Encode a mapping for HSET, skipping ``None`` so absent stays absent.

    The same encoding as ``state.records.encode`` (times and numbers as ``repr``,
    booleans as ``1``/``0``, structures as compact JSON), with a faster JSON encoder.
    """
    out: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        if value is True or value is False:
            out[name] = "1" if value else "0"
        elif isinstance(value, str):
            out[name] = value
        elif isinstance(value, int | float):
            out[name] = repr(value)
        else:
            out[name] = dumps(value)
    return out


class Batch:
    """Records' effects, combined per key, then emitted as a list of commands."""

    __slots__ = (
        "_ex",
        "_h",
        "_nx",
        "_s",
        "_sc",
        "_snx",
        "_tr",
        "_ts",
        "_z",
        "id_prefix",
        "r",
        "seq",
        "worker_id",
    )

    def __init__(self, r: Retention, id_prefix: str = "", worker_id: str | None = None) -> None:
        self.r = r
        self.id_prefix = id_prefix
        self.worker_id = worker_id
        self.seq = 0  # the current record's sequence number, set by whoever compiles
        self._h: dict[str, dict[str, str]] = {}
        self._nx: dict[tuple[str, str], str] = {}
        self._z: dict[str, dict[str, float | None]] = {}
        self._s: dict[str, tuple[str, int]] = {}
        self._snx: dict[str, str] = {}
        self._ts: dict[str, float] = {}
        self._tr: dict[str, int] = {}
        self._ex: dict[str, int] = {}
        self._sc: dict[tuple[str, str], tuple[Any, ...]] = {}

    def record_id(self) -> str:
        """A stable id for the current record: the same on every replay of its batch."""
        return f"{self.id_prefix}{self.seq}"

    # -- the operations a record can ask for ----------------------------------------------

    def hset(self, key: str, mapping: dict[str, str]) -> None:
        """Set fields; ``mapping`` is owned by the batch afterwards."""
        h = self._h.get(key)
        if h is None:
            self._h[key] = mapping
        else:
            h.update(mapping)

    def hset1(self, key: str, name: str, value: str) -> None:
        h = self._h.get(key)
        if h is None:
            self._h[key] = {name: value}
        else:
            h[name] = value

    def hsetnx(self, key: str, name: str, value: str) -> None:
        self._nx.setdefault((key, name), value)

    def zadd(self, key: str, member: str, score: float) -> None:
        z = self._z.get(key)
        if z is None:
            self._z[key] = {member: score}
        else:
            z[member] = score

    def zrem(self, key: str, member: str) -> None:
        z = self._z.get(key)
        if z is None:
            self._z[key] = {member: None}
        else:
            z[member] = None

    def set(self, key: str, value: str, ex: int) -> None:
        self._s[key] = (value, ex)

    def set_nx(self, key: str, value: str) -> None:
        self._snx.setdefault(key, value)

    def trim_score(self, key: str, below: float) -> None:
        """Remove members scored at or below ``below`` (the widest cutoff wins)."""
        old = self._ts.get(key)
        if old is None or below > old:
            self._ts[key] = below

    def trim_rank(self, key: str, keep: int) -> None:
        """Keep only the ``keep`` highest-scored members."""
        self._tr[key] = keep

    def expire(self, key: str, ttl: int) -> None:
        self._ex[key] = ttl

    def script(self, script: str, key: str, *args: Any) -> None:
        """Run a per-model script once per batch, after the batch's other writes."""
        self._sc[(script, key)] = args

    # -- emission -------------------------------------------------------------------------

    def __len__(self) -> int:
        return (
            len(self._h)
            + len(self._nx)
            + len(self._z)
            + len(self._s)
            + len(self._snx)
            + len(self._ts)
            + len(self._tr)
            + len(self._ex)
            + len(self._sc)
        )

    def commands(self) -> list[Command]:
        out: list[Command] = []
        for key, value in self._snx.items():
            out.append(("SET", key, value, "NX"))
        for key, fields in self._h.items():
            flat: list[str] = []
            for name, v in fields.items():
                flat.append(name)
                flat.append(v)
            out.append(("HSET", key, *flat))
        for (key, name), v in self._nx.items():
            out.append(("HSETNX", key, name, v))
        for key, members in self._z.items():
            add: list[Any] = []
            rem: list[str] = []
            for member, score in members.items():
                if score is None:
                    rem.append(member)
                else:
                    add.append(score)
                    add.append(member)
            if add:
                out.append(("ZADD", key, *add))
            if rem:
                out.append(("ZREM", key, *rem))
        for key, (value, ex) in self._s.items():
            out.append(("SET", key, value, "EX", ex))
        for key, below in self._ts.items():
            out.append(("ZREMRANGEBYSCORE", key, "-inf", below))
        for key, keep in self._tr.items():
            out.append(("ZREMRANGEBYRANK", key, 0, -keep - 1))
        for key, ttl in self._ex.items():
            out.append(("EXPIRE", key, ttl))
        for (script, key), args in self._sc.items():
            out.append(("EVAL", script, 1, key, *args))
        return out


def _model_prefix(mid: str) -> str:
    return keys.model(mid).removesuffix(":model")


# -- status writes (not records) -------------------------------------------------------------


def schema_version(b: Batch) -> None:
    # NX: a writer must never downgrade what a newer writer declared.
    b.set_nx(keys.SCHEMA_VERSION_KEY, str(keys.SCHEMA_VERSION))


def recorder_counters(b: Batch, rid: str, fields: Mapping[str, Any], at: float) -> None:
    ttl = int(b.r.recorder_ttl_s)
    b.hset(keys.recorder(rid), encode({**fields, "id": rid, "updated_at": at}))
    b.expire(keys.recorder(rid), ttl)
    b.zadd(keys.RECORDERS, rid, at)
    b.trim_score(keys.RECORDERS, at - b.r.recorder_ttl_s)


# -- records ---------------------------------------------------------------------------------


def session_opened(b: Batch, sid: str, owner: str, client: Mapping[str, Any], at: float) -> None:
    b.hset(
        keys.session(sid),
        encode(
            {
                "id": sid,
                "owner": owner,
                "client": dict(client),
                "created_at": at,
                "last_activity_at": at,
                "state": "live",
            }
        ),
    )
    b.zadd(keys.SESSIONS_LIVE, sid, at)


def session_activity(b: Batch, sid: str, at: float) -> None:
    b.hset1(keys.session(sid), "last_activity_at", repr(at))


def session_closed(b: Batch, sid: str, at: float) -> None:
    r = b.r
    ttl = int(r.closed_session_ttl_s)
    b.hset(
        keys.session(sid),
        encode({"state": "closed", "closed_at": at, "last_activity_at": at}),
    )
    b.zrem(keys.SESSIONS_LIVE, sid)
    b.zadd(keys.SESSIONS_CLOSED, sid, at)
    b.trim_score(keys.SESSIONS_CLOSED, at - r.closed_session_ttl_s)
    b.expire(keys.session(sid), ttl)
    b.expire(keys.session_models(sid), ttl)


def model_created(
    b: Batch,
    mid: str,
    sid: str,
    base_model: str,
    lora: Mapping[str, Any],
    settings: Mapping[str, Any],
    at: float,
) -> None:
    b.hset(
        keys.model(mid),
        encode(
            {
                "id": mid,
                "session_id": sid,
                "base_model": base_model,
                "lora": dict(lora),
                "settings": dict(settings),
                "created_at": at,
                "state": "waiting",
                "state_at": at,
                "waiting_at": at,
            }
        ),
    )
    b.zadd(keys.session_models(sid), mid, at)
    b.zadd(keys.models_in_state("waiting"), mid, at)
    session_activity(b, sid, at)


def model_state(b: Batch, mid: str, state: str, at: float, reason: str | None = None) -> None:
    if state not in keys.MODEL_STATES:
        raise ValueError(f"unknown model state {state!r}")
    fields: dict[str, Any] = {"state": state, "state_at": at, f"{state}_at": at}
    if reason is not None:
        fields["failure_reason"] = reason
    b.hset(keys.model(mid), encode(fields))
    for other in keys.MODEL_STATES:
        if other != state:
            b.zrem(keys.models_in_state(other), mid)
    b.zadd(keys.models_in_state(state), mid, at)
    if state in keys.TERMINAL_STATES:
        ttl = b.r.ended_model_ttl_s
        b.trim_score(keys.models_in_state(state), at - ttl)
        b.script(EXPIRE_MODEL, keys.model(mid), int(ttl), _model_prefix(mid))


def op_accepted(
    b: Batch,
    mid: str,
    oid: str,
    kind: str,
    step: int,
    at: float,
    session_id: str | None = None,
) -> None:
    r = b.r
    sat = repr(at)
    b.hset(
        keys.op(mid, oid),
        {
            "id": oid,
            "model_id": mid,
            "kind": kind,
            "step": repr(step),
            "status": "accepted",
            "accepted_at": sat,
        },
    )
    b.zadd(keys.steps(mid), str(step), step)
    b.hsetnx(keys.step(mid, step), "started_at", sat)
    b.zadd(keys.step_ops(mid, step), oid, at)
    b.zadd(keys.open_ops(mid), oid, at)
    b.set(keys.op_index(oid), mid, int(r.op_index_ttl_s))
    if session_id is not None:
        b.hset1(keys.session(session_id), "last_activity_at", sat)
    if step % r.trim_every_steps == 0:
        b.script(TRIM_STEPS, keys.steps(mid), r.max_steps_per_model, _model_prefix(mid))


def op_enqueued(b: Batch, mid: str, oid: str, at: float) -> None:
    b.hset(keys.op(mid, oid), {"status": "queued", "enqueued_at": repr(at)})


def op_started(b: Batch, mid: str, oid: str, worker_id: str, at: float) -> None:
    b.hset(
        keys.op(mid, oid),
        {"status": "running", "started_at": repr(at), "worker_id": worker_id},
    )
    b.zadd(keys.model_workers(mid), worker_id, at)


def op_finished(
    b: Batch,
    mid: str,
    oid: str,
    status: str,
    at: float,
    metrics: Mapping[str, Any] | None = None,
    error: str | None = None,
) -> None:
    fields = {"status": status, "finished_at": repr(at)}
    if metrics:
        fields["metrics"] = dumps(metrics)
    if error is not None:
        fields["error"] = error
    b.hset(keys.op(mid, oid), fields)
    b.zrem(keys.open_ops(mid), oid)


def step_metrics(
    b: Batch,
    mid: str,
    step: int,
    metrics: Mapping[str, Any],
    at: float,
    finished: bool = False,
) -> None:
    fields = {"metrics": dumps(metrics)}
    if finished:
        fields["finished_at"] = repr(at)
    b.zadd(keys.steps(mid), str(step), step)
    b.hset(keys.step(mid, step), fields)


def heartbeat(
    b: Batch,
    wid: str,
    role: str,
    pod: str,
    node: str,
    model_id: str | None,
    gpu_ids: Sequence[str],
    payload: Mapping[str, Any],
    at: float,
) -> None:
    r = b.r
    b.hset(
        keys.worker(wid),
        encode(
            {
                "id": wid,
                "role": role,
                "pod": pod,
                "node": node,
                "model_id": model_id,
                "gpu_ids": list(gpu_ids),
                "payload": dict(payload),
                "last_heartbeat_at": at,
            }
        ),
    )
    b.hsetnx(keys.worker(wid), "started_at", repr(at))
    b.expire(keys.worker(wid), int(r.worker_ttl_s))
    b.zadd(keys.WORKERS, wid, at)
    b.trim_score(keys.WORKERS, at - r.worker_ttl_s)
    if model_id is not None:
        b.zadd(keys.model_workers(model_id), wid, at)


def placement_admitted(
    b: Batch,
    mid: str,
    pid: str,
    workload: str,
    namespace: str,
    pods: Sequence[str],
    node: str,
    gpu_ids: Sequence[str],
    at: float,
) -> None:
    b.hset(
        keys.placement(mid, pid),
        encode(
            {
                "id": pid,
                "model_id": mid,
                "workload": workload,
                "namespace": namespace,
                "pods": list(pods),
                "node": node,
                "gpu_ids": list(gpu_ids),
                "admitted_at": at,
            }
        ),
    )
    b.zadd(keys.placements(mid), pid, at)


def placement_released(b: Batch, mid: str, pid: str, at: float) -> None:
    b.hset1(keys.placement(mid, pid), "released_at", repr(at))


def sampler_batch(
    b: Batch,
    mid: str,
    batch_size: int,
    prompt_tokens: int,
    generated_tokens: int,
    latency_s: float,
    queue_depth: int,
    worker_id: str | None,
    op_id: str | None,
    at: float,
) -> None:
    wid = worker_id or b.worker_id
    entry: dict[str, Any] = {
        "id": b.record_id(),
        "t": at,
        "batch_size": batch_size,
        "prompt_tokens": prompt_tokens,
        "generated_tokens": generated_tokens,
        "latency_s": latency_s,
        "queue_depth": queue_depth,
    }
    if wid is not None:
        entry["worker"] = wid
        b.zadd(keys.model_workers(mid), wid, at)
    if op_id is not None:
        entry["op_id"] = op_id
    key = keys.sampler_batches(mid)
    b.zadd(key, dumps(entry), at)
    b.trim_rank(key, b.r.max_sampler_batches_per_model)


def level_name(level: str | int) -> str:
    """``logging`` levels (numbers or names) as one of ``LOG_LEVELS``."""
    if isinstance(level, int):
        name = logging.getLevelName(level)
        if isinstance(name, str) and name in LOG_LEVELS:
            return name
        if level >= logging.CRITICAL:
            return "CRITICAL"
        for n in reversed(LOG_LEVELS):
            if level >= logging.getLevelName(n):
                return n
        return "DEBUG"
    upper = str(level).upper()
    return "WARNING" if upper == "WARN" else upper if upper in LOG_LEVELS else "INFO"


def client_log(
    b: Batch,
    mid: str,
    level: str | int,
    message: str,
    fields: Mapping[str, Any] | None,
    at: float,
) -> None:
    cap = b.r.max_log_message_chars
    msg = str(message)
    entry: dict[str, Any] = {
        "id": b.record_id(),
        "t": at,
        "level": level_name(level),
        "msg": msg[:cap],
    }
    if len(msg) > cap:
        entry["truncated"] = True
    if fields:
        entry["fields"] = dict(fields)
    if b.worker_id is not None:
        entry["worker"] = b.worker_id
    key = keys.logs(mid)
    b.zadd(key, dumps(entry), at)
    b.trim_rank(key, b.r.max_logs_per_model)

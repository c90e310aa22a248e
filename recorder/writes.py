"""What each telemetry record writes: the commands it queues on a pipeline.

Every write is idempotent (HSET, ZADD, SET, EXPIRE): replaying a record after a
failed flush leaves the same state as writing it once. Retention is enforced as the
records are written, so nothing needs a sweeper: ended models and closed sessions get
TTLs, steps past the per-model cap are trimmed, global indexes drop entries older than
their retention.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openrl_inspect.adapters.redis_client import Pipe
from openrl_inspect.state import keys
from openrl_inspect.state.records import encode

DAY = 86_400.0


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
for _, k in ipairs({':steps', ':ops:open', ':workers', ':placements'}) do
  redis.call('EXPIRE', p .. k, ttl)
end
redis.call('EXPIRE', KEYS[1], ttl)
return 1
"""


def _model_prefix(mid: str) -> str:
    return keys.model(mid).removesuffix(":model")


def schema_version(pipe: Pipe, r: Retention) -> None:
    # NX: a writer must never downgrade what a newer writer declared.
    pipe.set(keys.SCHEMA_VERSION_KEY, keys.SCHEMA_VERSION, nx=True)


def session_opened(
    pipe: Pipe, r: Retention, sid: str, owner: str, client: Mapping[str, Any], at: float
) -> None:
    pipe.hset(
        keys.session(sid),
        mapping=encode(
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
    pipe.zadd(keys.SESSIONS_LIVE, {sid: at})


def session_activity(pipe: Pipe, r: Retention, sid: str, at: float) -> None:
    pipe.hset(keys.session(sid), "last_activity_at", repr(at))


def session_closed(pipe: Pipe, r: Retention, sid: str, at: float) -> None:
    ttl = int(r.closed_session_ttl_s)
    pipe.hset(
        keys.session(sid),
        mapping=encode({"state": "closed", "closed_at": at, "last_activity_at": at}),
    )
    pipe.zrem(keys.SESSIONS_LIVE, sid)
    pipe.zadd(keys.SESSIONS_CLOSED, {sid: at})
    pipe.zremrangebyscore(keys.SESSIONS_CLOSED, "-inf", at - r.closed_session_ttl_s)
    pipe.expire(keys.session(sid), ttl)
    pipe.expire(keys.session_models(sid), ttl)


def model_created(
    pipe: Pipe,
    r: Retention,
    mid: str,
    sid: str,
    base_model: str,
    lora: Mapping[str, Any],
    settings: Mapping[str, Any],
    at: float,
) -> None:
    pipe.hset(
        keys.model(mid),
        mapping=encode(
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
    pipe.zadd(keys.session_models(sid), {mid: at})
    pipe.zadd(keys.models_in_state("waiting"), {mid: at})
    session_activity(pipe, r, sid, at)


def model_state(
    pipe: Pipe, r: Retention, mid: str, state: str, at: float, reason: str | None = None
) -> None:
    if state not in keys.MODEL_STATES:
        raise ValueError(f"unknown model state {state!r}")
    fields: dict[str, Any] = {"state": state, "state_at": at, f"{state}_at": at}
    if reason is not None:
        fields["failure_reason"] = reason
    pipe.hset(keys.model(mid), mapping=encode(fields))
    for other in keys.MODEL_STATES:
        if other != state:
            pipe.zrem(keys.models_in_state(other), mid)
    pipe.zadd(keys.models_in_state(state), {mid: at})
    if state in keys.TERMINAL_STATES:
        ttl = r.ended_model_ttl_s
        pipe.zremrangebyscore(keys.models_in_state(state), "-inf", at - ttl)
        pipe.eval(EXPIRE_MODEL, 1, keys.model(mid), int(ttl), _model_prefix(mid))


def op_accepted(
    pipe: Pipe,
    r: Retention,
    mid: str,
    oid: str,
    kind: str,
    step: int,
    at: float,
    session_id: str | None = None,
) -> None:
    pipe.hset(
        keys.op(mid, oid),
        mapping=encode(
            {
                "id": oid,
                "model_id": mid,
                "kind": kind,
                "step": step,
                "status": "accepted",
                "accepted_at": at,
            }
        ),
    )
    pipe.zadd(keys.steps(mid), {str(step): step})
    pipe.hsetnx(keys.step(mid, step), "started_at", repr(at))
    pipe.zadd(keys.step_ops(mid, step), {oid: at})
    pipe.zadd(keys.open_ops(mid), {oid: at})
    pipe.set(keys.op_index(oid), mid, ex=int(r.op_index_ttl_s))
    if session_id is not None:
        session_activity(pipe, r, session_id, at)
    if step % r.trim_every_steps == 0:
        pipe.eval(TRIM_STEPS, 1, keys.steps(mid), r.max_steps_per_model, _model_prefix(mid))


def op_enqueued(pipe: Pipe, r: Retention, mid: str, oid: str, at: float) -> None:
    pipe.hset(keys.op(mid, oid), mapping=encode({"status": "queued", "enqueued_at": at}))


def op_started(pipe: Pipe, r: Retention, mid: str, oid: str, worker_id: str, at: float) -> None:
    pipe.hset(
        keys.op(mid, oid),
        mapping=encode({"status": "running", "started_at": at, "worker_id": worker_id}),
    )
    pipe.zadd(keys.model_workers(mid), {worker_id: at})


def op_finished(
    pipe: Pipe,
    r: Retention,
    mid: str,
    oid: str,
    status: str,
    at: float,
    metrics: Mapping[str, Any] | None = None,
    error: str | None = None,
) -> None:
    pipe.hset(
        keys.op(mid, oid),
        mapping=encode(
            {
                "status": status,
                "finished_at": at,
                "metrics": dict(metrics) if metrics else None,
                "error": error,
            }
        ),
    )
    pipe.zrem(keys.open_ops(mid), oid)


def step_metrics(
    pipe: Pipe,
    r: Retention,
    mid: str,
    step: int,
    metrics: Mapping[str, Any],
    at: float,
    finished: bool = False,
) -> None:
    fields: dict[str, Any] = {"metrics": dict(metrics)}
    if finished:
        fields["finished_at"] = at
    pipe.zadd(keys.steps(mid), {str(step): step})
    pipe.hset(keys.step(mid, step), mapping=encode(fields))


def heartbeat(
    pipe: Pipe,
    r: Retention,
    wid: str,
    role: str,
    pod: str,
    node: str,
    model_id: str | None,
    gpu_ids: Sequence[str],
    payload: Mapping[str, Any],
    at: float,
) -> None:
    pipe.hset(
        keys.worker(wid),
        mapping=encode(
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
    pipe.hsetnx(keys.worker(wid), "started_at", repr(at))
    pipe.expire(keys.worker(wid), int(r.worker_ttl_s))
    pipe.zadd(keys.WORKERS, {wid: at})
    pipe.zremrangebyscore(keys.WORKERS, "-inf", at - r.worker_ttl_s)
    if model_id is not None:
        pipe.zadd(keys.model_workers(model_id), {wid: at})


def placement_admitted(
    pipe: Pipe,
    r: Retention,
    mid: str,
    pid: str,
    workload: str,
    namespace: str,
    pods: Sequence[str],
    node: str,
    gpu_ids: Sequence[str],
    at: float,
) -> None:
    pipe.hset(
        keys.placement(mid, pid),
        mapping=encode(
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
    pipe.zadd(keys.placements(mid), {pid: at})


def placement_released(pipe: Pipe, r: Retention, mid: str, pid: str, at: float) -> None:
    pipe.hset(keys.placement(mid, pid), "released_at", repr(at))

"""What each kind of record writes: the table of kind -> key writes.

A write function adds one record's effect to a :class:`~._batch.Batch` (which combines
the writes of a batch per key). ``WRITES`` maps each record kind, the name of the
record method, to its write function; ``LOW_VALUE`` names the kinds shed first.

Every command is idempotent (HSET, HSETNX, ZADD, ZREM, SET, EXPIRE, trims, scripts that
only trim or expire, and the rollup script, which rebuilds what it keeps from the stored
records, see ``_rollup``): replaying a batch after a failed or half-applied pipeline
leaves the same state as writing it once. Records that add a list entry (sampler
batches, client logs) carry a record id fixed when the record is taken from the buffer,
so a replay re-adds the same sorted-set member, not a copy.

Retention is enforced as the records are written, so nothing needs a sweeper: ended
models and closed sessions get TTLs, steps past the per-model cap are trimmed, capped
sorted sets keep their newest entries, global indexes drop entries older than their
retention. Hash values use the one record encoding, ``state.records.encode``.

Enumerated arguments are checked against the domain's vocabularies (``_vocabulary``).
The records that add a list entry (sampler batches, client logs) are in ``_entries``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from openrl_inspect.core.domain import TERMINAL_STATES, ModelState, OpStatus, SessionState
from openrl_inspect.recorder._batch import Batch
from openrl_inspect.recorder._entries import client_log, sampler_batch
from openrl_inspect.recorder._scripts import EXPIRE_MODEL, TRIM_STEPS, model_prefix
from openrl_inspect.recorder._vocabulary import OP_STATUSES, allowed
from openrl_inspect.state import keys, rollup
from openrl_inspect.state.records import dumps, encode

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
                "state": SessionState.LIVE,
            }
        ),
    )
    b.zadd(keys.SESSIONS_LIVE, sid, at)
    b.zadd(keys.sessions_of_owner(owner), sid, at)
    _remember(b.owners, sid, owner)


# How many sessions' owners a recorder remembers for the models created under them.
MAX_OWNERS = 65_536


def _remember(owners: dict[str, str], sid: str, owner: str) -> None:
    owners.pop(sid, None)
    owners[sid] = owner
    if len(owners) > MAX_OWNERS:
        del owners[next(iter(owners))]  # the least recently opened


def session_activity(b: Batch, sid: str, at: float) -> None:
    b.hset1(keys.session(sid), "last_activity_at", repr(at))


def session_closed(b: Batch, sid: str, at: float) -> None:
    r = b.r
    ttl = int(r.closed_session_ttl_s)
    b.hset(
        keys.session(sid),
        encode({"state": SessionState.CLOSED, "closed_at": at, "last_activity_at": at}),
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
    owner: str | None = None,
) -> None:
    fields: dict[str, Any] = {
        "id": mid,
        "session_id": sid,
        "base_model": base_model,
        "lora": dict(lora),
        "settings": dict(settings),
        "created_at": at,
        "waiting_at": at,
    }
    model_record(b, mid, fields, ModelState.WAITING, at)
    # The rollup begins with the model: a reader trusts only a rollup that saw it all.
    b.hset1(keys.rollup(mid), "v", rollup.VERSION)
    b.zadd(keys.session_models(sid), mid, at)
    # The model indexes (by session above, by state and live in model_record): an owner
    # not given and not seen opening the session here is left to ``reindex``.
    owner = owner if owner is not None else b.owners.get(sid)
    if owner is not None:
        b.zadd(keys.models_of_owner(owner), mid, at)
    b.zadd(keys.models_of_base(base_model), mid, at)
    session_activity(b, sid, at)


def model_record(b: Batch, mid: str, fields: dict[str, Any], state: str, at: float) -> None:
    """A model hash's fields, its state, and the model's indexes that follow from them:
    the one place where a model record's write queues its related writes."""
    allowed("model state", state, keys.MODEL_STATES)
    b.hset(keys.model(mid), encode({**fields, "state": state, "state_at": at}))
    for other in keys.MODEL_STATES:
        if other != state:
            b.zrem(keys.models_in_state(other), mid)
    b.zadd(keys.models_in_state(state), mid, at)
    if state in TERMINAL_STATES:
        b.zrem(keys.MODELS_LIVE, mid)
        # Only live models need a person for moving badly (a failed one is listed apart).
        b.zrem(keys.MODELS_FAILING, mid)
        b.zrem(keys.MODELS_PACE, mid)
        b.paces.forget(mid)
    else:
        b.zadd(keys.MODELS_LIVE, mid, at)


def progress(b: Batch, mid: str, at: float) -> None:
    """The model moved: its score in the live index rises (a model no longer live stays
    out), so the models that stopped are the lowest-scored there."""
    b.touch(keys.MODELS_LIVE, mid, at)


def model_state(b: Batch, mid: str, state: str, at: float, reason: str | None = None) -> None:
    fields: dict[str, Any] = {f"{state}_at": at}
    if reason is not None:
        fields["failure_reason"] = reason
    model_record(b, mid, fields, state, at)
    if state in TERMINAL_STATES:
        ttl = b.r.ended_model_ttl_s
        b.trim_score(keys.models_in_state(state), at - ttl)
        b.script(EXPIRE_MODEL, keys.model(mid), int(ttl), model_prefix(mid))


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
            "status": OpStatus.ACCEPTED,
            "accepted_at": sat,
        },
    )
    b.zadd(keys.steps(mid), str(step), step)
    b.hsetnx(keys.step(mid, step), "started_at", sat)
    b.zadd(keys.step_ops(mid, step), oid, at)
    b.zadd(keys.open_ops(mid), oid, at)
    # Every model's open ops in one index: attention finds an op hung in a model that
    # keeps moving by its oldest end, without reading every model's ``ops:open``.
    b.zadd(keys.OPS_OPEN, oid, at)
    b.trim_score(keys.OPS_OPEN, at - r.open_ops_index_s)
    b.set(keys.op_index(oid), mid, int(r.op_index_ttl_s))
    if session_id is not None:
        b.hset1(keys.session(session_id), "last_activity_at", sat)
    b.rollup_step(mid, step, oid)
    progress(b, mid, at)
    if step % r.trim_every_steps == 0:
        b.script(TRIM_STEPS, keys.steps(mid), r.max_steps_per_model, model_prefix(mid))


def op_enqueued(b: Batch, mid: str, oid: str, at: float) -> None:
    b.hset(keys.op(mid, oid), {"status": OpStatus.QUEUED, "enqueued_at": repr(at)})
    b.rollup_op(mid, oid)


def op_started(b: Batch, mid: str, oid: str, worker_id: str, at: float) -> None:
    b.hset(
        keys.op(mid, oid),
        {"status": OpStatus.RUNNING, "started_at": repr(at), "worker_id": worker_id},
    )
    b.zadd(keys.model_workers(mid), worker_id, at)
    b.rollup_op(mid, oid)
    progress(b, mid, at)


def op_finished(
    b: Batch,
    mid: str,
    oid: str,
    status: str,
    at: float,
    metrics: Mapping[str, Any] | None = None,
    error: str | None = None,
) -> None:
    allowed("op status", status, OP_STATUSES)
    fields = {"status": status, "finished_at": repr(at)}
    if metrics:
        fields["metrics"] = dumps(metrics)
    if error is not None:
        fields["error"] = error
    b.hset(keys.op(mid, oid), fields)
    b.zrem(keys.open_ops(mid), oid)
    b.zrem(keys.OPS_OPEN, oid)
    if status == OpStatus.FAILED:
        # The model's last failure (only forward: records from several processes, in
        # any order, leave the latest); the recent end is what attention reads.
        b.raise_score(keys.MODELS_FAILING, mid, at)
        b.trim_score(keys.MODELS_FAILING, at - b.r.failing_index_s)
    b.rollup_op(mid, oid)
    progress(b, mid, at)


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
        pace = b.paces.finished(mid, step, at)
        if pace is not None:
            b.zadd(keys.MODELS_PACE, mid, pace)
    b.zadd(keys.steps(mid), str(step), step)
    b.hset(keys.step(mid, step), fields)
    b.rollup_step(mid, step)
    progress(b, mid, at)


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


Write = Callable[..., None]

# kind (the record method's name) -> what its record writes
WRITES: Mapping[str, Write] = {
    "session_opened": session_opened,
    "session_closed": session_closed,
    "model_created": model_created,
    "model_state": model_state,
    "op_accepted": op_accepted,
    "op_enqueued": op_enqueued,
    "op_started": op_started,
    "op_finished": op_finished,
    "step_metrics": step_metrics,
    "heartbeat": heartbeat,
    "placement_admitted": placement_admitted,
    "placement_released": placement_released,
    "sampler_batch": sampler_batch,
    "client_log": client_log,
}

# Kinds dropped first when the buffer passes the shed level: each is superseded or
# summarised by the next.
LOW_VALUE: frozenset[str] = frozenset({"heartbeat", "sampler_batch", "client_log"})

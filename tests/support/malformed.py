"""A small hand-written state with one record of each kind spoiled in one way.

Each list holds three records, newest first: a good one, the bad one, a good one, so a
spoiled record sits at index 1 of its list between two siblings that must stand.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from openrl_inspect.state import keys

NOW = 1_700_000_000.0
MODEL = "m-good"
STEP = 1

Spoil = Callable[[Any], Awaitable[Any]]


@dataclass(frozen=True)
class Case:
    """``spoil`` corrupts ``bad_id`` (a record of the list at ``path``) after seeding."""

    name: str
    query: str
    path: tuple[str | int, ...]  # where the list's connection is in `data`
    bad_id: str
    spoil: Spoil
    index: int = 1  # where the bad record sorts in its list


SESSIONS = "{ sessions { nodes { id owner state createdAt lastActivityAt closedAt client } } }"
MODELS = "{ models(state: ACTIVE) { nodes { id state stateSince stepCount latestStep lora settings transitions { state at } baseModel } } }"
SESSION_MODELS = '{ session(id: "s-good1") { models { nodes { id state stepCount lora } } } }'
STEPS = f'{{ model(id: "{MODEL}") {{ steps {{ nodes {{ number startedAt metrics opCount }} }} }} }}'
OPS = (
    f'{{ model(id: "{MODEL}") {{ step(number: {STEP}) {{ ops {{ nodes '
    "{ id status health step metrics acceptedAt queueWaitSeconds } } } } }"
)
OPEN_OPS = f'{{ model(id: "{MODEL}") {{ openOps {{ nodes {{ id status health step }} }} }} }}'
WORKERS = "{ workers { nodes { id gpuIds payload lastHeartbeatAt alive } } }"


async def seed(r: Any) -> None:
    """Three sessions, models, steps, ops and workers; the middle one of each is 'bad'."""
    for n, sid in enumerate(["s-good2", "s-bad", "s-good1"]):
        await r.zadd(keys.SESSIONS_LIVE, {sid: NOW + n})
        await r.hset(keys.session(sid), mapping=_session(sid, NOW + n))
    for n, mid in enumerate(["m-good2", "m-bad", MODEL]):
        await r.zadd(keys.models_in_state("active"), {mid: NOW + n})
        await r.zadd(keys.session_models("s-good1"), {mid: NOW + n})
        await r.hset(keys.model(mid), mapping=_model(mid, NOW + n))
    for n in range(3):  # steps 0, 1, 2; step 1 is the bad one
        await r.zadd(keys.steps(MODEL), {f"{n}": n})
        await r.hset(keys.step(MODEL, n), mapping=_step(NOW + n))
    for n, oid in enumerate(["o-good1", "o-bad", "o-good2"]):  # oldest first
        await r.zadd(keys.step_ops(MODEL, STEP), {oid: NOW + n})
        await r.zadd(keys.open_ops(MODEL), {oid: NOW + n})
        await r.hset(keys.op(MODEL, oid), mapping=_op(oid, NOW + n))
    for n, wid in enumerate(["w-good2", "w-bad", "w-good1"]):
        await r.zadd(keys.WORKERS, {wid: NOW + n})
        await r.hset(keys.worker(wid), mapping=_worker(wid, NOW + n))


def _session(sid: str, at: float) -> dict[str, str]:
    return {
        "id": sid,
        "owner": "alice",
        "client": '{"sdk": "1.0"}',
        "created_at": repr(at),
        "last_activity_at": repr(at),
        "state": "live",
    }


def _model(mid: str, at: float) -> dict[str, str]:
    return {
        "id": mid,
        "session_id": "s-good1",
        "base_model": "Qwen",
        "lora": '{"rank": 8}',
        "settings": "{}",
        "state": "active",
        "state_at": repr(at),
        "active_at": repr(at),
        "created_at": repr(at),
    }


def _step(at: float) -> dict[str, str]:
    return {"started_at": repr(at), "finished_at": repr(at + 1), "metrics": '{"loss": 0.5}'}


def _op(oid: str, at: float) -> dict[str, str]:
    return {
        "id": oid,
        "model_id": MODEL,
        "kind": "forward_backward",
        "step": str(STEP),
        "status": "running",
        "accepted_at": repr(at),
        "started_at": repr(at + 1),
        "worker_id": "w-good1",
        "metrics": "{}",
    }


def _worker(wid: str, at: float) -> dict[str, str]:
    return {
        "id": wid,
        "role": "trainer",
        "pod": "p",
        "node": "n",
        "model_id": MODEL,
        "gpu_ids": '["GPU-1"]',
        "started_at": repr(at),
        "last_heartbeat_at": repr(at),
        "payload": "{}",
    }


def field(key: str, name: str, value: str | bytes) -> Spoil:
    async def spoil(r: Any) -> None:
        await r.hset(key, name, value)

    return spoil


def retype(key: str, kind: str) -> Spoil:
    """Replace a record's hash by a value of another Redis type."""

    async def spoil(r: Any) -> None:
        await r.delete(key)
        if kind == "string":
            await r.set(key, "x")
        elif kind == "list":
            await r.rpush(key, "x")
        elif kind == "set":
            await r.sadd(key, "x")
        else:
            await r.zadd(key, {"x": 1})

    return spoil


def score(index: str, member: str, value: float) -> Spoil:
    async def spoil(r: Any) -> None:
        await r.zadd(index, {member: value})

    return spoil


def bomb(depth: int) -> str:
    return "[" * depth + "]" * depth

"""The records that add a list entry: sampler batches and client logs.

Each adds one member to a model's capped sorted set (scored by its time, the newest kept)
and is among the kinds shed first (``_writes.LOW_VALUE``). A member carries a record id
fixed when the record is taken from the buffer, so a replay of its batch re-adds the same
member, not a copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openrl_inspect.recorder._batch import Batch
from openrl_inspect.recorder._vocabulary import level_name
from openrl_inspect.state import keys
from openrl_inspect.state.records import dumps


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

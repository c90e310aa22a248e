"""Records as stored in Redis hashes: the one encoding the recorder writes, and decoding.

Hash values are UTF-8 strings: times are epoch seconds (``repr`` of a float), structured
values JSON. Decoding is lenient about missing fields (an older writer may not set them)
and strict about their types (``state.decode``): a corrupt field fails its own record
with a ``DecodeError`` naming the field, and JSON objects are decoded only when asked for.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from openrl_inspect.core.domain import ModelState, OpStatus, SessionState
from openrl_inspect.core.errors import DecodeError
from openrl_inspect.state import decode
from openrl_inspect.state.decode import JsonField
from openrl_inspect.state.keys import MODEL_STATES

JsonDict = dict[str, Any]


def dumps(value: Any) -> str:
    """Compact JSON with sorted keys (orjson; json with ``str`` for exotic values)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def encode(values: Mapping[str, Any]) -> dict[str, str]:
    """Encode a mapping for HSET, skipping ``None`` so absent stays absent.

    The one record encoding: the recorder writes with it and the decoders above read
    it back (times and numbers as ``repr``, booleans as ``1``/``0``, strings as they
    are, structures as compact JSON).
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


_SESSION_STATES = tuple(SessionState)
_OP_STATUSES = tuple(OpStatus)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    owner: str
    client: JsonField
    created_at: float | None
    last_activity_at: float | None
    state: str  # live | closed
    closed_at: float | None

    @classmethod
    def from_hash(cls, h: Mapping[str, str]) -> SessionRecord:
        ident = decode.text(h, "id")
        return cls(
            id=ident,
            owner=decode.text(h, "owner"),
            client=JsonField("session", ident, "client", h.get("client")),
            created_at=decode.time(h, "created_at"),
            last_activity_at=decode.time(h, "last_activity_at"),
            state=decode.choice(h, "state", _SESSION_STATES, SessionState.LIVE),
            closed_at=decode.time(h, "closed_at"),
        )


@dataclass(frozen=True, slots=True)
class ModelRecord:
    id: str
    session_id: str
    base_model: str
    lora: JsonField
    settings: JsonField
    state: str
    state_at: float | None
    created_at: float | None
    transitions: dict[str, float]  # state -> time it was last entered
    failure_reason: str | None
    # Derived at read time from the steps index, never stored in the hash.
    latest_step: int | None = None
    kept_steps: int = 0

    @classmethod
    def from_hash(
        cls, h: Mapping[str, str], latest_step: float | None = None, kept_steps: int = 0
    ) -> ModelRecord:
        transitions: dict[str, float] = {}
        for state in MODEL_STATES:
            at = decode.time(h, f"{state}_at")
            if at is not None:
                transitions[state] = at
        ident = decode.text(h, "id")
        # Checked one below Int's top too: the step count (latest + 1) must fit.
        latest = None if latest_step is None else decode.counter(latest_step + 1, "step count") - 1
        if latest is not None and latest < 0:
            raise DecodeError("latest step is negative")
        return cls(
            id=ident,
            session_id=decode.text(h, "session_id"),
            base_model=decode.text(h, "base_model"),
            lora=JsonField("model", ident, "lora", h.get("lora")),
            settings=JsonField("model", ident, "settings", h.get("settings")),
            state=decode.choice(h, "state", MODEL_STATES, ModelState.WAITING),
            state_at=decode.time(h, "state_at"),
            created_at=decode.time(h, "created_at"),
            transitions=transitions,
            failure_reason=decode.text(h, "failure_reason") or None,
            latest_step=latest,
            kept_steps=kept_steps,
        )


@dataclass(frozen=True, slots=True)
class StepRecord:
    model_id: str
    step: int
    started_at: float | None
    finished_at: float | None
    metrics: JsonField
    op_count: int = 0

    @classmethod
    def from_hash(cls, model_id: str, n: int, h: Mapping[str, str], op_count: int) -> StepRecord:
        return cls(
            model_id=model_id,
            step=decode.counter(n, "step number"),
            started_at=decode.time(h, "started_at"),
            finished_at=decode.time(h, "finished_at"),
            metrics=JsonField("step", f"{model_id}/{n}", "metrics", h.get("metrics")),
            op_count=op_count,
        )


@dataclass(frozen=True, slots=True)
class OpRecord:
    id: str
    model_id: str
    kind: str
    step: int | None
    status: str  # accepted | queued | running | succeeded | failed | cancelled
    accepted_at: float | None
    enqueued_at: float | None
    started_at: float | None
    finished_at: float | None
    worker_id: str | None
    metrics: JsonField = field(default_factory=lambda: JsonField("op", "", "metrics", None))
    error: str | None = None

    @classmethod
    def from_hash(cls, h: Mapping[str, str]) -> OpRecord:
        ident = decode.text(h, "id")
        return cls(
            id=ident,
            model_id=decode.text(h, "model_id"),
            kind=decode.text(h, "kind"),
            step=decode.integer(h, "step"),
            status=decode.choice(h, "status", _OP_STATUSES, OpStatus.ACCEPTED),
            accepted_at=decode.time(h, "accepted_at"),
            enqueued_at=decode.time(h, "enqueued_at"),
            started_at=decode.time(h, "started_at"),
            finished_at=decode.time(h, "finished_at"),
            worker_id=decode.text(h, "worker_id") or None,
            metrics=JsonField("op", ident, "metrics", h.get("metrics")),
            error=decode.text(h, "error") or None,
        )


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    id: str
    role: str  # trainer | sampler
    pod: str
    node: str
    model_id: str | None
    gpu_ids: list[str]
    started_at: float | None
    last_heartbeat_at: float | None
    payload: JsonField

    @classmethod
    def from_hash(cls, h: Mapping[str, str]) -> WorkerRecord:
        ident = decode.text(h, "id")
        return cls(
            id=ident,
            role=decode.text(h, "role"),
            pod=decode.text(h, "pod"),
            node=decode.text(h, "node"),
            model_id=decode.text(h, "model_id") or None,
            gpu_ids=decode.strings(h, "gpu_ids"),
            started_at=decode.time(h, "started_at"),
            last_heartbeat_at=decode.time(h, "last_heartbeat_at"),
            payload=JsonField("worker", ident, "payload", h.get("payload")),
        )


@dataclass(frozen=True, slots=True)
class PlacementRecord:
    id: str
    model_id: str
    workload: str
    namespace: str
    pods: list[str]
    node: str
    gpu_ids: list[str]
    admitted_at: float | None
    released_at: float | None

    @classmethod
    def from_hash(cls, h: Mapping[str, str]) -> PlacementRecord:
        return cls(
            id=decode.text(h, "id"),
            model_id=decode.text(h, "model_id"),
            workload=decode.text(h, "workload"),
            namespace=decode.text(h, "namespace"),
            pods=decode.strings(h, "pods"),
            node=decode.text(h, "node"),
            gpu_ids=decode.strings(h, "gpu_ids"),
            admitted_at=decode.time(h, "admitted_at"),
            released_at=decode.time(h, "released_at"),
        )


# Decoded per member, thousands a request: plain type checks, no allocation.
def _number(entry: Mapping[str, Any], name: str) -> float | None:
    """A finite number (JSON's int or float, not a bool), else None."""
    value = entry.get(name)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value) if -_BIG < value < _BIG else None
    return None


def _count(entry: Mapping[str, Any], name: str) -> int | None:
    """A whole count from 0 to Int's top (a float is cut), else None; NaN fails both
    comparisons."""
    value = entry.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value) if 0 <= value <= decode.MAX_INT else None
    return None


def _label(entry: Mapping[str, Any], name: str) -> str | None:
    value = entry.get(name)
    if not isinstance(value, str):
        return None
    return value if len(value) <= decode.MAX_TEXT_CHARS else decode.text({name: value}, name)


_BIG = 2**1000  # any int past this is past every float
# Times a datetime holds, widely: anything outside is range-checked as hashes' times are.
_SURE_TIMES = (0.0, 32_503_680_000.0)


@dataclass(frozen=True, slots=True)
class SamplerBatchRecord:
    """One sampler batch as the recorder writes it (a JSON member of the model's
    sampler-batch ZSET): size, tokens in and out, latency and the queue behind it."""

    id: str
    model_id: str
    at: float
    worker: str | None
    op_id: str | None
    batch_size: int | None
    prompt_tokens: int | None
    generated_tokens: int | None
    latency_s: float | None
    queue_depth: int | None

    @classmethod
    def from_json(cls, model_id: str, entry: Mapping[str, Any]) -> SamplerBatchRecord:
        """Raises ``DecodeError`` when the entry has no time (or one out of range); other
        fields go None when absent, of the wrong type, NaN, negative or past Int (one bad
        field spoils only itself); texts are cut as a hash's are."""
        at = _number(entry, "t")
        if at is None:
            raise DecodeError("sampler batch: field t (its time) is missing or not a number")
        if not _SURE_TIMES[0] <= at <= _SURE_TIMES[1]:
            at = decode.time({"t": repr(at)}, "t") or at  # raises when no datetime holds it

        latency = _number(entry, "latency_s")
        return cls(
            id=_label(entry, "id") or "",
            model_id=model_id,
            at=at,
            worker=_label(entry, "worker"),
            op_id=_label(entry, "op_id"),
            batch_size=_count(entry, "batch_size"),
            prompt_tokens=_count(entry, "prompt_tokens"),
            generated_tokens=_count(entry, "generated_tokens"),
            latency_s=None if latency is None or latency < 0 else latency,
            queue_depth=_count(entry, "queue_depth"),
        )

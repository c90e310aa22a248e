"""Records as stored in Redis hashes: the one encoding the recorder writes, and decoding.

Hash values are UTF-8 strings: times are epoch seconds (``repr`` of a float), structured
values JSON. Decoding is lenient about missing fields (an older writer may not set them)
and strict about their types, so a corrupt field surfaces as a protocol error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from openrl_inspect.domain import ModelState, OpStatus, SessionState

JsonDict = dict[str, Any]


class DecodeError(ValueError):
    """A stored field could not be decoded; the message names the field, not the key."""


def _s(h: Mapping[str, str], name: str, default: str = "") -> str:
    return h.get(name, default)


def _f(h: Mapping[str, str], name: str) -> float | None:
    raw = h.get(name)
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise DecodeError(f"field {name!r} is not a number") from None


def _i(h: Mapping[str, str], name: str, default: int = 0) -> int:
    raw = h.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise DecodeError(f"field {name!r} is not an integer") from None


def _j(h: Mapping[str, str], name: str, default: Any) -> Any:
    raw = h.get(name)
    if raw is None or raw == "":
        return default
    try:
        return json.loads(raw)
    except ValueError:
        raise DecodeError(f"field {name!r} is not JSON") from None


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


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: str
    owner: str
    client: JsonDict
    created_at: float | None
    last_activity_at: float | None
    state: str  # live | closed
    closed_at: float | None

    @classmethod
    def from_hash(cls, h: Mapping[str, str]) -> SessionRecord:
        return cls(
            id=_s(h, "id"),
            owner=_s(h, "owner"),
            client=_j(h, "client", {}),
            created_at=_f(h, "created_at"),
            last_activity_at=_f(h, "last_activity_at"),
            state=_s(h, "state", SessionState.LIVE),
            closed_at=_f(h, "closed_at"),
        )


@dataclass(frozen=True, slots=True)
class ModelRecord:
    id: str
    session_id: str
    base_model: str
    lora: JsonDict
    settings: JsonDict
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
        cls, h: Mapping[str, str], latest_step: int | None = None, kept_steps: int = 0
    ) -> ModelRecord:
        from openrl_inspect.state.keys import MODEL_STATES

        transitions: dict[str, float] = {}
        for state in MODEL_STATES:
            at = _f(h, f"{state}_at")
            if at is not None:
                transitions[state] = at
        return cls(
            id=_s(h, "id"),
            session_id=_s(h, "session_id"),
            base_model=_s(h, "base_model"),
            lora=_j(h, "lora", {}),
            settings=_j(h, "settings", {}),
            state=_s(h, "state", ModelState.WAITING),
            state_at=_f(h, "state_at"),
            created_at=_f(h, "created_at"),
            transitions=transitions,
            failure_reason=h.get("failure_reason") or None,
            latest_step=latest_step,
            kept_steps=kept_steps,
        )


@dataclass(frozen=True, slots=True)
class StepRecord:
    model_id: str
    step: int
    started_at: float | None
    finished_at: float | None
    metrics: JsonDict
    op_count: int = 0

    @classmethod
    def from_hash(cls, model_id: str, n: int, h: Mapping[str, str], op_count: int) -> StepRecord:
        return cls(
            model_id=model_id,
            step=n,
            started_at=_f(h, "started_at"),
            finished_at=_f(h, "finished_at"),
            metrics=_j(h, "metrics", {}),
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
    metrics: JsonDict = field(default_factory=dict)
    error: str | None = None

    @classmethod
    def from_hash(cls, h: Mapping[str, str]) -> OpRecord:
        step = h.get("step")
        return cls(
            id=_s(h, "id"),
            model_id=_s(h, "model_id"),
            kind=_s(h, "kind"),
            step=_i(h, "step") if step not in (None, "") else None,
            status=_s(h, "status", OpStatus.ACCEPTED),
            accepted_at=_f(h, "accepted_at"),
            enqueued_at=_f(h, "enqueued_at"),
            started_at=_f(h, "started_at"),
            finished_at=_f(h, "finished_at"),
            worker_id=h.get("worker_id") or None,
            metrics=_j(h, "metrics", {}),
            error=h.get("error") or None,
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
    payload: JsonDict

    @classmethod
    def from_hash(cls, h: Mapping[str, str]) -> WorkerRecord:
        return cls(
            id=_s(h, "id"),
            role=_s(h, "role"),
            pod=_s(h, "pod"),
            node=_s(h, "node"),
            model_id=h.get("model_id") or None,
            gpu_ids=list(_j(h, "gpu_ids", [])),
            started_at=_f(h, "started_at"),
            last_heartbeat_at=_f(h, "last_heartbeat_at"),
            payload=_j(h, "payload", {}),
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
            id=_s(h, "id"),
            model_id=_s(h, "model_id"),
            workload=_s(h, "workload"),
            namespace=_s(h, "namespace"),
            pods=list(_j(h, "pods", [])),
            node=_s(h, "node"),
            gpu_ids=list(_j(h, "gpu_ids", [])),
            admitted_at=_f(h, "admitted_at"),
            released_at=_f(h, "released_at"),
        )

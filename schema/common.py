"""Scalars and enums shared by the schema's areas."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import Any, cast

import strawberry
from strawberry.scalars import JSON


def ts(value: float | None) -> datetime | None:
    """Epoch seconds as stored -> an aware UTC datetime for the API."""
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


def as_json(value: dict[str, Any]) -> JSON:
    """A decoded JSON object, typed as the JSON scalar."""
    return cast(JSON, value)


def span(start: float | None, end: float | None) -> float | None:
    if start is None or end is None:
        return None
    return max(0.0, end - start)


@strawberry.enum(description="Lifecycle of a model (a LoRA training run).")
class ModelState(Enum):
    WAITING = "waiting"
    PLACED = "placed"
    ACTIVE = "active"
    FAILED = "failed"
    ENDED = "ended"


@strawberry.enum
class SessionState(Enum):
    LIVE = "live"
    CLOSED = "closed"


@strawberry.enum(description="What became of an op, judged from its record and its worker.")
class OpHealth(Enum):
    DONE = "DONE"
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STUCK = "STUCK"
    LOST = "LOST"


@strawberry.type
class StateTransition:
    state: ModelState
    at: datetime

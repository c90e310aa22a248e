"""Scalars and enums shared by the schema's areas."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import strawberry
from openrl_inspect.core import domain
from openrl_inspect.resolvers.context import Context
from strawberry.scalars import JSON

# What every resolver receives: the typed per-request context.
Info = strawberry.Info[Context, None]


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


# The GraphQL enums are the domain's own (see ``openrl_inspect.core.domain``), named and
# described here; ``tests`` check that the two never disagree.
ModelState = domain.ModelState
strawberry.enum(
    ModelState, name="ModelState", description="Lifecycle of a model (a LoRA training run)."
)
SessionState = domain.SessionState
strawberry.enum(SessionState, name="SessionState")
OpHealth = domain.OpHealth
strawberry.enum(
    OpHealth,
    name="OpHealth",
    description="What became of an op, judged from its record and its worker.",
)


@strawberry.type
class StateTransition:
    state: ModelState
    at: datetime

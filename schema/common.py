"""Scalars and enums shared by the schema's areas."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import Any, cast

import strawberry
from openrl_inspect.core import domain
from openrl_inspect.resolvers.context import Context
from strawberry.scalars import JSON
from strawberry.types.enum import has_enum_definition

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


def domain_enum(cls: type[Enum], *, name: str, description: str, values: Mapping[Any, str]) -> None:
    """Expose a domain enum as a GraphQL enum, each of its values described.

    ``strawberry.enum_value`` would put Strawberry inside ``core.domain``, which imports
    nothing of the API: the values' descriptions are set here instead, on the enum
    definition ``strawberry.enum`` built (public dataclasses). A value left out fails at
    import, so the schema cannot build with an undescribed value.
    """
    strawberry.enum(cls, name=name, description=description)
    exposed: object = cls
    assert has_enum_definition(exposed)
    for value in exposed.__strawberry_definition__.values:
        value.description = values[cls(value.value)]


# The GraphQL enums are the domain's own (see ``openrl_inspect.core.domain``), named and
# described here; ``tests`` check that the two never disagree.
ModelState = domain.ModelState
domain_enum(
    ModelState,
    name="ModelState",
    description="Lifecycle of a model (a LoRA training run), as OpenRL records it in Redis.",
    values={
        ModelState.WAITING: "Created, waiting for GPUs (its job queued by Kueue).",
        ModelState.PLACED: "Admitted and placed on GPUs; its workers are starting.",
        ModelState.ACTIVE: "Its workers are running ops.",
        ModelState.FAILED: "OpenRL marked it failed (see `failureReason`); terminal.",
        ModelState.ENDED: "Training ended normally; terminal.",
    },
)
SessionState = domain.SessionState
domain_enum(
    SessionState,
    name="SessionState",
    description="Whether a client session is still open, as OpenRL records it in Redis.",
    values={
        SessionState.LIVE: "Open: its client may still create models and send ops.",
        SessionState.CLOSED: "Closed by its client (see `closedAt`).",
    },
)
OpHealth = domain.OpHealth
domain_enum(
    OpHealth,
    name="OpHealth",
    description="What became of an op, judged from its record and its worker.",
    values={
        OpHealth.DONE: "Finished (it has a `finishedAt`), whatever its outcome.",
        OpHealth.PENDING: "Accepted or queued: not started on a worker yet.",
        OpHealth.RUNNING: "Started on a worker that still heartbeats, for less than the "
        "stuck threshold (OPENRL_INSPECT_JUDGEMENT_STUCK_AFTER_S, 600 s unless set).",
        OpHealth.STUCK: "Running past the stuck threshold on a worker that still heartbeats.",
        OpHealth.LOST: "Started on a worker whose heartbeat is older than "
        "OPENRL_INSPECT_JUDGEMENT_HEARTBEAT_STALE_S (30 s) or whose record is gone: "
        "nobody will finish it.",
    },
)


@strawberry.type(description="One change of a model's state, from its history in Redis.")
class StateTransition:
    state: ModelState = strawberry.field(description="The state it entered.")
    at: datetime = strawberry.field(description="When it entered it (UTC).")

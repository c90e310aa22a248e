"""Session: a client's connection to OpenRL, under which it creates models."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.schema.common import Info, SessionState, as_json, ts
from openrl_inspect.schema.connection import Connection
from openrl_inspect.schema.logs.types import SessionLogFields
from openrl_inspect.schema.metrics.fields import SessionMetricsFields
from openrl_inspect.schema.shown import shown, shows
from openrl_inspect.schema.summary.rollup import SessionSummaryFields
from openrl_inspect.schema.timeline.types import SessionTimelineFields
from openrl_inspect.state.decode import JsonField
from openrl_inspect.state.records import SessionRecord
from strawberry.scalars import JSON

if TYPE_CHECKING:
    from openrl_inspect.schema.state.model import Model

ModelT = Annotated["Model", strawberry.lazy("openrl_inspect.schema.state.model")]


@shows(SessionRecord)
@strawberry.type
class Session(SessionMetricsFields, SessionLogFields, SessionSummaryFields, SessionTimelineFields):
    id: strawberry.ID
    owner: str
    created_at: datetime | None
    last_activity_at: datetime | None
    state: SessionState
    closed_at: datetime | None

    _client: strawberry.Private[JsonField]

    @strawberry.field(description="Client and SDK information it reported.")
    def client(self) -> JSON:
        return as_json(self._client.value())

    @classmethod
    def from_record(cls, rec: SessionRecord) -> Session:
        return cls(
            id=strawberry.ID(rec.id),
            owner=rec.owner,
            created_at=ts(rec.created_at),
            last_activity_at=ts(rec.last_activity_at),
            state=SessionState(rec.state),
            closed_at=ts(rec.closed_at),
            _client=rec.client,
        )

    @strawberry.field(description="Models created under this session, newest first.")
    async def models(
        self, info: Info, first: int | None = None, after: str | None = None
    ) -> Connection[ModelT]:
        page = await state_reads.session_models(info.context, self.id, first, after)
        return Connection.of(page, shown)

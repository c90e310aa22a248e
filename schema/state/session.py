"""Session: a client's connection to OpenRL, under which it creates models."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.schema.common import Info, SessionState, as_json, ts
from openrl_inspect.schema.connection import After, Connection, First
from openrl_inspect.schema.logs.fields import SessionLogFields
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
@strawberry.type(
    description="A client's session with OpenRL, under which it creates models; OpenRL's "
    "session hash in Redis."
)
class Session(SessionMetricsFields, SessionLogFields, SessionSummaryFields, SessionTimelineFields):
    id: strawberry.ID = strawberry.field(description="OpenRL's session id (Redis).")
    owner: str = strawberry.field(description="Who opened it, as OpenRL recorded it.")
    created_at: datetime | None = strawberry.field(
        description="When it was opened (UTC); null when not recorded."
    )
    last_activity_at: datetime | None = strawberry.field(
        description="Its last activity (UTC), as OpenRL recorded it."
    )
    state: SessionState = strawberry.field(description="LIVE or CLOSED (Redis).")
    closed_at: datetime | None = strawberry.field(
        description="When it was closed (UTC); null while LIVE."
    )

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
        self, info: Info, first: First = None, after: After = None
    ) -> Connection[ModelT]:
        page = await state_reads.session_models(info.context, self.id, first, after)
        return Connection.of(page, shown)

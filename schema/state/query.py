"""Root fields over OpenRL's own state (Redis): sessions, models, ops, workers."""

from __future__ import annotations

import strawberry
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.schema.common import Info, ModelState, SessionState
from openrl_inspect.schema.connection import After, Connection, First
from openrl_inspect.schema.state.model import Model
from openrl_inspect.schema.state.op import Op
from openrl_inspect.schema.state.session import Session
from openrl_inspect.schema.state.worker import Worker


@strawberry.type
class StateQuery:
    @strawberry.field(description="Sessions, newest first (live by default).")
    async def sessions(
        self,
        info: Info,
        state: SessionState = SessionState.LIVE,
        first: First = None,
        after: After = None,
    ) -> Connection[Session]:
        page = await state_reads.sessions(info.context, state is SessionState.LIVE, first, after)
        return Connection.of(page, Session.from_record)

    @strawberry.field(description="Models in one lifecycle state, latest to enter it first.")
    async def models(
        self, info: Info, state: ModelState, first: First = None, after: After = None
    ) -> Connection[Model]:
        page = await state_reads.models_in_state(info.context, state, first, after)
        return Connection.of(page, Model.from_record)

    @strawberry.field(description="A session by id; null with a NOT_FOUND error when unknown.")
    async def session(self, info: Info, id: strawberry.ID) -> Session | None:
        return Session.from_record(await state_reads.session(info.context, id))

    @strawberry.field(description="A model by id; null with a NOT_FOUND error when unknown.")
    async def model(self, info: Info, id: strawberry.ID) -> Model | None:
        return Model.from_record(await state_reads.model(info.context, id))

    @strawberry.field(description="An op by id, wherever its model is.")
    async def op(self, info: Info, id: strawberry.ID) -> Op | None:
        return Op.from_record(await state_reads.op(info.context, id))

    @strawberry.field
    async def worker(self, info: Info, id: strawberry.ID) -> Worker | None:
        return Worker.from_record(await state_reads.worker(info.context, id))

    @strawberry.field(description="Workers by latest heartbeat, newest first.")
    async def workers(
        self, info: Info, first: First = None, after: After = None
    ) -> Connection[Worker]:
        page = await state_reads.workers(info.context, first, after)
        return Connection.of(page, Worker.from_record)

"""Root fields over OpenRL's own state (Redis): sessions, models, ops, workers."""

from __future__ import annotations

from typing import Annotated

import strawberry
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.schema.common import Info, ModelState, SessionState
from openrl_inspect.schema.connection import After, Connection, First
from openrl_inspect.schema.state.model import Model
from openrl_inspect.schema.state.op import Op
from openrl_inspect.schema.state.session import Session
from openrl_inspect.schema.state.worker import Worker

# OpenRL's ids (``state.keys.valid_id``); another is BAD_INPUT.
ID_FORMAT = "1 to 128 of letters, digits and `._:@/-`, not starting with a symbol"
SessionId = Annotated[
    strawberry.ID, strawberry.argument(description=f"The session's id ({ID_FORMAT}).")
]
ModelId = Annotated[
    strawberry.ID, strawberry.argument(description=f"The model's id ({ID_FORMAT}).")
]
OpId = Annotated[strawberry.ID, strawberry.argument(description=f"The op's id ({ID_FORMAT}).")]
WorkerId = Annotated[
    strawberry.ID, strawberry.argument(description=f"The worker's id ({ID_FORMAT}).")
]


@strawberry.type
class StateQuery:
    @strawberry.field(
        description="Sessions, newest first (live by default). With `owner`, that owner's "
        "only, filtered before the page is cut: every page is full unless it is the last, "
        "and `totalCount` counts every match (`INDEXES_NOT_BUILT` until `openrl-inspect "
        "reindex` ran on older data)."
    )
    async def sessions(
        self,
        info: Info,
        state: Annotated[
            SessionState, strawberry.argument(description="Which sessions: LIVE or CLOSED.")
        ] = SessionState.LIVE,
        first: First = None,
        after: After = None,
        owner: Annotated[
            str | None, strawberry.argument(description="Only this owner's sessions.")
        ] = None,
    ) -> Connection[Session]:
        live = state is SessionState.LIVE
        page = await state_reads.sessions(info.context, live, first, after, owner)
        return Connection.of(page, Session.from_record)

    @strawberry.field(
        description="Models matching every filter given (at least one), newest first: by "
        "the time they entered `state` when it is given, else by creation. Filtered before "
        "the page is cut: every page is full unless it is the last, and `totalCount` counts "
        "every match. Owner and base model filters need the model indexes "
        "(`INDEXES_NOT_BUILT` until `openrl-inspect reindex` ran on older data)."
    )
    async def models(
        self,
        info: Info,
        state: Annotated[
            ModelState | None,
            strawberry.argument(
                description="Only models in this state. At least one filter is required."
            ),
        ] = None,
        owner: Annotated[
            str | None,
            strawberry.argument(description="Only models of this session owner's sessions."),
        ] = None,
        session: Annotated[
            strawberry.ID | None, strawberry.argument(description="Only this session's models.")
        ] = None,
        base_model: Annotated[
            str | None,
            strawberry.argument(description="Only models of this base model (e.g. Qwen/Qwen3-8B)."),
        ] = None,
        first: First = None,
        after: After = None,
    ) -> Connection[Model]:
        page = await state_reads.models(
            info.context,
            state=state,
            owner=owner,
            session=session,
            base_model=base_model,
            first=first,
            after=after,
        )
        return Connection.of(page, Model.from_record)

    @strawberry.field(description="A session by id; null with a NOT_FOUND error when unknown.")
    async def session(self, info: Info, id: SessionId) -> Session | None:
        return Session.from_record(await state_reads.session(info.context, id))

    @strawberry.field(description="A model by id; null with a NOT_FOUND error when unknown.")
    async def model(self, info: Info, id: ModelId) -> Model | None:
        return Model.from_record(await state_reads.model(info.context, id))

    @strawberry.field(description="An op by id, wherever its model is.")
    async def op(self, info: Info, id: OpId) -> Op | None:
        return Op.from_record(await state_reads.op(info.context, id))

    @strawberry.field(description="A worker by id; null with a NOT_FOUND error when unknown.")
    async def worker(self, info: Info, id: WorkerId) -> Worker | None:
        return Worker.from_record(await state_reads.worker(info.context, id))

    @strawberry.field(description="Workers by latest heartbeat, newest first.")
    async def workers(
        self, info: Info, first: First = None, after: After = None
    ) -> Connection[Worker]:
        page = await state_reads.workers(info.context, first, after)
        return Connection.of(page, Worker.from_record)

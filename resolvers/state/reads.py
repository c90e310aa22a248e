"""Resolvers for the Redis graph: Session -> Model -> Step -> Op, workers, placements."""

from __future__ import annotations

from collections.abc import Awaitable, Hashable, Sequence
from dataclasses import replace
from typing import TypeVar

from openrl_inspect.core.domain import OpHealth, SessionState
from openrl_inspect.core.errors import BadRecord, InvalidInput, NotFound
from openrl_inspect.loaders.batch import BatchLoader
from openrl_inspect.resolvers import scope
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.paging import Cursor, Paged, page_size, paged
from openrl_inspect.state.decode import MAX_INT
from openrl_inspect.state.filters import MAX_CANDIDATES, ModelQuery, SessionQuery
from openrl_inspect.state.keys import MODEL_STATES, valid_id
from openrl_inspect.state.paging import ListRef, Page, Position, decode_cursor, encode_cursor
from openrl_inspect.state.records import (
    ModelRecord,
    OpRecord,
    PlacementRecord,
    SessionRecord,
    StepRecord,
    WorkerRecord,
)
from openrl_inspect.state.rollup import ModelRollup

R = TypeVar("R")
# The cursor kind of a filtered list of models (a state alone pages its own index).
MODELS_CURSOR = "models"
SESSIONS_CURSOR = "owned_sessions"
K = TypeVar("K", bound=Hashable)


def _check_id(kind: str, ident: str) -> str:
    if not valid_id(ident):
        raise InvalidInput(f"{kind} id {ident[:80]!r} is not a valid id")
    return ident


def _ids(items: Sequence[Position]) -> list[str]:
    return [p.member for p in items]


def _each(
    loader: BatchLoader[K, R | None], keys: Sequence[K]
) -> Awaitable[list[R | BadRecord | None]]:
    """Load a page's records, each on its own: a bad one is its ``BadRecord``."""
    return loader.load_each(keys, BadRecord)


def _step_number(score: float) -> int:
    # A score that is no step number (negative, fractional, huge, inf) becomes -1,
    # which the store answers with a BadRecord for that step alone.
    return int(score) if 0 <= score <= MAX_INT and score == int(score) else -1


# -- root lookups -------------------------------------------------------------------------


async def _by_id(ctx: Context, kind: str, ident: str, loader: BatchLoader[str, R | None]) -> R:
    """The record, or NOT_FOUND. Scope before decode: a viewer asking for a record that
    cannot be read gets NOT_FOUND, as for an unknown id, since whose it is (its owner,
    session or model) is inside what cannot be decoded; only an operator learns it is
    unreadable (BAD_RECORD)."""
    try:
        rec = await loader.load(_check_id(kind, ident))
    except BadRecord:
        if scope.sees_everything(ctx):
            raise
        raise NotFound(kind, ident) from None
    if rec is None:
        raise NotFound(kind, ident)
    return rec


# Out of the principal's scope answers exactly as unknown: NOT_FOUND, same message.


async def session(ctx: Context, sid: str) -> SessionRecord:
    rec = await _by_id(ctx, "session", sid, ctx.state.sessions)
    if not scope.session_visible(ctx, rec):
        raise NotFound("session", sid)
    return rec


async def model(ctx: Context, mid: str) -> ModelRecord:
    rec = await _by_id(ctx, "model", mid, ctx.state.models)
    if not await scope.model_visible(ctx, rec):
        raise NotFound("model", mid)
    return rec


async def worker(ctx: Context, wid: str) -> WorkerRecord:
    rec = await _by_id(ctx, "worker", wid, ctx.state.workers)
    if not await scope.model_id_visible(ctx, rec.model_id):
        raise NotFound("worker", wid)
    return rec


async def op(ctx: Context, oid: str) -> OpRecord:
    # The op's model comes from the index, before the op's record is decoded: an op of a
    # model out of scope is NOT_FOUND whether its record can be read or not.
    mid = await ctx.state.op_models.load(_check_id("op", oid))
    if not mid or not await scope.model_id_visible(ctx, mid):
        raise NotFound("op", oid)
    try:
        rec = await ctx.state.ops.load((mid, oid))
    except BadRecord as exc:
        if scope.sees_everything(ctx):
            raise
        # The viewer's own op: said unreadable, without what was stored.
        raise BadRecord("op", oid, "a stored field is not valid") from exc
    if rec is None or not await scope.model_id_visible(ctx, rec.model_id):
        raise NotFound("op", oid)
    return rec


# -- lists ----------------------------------------------------------------------------------


async def sessions(
    ctx: Context, live: bool, first: int | None, after: str | None, owner: str | None = None
) -> Paged[SessionRecord]:
    """Live or closed sessions, newest first; ``owner``: only that owner's, read from its
    sessions index before the page is cut (every page full unless it is the last, an
    exact ``total``), for a viewer only one of its own owners."""
    if owner is not None:
        return await _owned_sessions(ctx, live, first, after, _check_name("owner", owner))
    ref = ListRef("sessions", (SessionState.LIVE if live else SessionState.CLOSED,))

    async def keep(recs: Sequence[SessionRecord | BadRecord]) -> list[bool]:
        return [scope.session_visible(ctx, r) for r in recs]

    return await scope.scoped(
        ctx, ref, first, after, lambda ps: _each(ctx.state.sessions, _ids(ps)), keep
    )


async def _owned_sessions(
    ctx: Context, live: bool, first: int | None, after: str | None, owner: str
) -> Paged[SessionRecord]:
    visible = scope.sees_everything(ctx) or owner in ctx.principal.owners
    size = page_size(ctx, first)
    position = decode_cursor(SESSIONS_CURSOR, after) if after else None
    query = SessionQuery(size, (owner,) if visible else (), live, position)
    page = await ctx.state.session_pages.load(query)
    return await _indexed(page, ctx.state.sessions, SESSIONS_CURSOR, position)


# Free text from OpenRL (an owner, a base model) is refused past this many characters.
_MAX_NAME = 256


def _check_name(kind: str, value: str) -> str:
    if not value or len(value) > _MAX_NAME:
        raise InvalidInput(f"{kind} must be between 1 and {_MAX_NAME} characters")
    return value


async def models(
    ctx: Context,
    *,
    state: str | None,
    owner: str | None = None,
    session: str | None = None,
    base_model: str | None = None,
    first: int | None,
    after: str | None,
) -> Paged[ModelRecord]:
    """Models matching every given filter, newest first (by the time they entered
    ``state`` when it is given, else by creation), filtered before the page is cut:
    each page is full unless it is the last, and ``total`` counts every match. A viewer's
    list is read from its owners' indexes, never filtered from a wider page."""
    if state is not None and state not in MODEL_STATES:
        raise InvalidInput(f"unknown model state {state!r}")
    if owner is not None:
        _check_name("owner", owner)
    if session is not None:
        _check_id("session", session)
    if base_model is not None:
        _check_name("baseModel", base_model)
    if state is None and owner is None and session is None and base_model is None:
        raise InvalidInput("give at least one of state, owner, session or baseModel")
    owners: tuple[str, ...] | None = None if owner is None else (owner,)
    if not scope.sees_everything(ctx):
        mine = ctx.principal.owners
        owners = tuple(sorted(mine)) if owner is None else ((owner,) if owner in mine else ())
    if owners is None and session is None and base_model is None and state is not None:
        # A state alone: its index is the list, exact as it stands.
        ref = ListRef("models_in_state", (state,))
        return await paged(ctx, ref, first, after, lambda ps: _each(ctx.state.models, _ids(ps)))
    size = page_size(ctx, first)
    position = decode_cursor(MODELS_CURSOR, after) if after else None
    query = ModelQuery(size, position, state, owners, session, base_model)
    page = await ctx.state.model_pages.load(query)
    return await _indexed(page, ctx.state.models, MODELS_CURSOR, position)


async def _indexed(
    page: Page,
    loader: BatchLoader[str, R | None],
    cursor: str,
    position: Position | None,
) -> Paged[R]:
    """A page read from the indexes, with its records (a missing one left out) and its
    cursors (encoded when read)."""
    records = await _each(loader, _ids(page.items)) if page.items else []
    items = [
        (Cursor(encode_cursor, cursor, pos), rec)
        for pos, rec in zip(page.items, records, strict=True)
        if rec is not None
    ]
    end = encode_cursor(cursor, page.items[-1]) if page.items else None
    return Paged(items, page.total, page.has_next, position is not None, end)


async def viewer_model_ids(ctx: Context) -> list[str]:
    """Every model of the principal's owners, newest first, read from their indexes: a
    viewer's lists of other backends' objects start from these, never from a wider page
    filtered afterwards."""
    owners = tuple(sorted(ctx.principal.owners))
    page = await ctx.state.model_pages.load(ModelQuery(MAX_CANDIDATES, owners=owners))
    return _ids(page.items)


async def session_models(
    ctx: Context, sid: str, first: int | None, after: str | None
) -> Paged[ModelRecord]:
    ref = ListRef("session_models", (sid,))
    return await paged(ctx, ref, first, after, lambda ps: _each(ctx.state.models, _ids(ps)))


async def model_session(ctx: Context, rec: ModelRecord) -> SessionRecord | None:
    return await ctx.state.sessions.load(rec.session_id) if rec.session_id else None


async def model_steps(
    ctx: Context, mid: str, first: int | None, after: str | None
) -> Paged[StepRecord]:
    ref = ListRef("steps", (mid,))
    return await paged(
        ctx,
        ref,
        first,
        after,
        lambda ps: _each(ctx.state.steps, [(mid, _step_number(p.score)) for p in ps]),
    )


async def model_step(ctx: Context, mid: str, n: int) -> StepRecord | None:
    if not 0 <= n <= MAX_INT:
        return None  # no such step is ever kept
    return await ctx.state.steps.load((mid, n))


async def step_ops(
    ctx: Context, mid: str, n: int, first: int | None, after: str | None
) -> Paged[OpRecord]:
    ref = ListRef("step_ops", (mid, str(n)))
    return await paged(
        ctx,
        ref,
        first,
        after,
        lambda ps: _each(ctx.state.ops, [(mid, p.member) for p in ps]),
        newest_first=False,
    )


async def rollup(ctx: Context, mid: str, steps: int) -> ModelRollup | None:
    """The model's rollup with its newest ``steps`` entries; ``None`` when there is none
    or it cannot be read (the caller then scans, as for data written before rollups)."""
    try:
        return await ctx.state.rollups.load((mid, steps))
    except BadRecord:
        return None


async def open_ops(ctx: Context, mid: str, first: int | None, after: str | None) -> Paged[OpRecord]:
    """Ops accepted but not finished, oldest first: where stuck and lost ops are."""
    ref = ListRef("open_ops", (mid,))
    return await paged(
        ctx,
        ref,
        first,
        after,
        lambda ps: _each(ctx.state.ops, [(mid, p.member) for p in ps]),
        newest_first=False,
    )


async def model_workers(
    ctx: Context, mid: str, first: int | None, after: str | None
) -> Paged[WorkerRecord]:
    """The workers that heartbeat for the model. A worker is shown as it is now, so to a
    viewer only while the model it serves now is in scope: one that moved on to another
    owner's model is left out here as by ``worker(id:)`` and ``Op.worker`` (its pod,
    node and payload are the other owner's now). A record that cannot be read is left
    out for a viewer too (whose it is cannot be known)."""
    ref = ListRef("model_workers", (mid,))
    page = await paged(ctx, ref, first, after, lambda ps: _each(ctx.state.workers, _ids(ps)))
    if scope.sees_everything(ctx):
        return page
    serving = [r.model_id for _, r in page.items if isinstance(r, WorkerRecord)]
    seen = await scope.visible_model_ids(ctx, serving)
    kept = [
        (at, r)
        for at, r in page.items
        if isinstance(r, WorkerRecord) and (r.model_id or "") in seen
    ]
    return replace(page, items=kept, total=page.total - (len(page.items) - len(kept)))


async def workers(ctx: Context, first: int | None, after: str | None) -> Paged[WorkerRecord]:
    ref = ListRef("workers")

    async def keep(recs: Sequence[WorkerRecord | BadRecord]) -> list[bool]:
        mids = [r.model_id if isinstance(r, WorkerRecord) else None for r in recs]
        seen = await scope.visible_model_ids(ctx, mids)
        return [isinstance(r, WorkerRecord) and (r.model_id or "") in seen for r in recs]

    return await scope.scoped(
        ctx, ref, first, after, lambda ps: _each(ctx.state.workers, _ids(ps)), keep
    )


async def placements(
    ctx: Context, mid: str, first: int | None, after: str | None
) -> Paged[PlacementRecord]:
    ref = ListRef("placements", (mid,))
    return await paged(
        ctx,
        ref,
        first,
        after,
        lambda ps: _each(ctx.state.placements, [(mid, p.member) for p in ps]),
    )


async def model_of(ctx: Context, mid: str | None) -> ModelRecord | None:
    rec = await ctx.state.models.load(mid) if mid else None
    return rec if await scope.model_visible(ctx, rec) else None


async def worker_of(ctx: Context, wid: str | None) -> WorkerRecord | None:
    rec = await ctx.state.workers.load(wid) if wid else None
    visible = rec is not None and await scope.model_id_visible(ctx, rec.model_id)
    return rec if visible else None


# -- derived health ---------------------------------------------------------------------


def worker_alive(ctx: Context, rec: WorkerRecord | None) -> bool:
    if rec is None or rec.last_heartbeat_at is None:
        return False
    return ctx.now - rec.last_heartbeat_at <= ctx.thresholds.heartbeat_stale_s


async def op_health(ctx: Context, rec: OpRecord) -> OpHealth:
    """DONE, PENDING, RUNNING, STUCK (long-running on a live worker) or LOST.

    LOST: the op was started on a worker whose heartbeats stopped (or whose record is
    gone) and it never finished: nobody will finish it.
    """
    if rec.finished_at is not None:
        return OpHealth.DONE
    if rec.started_at is None or rec.worker_id is None:
        return OpHealth.PENDING
    wrec = await ctx.state.workers.load(rec.worker_id)
    if not worker_alive(ctx, wrec):
        return OpHealth.LOST
    if ctx.now - rec.started_at > ctx.thresholds.stuck_after_s:
        return OpHealth.STUCK
    return OpHealth.RUNNING

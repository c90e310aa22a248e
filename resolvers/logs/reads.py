"""Logs of a model, a session or a pod: worker logs and client logs, merged, bounded.

Worker logs come from Cloud Logging when it is configured, else from the pods' logs
through the Kubernetes API, and from those too when Cloud Logging answers
``BackendUnavailable`` (the answer says which backend it used and why). Client logs
come from Redis. Each source is a *side*, read a page at a time; the sides are merged
in time order and the merged answer is bounded (entries and bytes) on its own.

The merge only moves past a point every side has read up to: a side whose page ran out
while it has more stops the answer there (or is read again, a few rounds at most), so
no line is ever skipped. The cursor is real: it holds every side's position — a worker
side's adapter cursor plus how many entries of that page were already returned, a
client side's (score, member) — with the window and a fingerprint of the filters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit

from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.adapters.logs import MAX_FILTER_CHARS, LogEntry, explorer_url
from openrl_inspect.core.domain import ModelState, SessionState
from openrl_inspect.core.errors import BackendUnavailable, InvalidInput
from openrl_inspect.loaders.logs import WorkerBackend
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.logs.args import (
    AFTER_FAILURE,
    BEFORE_FAILURE,
    MAX_SESSION_MODELS,
    MAX_WINDOW,
    RECENT,
    LogAnswer,
    LogArgs,
    LogLimit,
    WorkerFilter,
    around,
    check_args,
    window_of,
)
from openrl_inspect.resolvers.logs.cursor import EntryCursor, Resume, decode, encode, fingerprint
from openrl_inspect.resolvers.logs.merge import MAX_LOG_BYTES, merge
from openrl_inspect.resolvers.logs.sides import (
    ClientSide,
    Target,
    WorkerSide,
    choose_backend,
    client_sides,
    refill_blocked,
    worker_sides,
)
from openrl_inspect.resolvers.paging import page_size
from openrl_inspect.resolvers.state import reads as state_reads
from openrl_inspect.state.keys import valid_id

__all__ = [
    "AFTER_FAILURE",
    "BEFORE_FAILURE",
    "MAX_LOG_BYTES",
    "MAX_ROUNDS",
    "MAX_SESSION_MODELS",
    "MAX_WINDOW",
    "RECENT",
    "LogAnswer",
    "LogArgs",
    "LogLimit",
    "WorkerFilter",
    "model_logs",
    "pod_logs",
    "session_logs",
]

# Reads of a side within one answer (the first and the refills of a side that ran out).
MAX_ROUNDS = 3


# ------------------------------------------------------------------------ entry points


async def model_logs(ctx: Context, mid: str, args: LogArgs) -> LogAnswer:
    rec = await state_reads.model(ctx, mid)
    at = rec.transitions
    if rec.state == ModelState.FAILED and ModelState.FAILED in at:
        default = around(at[ModelState.FAILED], BEFORE_FAILURE, AFTER_FAILURE)
    elif rec.state == ModelState.ENDED and ModelState.ENDED in at:
        default = around(at[ModelState.ENDED], RECENT, AFTER_FAILURE)
    else:
        default = around(ctx.now, RECENT, timedelta(0))
    return await _logs(ctx, ("model", mid), [Target(mid, mid)], default, args)


async def session_logs(ctx: Context, sid: str, args: LogArgs) -> LogAnswer:
    rec = await state_reads.session(ctx, sid)
    if rec.state == SessionState.CLOSED and rec.closed_at is not None:
        default = around(rec.closed_at, RECENT, AFTER_FAILURE)
    else:
        default = around(ctx.now, RECENT, timedelta(0))
    page = await state_reads.session_models(ctx, sid, MAX_SESSION_MODELS, None)
    targets = [Target(m.id, m.id) for m in page.readable()]
    return await _logs(ctx, ("session", sid), targets, default, args, capped=page.has_next)


async def pod_logs(ctx: Context, namespace: str, name: str, args: LogArgs) -> LogAnswer:
    """A pod's own logs (no client logs: clients report per model, not per pod)."""
    if args.role is not None or args.pod is not None:
        raise InvalidInput("a pod's logs take no role or pod filter")
    key = ObjectKey(namespace, name)
    target = Target(f"{namespace}/{name}", None, pod=key)
    default = around(ctx.now, RECENT, timedelta(0))
    args = replace(args, client_logs=False)
    return await _logs(ctx, ("pod", target.key), [target], default, args)


async def _logs(
    ctx: Context,
    owner: tuple[str, str],
    targets: Sequence[Target],
    default: tuple[datetime, datetime],
    args: LogArgs,
    *,
    capped: bool = False,
) -> LogAnswer:
    args = check_args(args)
    size = page_size(ctx, ctx.bounds.max_page_size if args.first is None else args.first)
    if size == 0:
        raise InvalidInput("first must be at least 1 for logs")
    print_ = fingerprint(owner, args)
    resume = decode(args.after, print_) if args.after is not None else None
    start, end = window_of(args, default, ctx.now, resume)
    if resume is not None:
        targets = _resumed_targets(owner, targets, resume)

    backend, fallback, workers = await _read_workers(ctx, targets, start, end, size, args, resume)
    clients = await _read_clients(ctx, targets, start, end, size, args, resume)
    cursors: list[EntryCursor] = []

    def mark() -> None:
        at = _resume_at(Resume(backend, start, end), workers, clients)
        cursors.append(EntryCursor(print_, at))

    out, used, stop = await _merge_rounds(ctx, workers, clients, size, args.newest_first, mark)

    has_next, reason = _truncation(workers, clients, stop, capped)
    state = Resume(backend, start, end)
    next_cursor = encode(print_, _resume_at(state, workers, clients)) if has_next else None
    filters = tuple(
        WorkerFilter(w.key, w.first_page.filter, w.first_page.explorer_url)
        for w in workers
        if w.first_page is not None
    )
    combined, link = _combined(filters, start, end)
    return LogAnswer(
        entries=tuple(out),
        start=start,
        end=end,
        next_cursor=next_cursor,
        has_previous=resume is not None,
        truncated=has_next or reason is not None,
        truncated_reason=reason,
        bytes_used=used,
        backend=backend,
        fallback_reason=fallback,
        filters=filters,
        filter=combined,
        explorer_url=link,
        cursors=tuple(cursors),
    )


def _resumed_targets(
    owner: tuple[str, str], targets: Sequence[Target], resume: Resume
) -> list[Target]:
    """The targets a cursor goes on with: a session's cursor keeps the models its first
    page read; any other cursor must name only the owner's own targets."""
    unknown = (set(resume.workers) | set(resume.clients)) - {t.key for t in targets}
    if owner[0] != "session" and unknown:
        raise InvalidInput("the cursor is not valid for these logs; start again without it")
    return [*targets, *(Target(k, k) for k in sorted(unknown) if valid_id(k))]


async def _read_workers(
    ctx: Context,
    targets: Sequence[Target],
    start: datetime,
    end: datetime,
    size: int,
    args: LogArgs,
    resume: Resume | None,
) -> tuple[WorkerBackend | None, str | None, list[WorkerSide]]:
    """The worker sides, each with its first page read; the backend they were read from
    and why it is not Cloud Logging, falling back to pod logs if Cloud Logging is down."""
    backend: WorkerBackend | None = resume.backend if resume is not None else None
    fallback: str | None = None
    workers: list[WorkerSide] = []
    if args.worker_logs and (resume is None or resume.workers):
        backend, fallback = choose_backend(ctx, resume)
        workers = await worker_sides(ctx, backend, targets, start, end, size, args, resume)
    try:
        pages = await ctx.logs.worker.load_many([w.read for w in workers])
    except BackendUnavailable as error:
        if not (backend == "cloud_logging" and resume is None and ctx.logs.kubernetes):
            raise
        backend = "kubernetes"
        fallback = f"Cloud Logging is unavailable ({error.message}): pod logs from Kubernetes"
        workers = await worker_sides(ctx, backend, targets, start, end, size, args, None)
        pages = await ctx.logs.worker.load_many([w.read for w in workers])
    for side, page in zip(workers, pages, strict=True):
        side.fill(page)
    return backend, fallback, workers


async def _read_clients(
    ctx: Context,
    targets: Sequence[Target],
    start: datetime,
    end: datetime,
    size: int,
    args: LogArgs,
    resume: Resume | None,
) -> list[ClientSide]:
    """The client sides, each with its first page read from Redis."""
    clients = client_sides(targets, start, end, size, args, resume)
    found = await ctx.logs.client.load_many([c.request for c in clients])
    for client, slice_ in zip(clients, found, strict=True):
        client.fill(slice_)
    return clients


def _truncation(
    workers: Sequence[WorkerSide],
    clients: Sequence[ClientSide],
    stop: LogLimit | None,
    capped: bool,
) -> tuple[bool, LogLimit | None]:
    """Whether any side has more to read, and why the answer is cut short: a worker
    source that stopped early or a session with more models than were read come before
    the merge's own reason."""
    has_next = any(w.position() is not None for w in workers) or any(
        c.position()[0] for c in clients
    )
    reason = stop if has_next else None
    if any(w.incomplete for w in workers):
        reason = LogLimit.SOURCE_LIMIT
    elif capped:
        reason = LogLimit.MODELS
    return has_next, reason


async def _merge_rounds(
    ctx: Context,
    workers: list[WorkerSide],
    clients: list[ClientSide],
    size: int,
    newest_first: bool,
    taken: Callable[[], None] | None = None,
) -> tuple[list[LogEntry], int, LogLimit | None]:
    """Merge the sides' pages, refilling the sides that block the merge (a few rounds at
    most): the entries, their bytes, and why the merge stopped."""
    out: list[LogEntry] = []
    used = 0
    rounds = 1
    while True:
        stop, used, blocked = merge(workers, clients, out, used, size, newest_first, taken)
        if not blocked or rounds >= MAX_ROUNDS or len(out) >= size:
            return out, used, stop
        rounds += 1
        await refill_blocked(ctx, blocked)


def _resume_at(
    state: Resume, workers: Sequence[WorkerSide], clients: Sequence[ClientSide]
) -> Resume:
    """``state`` with the position of every side that has more to read."""
    for w in workers:
        if (position := w.position()) is not None:
            state.workers[w.key] = position
    for c in clients:
        going, after = c.position()
        if going:
            state.clients[c.key] = after
    return state


def _combined(
    filters: Sequence[WorkerFilter], start: datetime, end: datetime
) -> tuple[str | None, str | None]:
    """One filter (and console link) for every worker read: theirs ORed."""
    if not filters:
        return None, None
    if len(filters) == 1:
        return filters[0].filter, filters[0].explorer_url
    text = " OR ".join(f"({f.filter})" for f in filters)
    project = None
    for f in filters:
        if f.explorer_url is not None:
            project = parse_qs(urlsplit(f.explorer_url).query).get("project", [None])[0]
            break
    if len(text) > MAX_FILTER_CHARS:
        return None, None
    return text, None if project is None else explorer_url(project, text, start, end)

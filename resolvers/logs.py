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

import base64
import binascii
import enum
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from openrl_inspect.adapters.cloud_logging import LogEntry, LogPage, LogQuery, explorer_url
from openrl_inspect.adapters.cloud_logging_paging import entry_size
from openrl_inspect.adapters.errors import (
    BackendNotConfigured,
    BackendUnavailable,
    InvalidInput,
)
from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.adapters.logfilter import MAX_FILTER_CHARS, check_severity, check_value
from openrl_inspect.adapters.redis_logs import ClientLogRequest, ClientLogSlice
from openrl_inspect.context import Context
from openrl_inspect.loaders.logs import WorkerBackend, WorkerRead, first_error
from openrl_inspect.resolvers import state as R
from openrl_inspect.resolvers.paging import page_size
from openrl_inspect.state.keys import valid_id

# The merged answer's byte budget (entry text, as the adapters count it).
MAX_LOG_BYTES = 262_144
# A session's logs read its newest models, at most this many.
MAX_SESSION_MODELS = 10
# Default windows: around a failure, before an end, or the last hour.
BEFORE_FAILURE = timedelta(minutes=10)
AFTER_FAILURE = timedelta(minutes=2)
RECENT = timedelta(hours=1)
MAX_WINDOW = timedelta(hours=168)
# Reads of a side within one answer (the first and the refills of a side that ran out).
MAX_ROUNDS = 3
_MAX_CURSOR_CHARS = 65_536


class LogLimit(enum.StrEnum):
    """Why an answer is short: the worker adapters' reasons, and ``MODELS`` (a session
    with more models than are read)."""

    LIMIT = "limit"
    MAX_ENTRIES = "max_entries"
    MAX_BYTES = "max_bytes"
    SCAN_BUDGET = "scan_budget"
    TIME_BUDGET = "time_budget"
    SOURCE_LIMIT = "source_limit"
    MODELS = "models"


@dataclass(frozen=True)
class LogArgs:
    """The GraphQL arguments of a logs field, already typed."""

    since: datetime | None = None
    until: datetime | None = None
    severity: str | None = None
    text: str | None = None
    role: str | None = None
    pod: str | None = None
    newest_first: bool = False
    first: int | None = None
    after: str | None = None
    worker_logs: bool = True
    client_logs: bool = True


@dataclass(frozen=True)
class WorkerFilter:
    """The exact filter one worker-log read used (``key``: model id or namespace/pod)."""

    key: str
    filter: str
    explorer_url: str | None


@dataclass(frozen=True)
class LogAnswer:
    entries: tuple[LogEntry, ...]
    start: datetime
    end: datetime
    next_cursor: str | None
    has_previous: bool
    truncated: bool
    truncated_reason: LogLimit | None
    bytes_used: int
    backend: WorkerBackend | None
    fallback_reason: str | None
    filters: tuple[WorkerFilter, ...]
    filter: str | None
    explorer_url: str | None


# ------------------------------------------------------------------------ entry points


async def model_logs(ctx: Context, mid: str, args: LogArgs) -> LogAnswer:
    rec = await R.model(ctx, mid)
    at = rec.transitions
    if rec.state == "failed" and "failed" in at:
        default = _around(at["failed"], BEFORE_FAILURE, AFTER_FAILURE)
    elif rec.state == "ended" and "ended" in at:
        default = _around(at["ended"], RECENT, AFTER_FAILURE)
    else:
        default = _around(ctx.now, RECENT, timedelta(0))
    return await _logs(ctx, ("model", mid), [_Target(mid, mid)], default, args)


async def session_logs(ctx: Context, sid: str, args: LogArgs) -> LogAnswer:
    rec = await R.session(ctx, sid)
    if rec.state == "closed" and rec.closed_at is not None:
        default = _around(rec.closed_at, RECENT, AFTER_FAILURE)
    else:
        default = _around(ctx.now, RECENT, timedelta(0))
    page = await R.session_models(ctx, sid, MAX_SESSION_MODELS, None)
    targets = [_Target(m.id, m.id) for _, m in page.items]
    return await _logs(ctx, ("session", sid), targets, default, args, capped=page.has_next)


async def pod_logs(ctx: Context, namespace: str, name: str, args: LogArgs) -> LogAnswer:
    """A pod's own logs (no client logs: clients report per model, not per pod)."""
    if args.role is not None or args.pod is not None:
        raise InvalidInput("a pod's logs take no role or pod filter")
    key = ObjectKey(namespace, name)
    target = _Target(f"{namespace}/{name}", None, pod=key)
    default = _around(ctx.now, RECENT, timedelta(0))
    args = replace(args, client_logs=False)
    return await _logs(ctx, ("pod", target.key), [target], default, args)


# ----------------------------------------------------------------------------- sides


@dataclass(frozen=True)
class _Target:
    key: str
    model_id: str | None
    pod: ObjectKey | None = None


def _around(at: float, before: timedelta, after: timedelta) -> tuple[datetime, datetime]:
    moment = datetime.fromtimestamp(at, tz=UTC)
    return moment - before, moment + after


Key = tuple[datetime, int, str, str]


@dataclass
class _WorkerSide:
    key: str
    read: WorkerRead
    skip: int  # entries of ``read``'s page returned by earlier answers
    pods: tuple[str, ...] = ()
    page: LogPage | None = None
    pos: int = 0
    first_page: LogPage | None = None
    # A page said lines in the window were out of the backend's reach.
    incomplete: bool = False

    def fill(self, page: LogPage) -> None:
        self.page = page
        self.pos = self.skip
        if self.first_page is None:
            self.first_page = page
        self.incomplete = self.incomplete or page.truncated_reason == "source_limit"

    def head(self) -> LogEntry | None:
        assert self.page is not None
        return self.page.entries[self.pos] if self.pos < len(self.page.entries) else None

    def key_of(self, entry: LogEntry) -> Key:
        return (entry.timestamp, 0, self.key, entry.insert_id or "")

    def more(self) -> bool:
        assert self.page is not None
        return self.page.next_cursor is not None

    def horizon(self) -> Key | None:
        assert self.page is not None
        return self.key_of(self.page.entries[-1]) if self.page.entries else None

    def reason(self) -> LogLimit:
        assert self.page is not None
        return LogLimit(self.page.truncated_reason or "limit")

    def refill(self) -> None:
        assert self.page is not None and self.page.next_cursor is not None
        self.read = replace(self.read, cursor=self.page.next_cursor)
        self.skip = 0
        self.page = None

    def position(self) -> list[Any] | None:
        """[cursor, skip, limit, pods] to resume at, or None when this side is done."""
        assert self.page is not None
        limit = self.read.query.limit
        if self.pos < len(self.page.entries):
            return [self.read.cursor, self.pos, limit, list(self.pods)]
        if self.page.next_cursor is not None:
            return [self.page.next_cursor, 0, limit, list(self.pods)]
        return None


@dataclass
class _ClientSide:
    request: ClientLogRequest
    slice: ClientLogSlice | None = None
    pos: int = 0
    last: tuple[float, str] | None = None

    @property
    def key(self) -> str:
        return self.request.model_id

    def fill(self, found: ClientLogSlice) -> None:
        self.slice, self.pos = found, 0

    def head(self) -> LogEntry | None:
        assert self.slice is not None
        lines = self.slice.lines
        return lines[self.pos].entry if self.pos < len(lines) else None

    def head_key(self) -> Key:
        assert self.slice is not None
        line = self.slice.lines[self.pos]
        return (line.entry.timestamp, 1, line.model_id, line.member)

    def more(self) -> bool:
        assert self.slice is not None
        return not self.slice.exhausted

    def horizon(self) -> Key | None:
        assert self.slice is not None
        if self.slice.scanned_to is None:
            return None
        score, member = self.slice.scanned_to
        return (datetime.fromtimestamp(score, tz=UTC), 1, self.key, member)

    def taken(self) -> None:
        assert self.slice is not None
        line = self.slice.lines[self.pos]
        self.last = (line.score, line.member)
        self.pos += 1

    def refill(self) -> None:
        assert self.slice is not None
        self.request = replace(self.request, after=self.slice.scanned_to or self.request.after)
        self.slice = None

    def position(self) -> tuple[bool, list[Any] | None]:
        """(not done, [score, member] to resume after, or None for the window's start)."""
        assert self.slice is not None
        resume = self.last or self.request.after
        if self.pos < len(self.slice.lines):
            return True, None if resume is None else list(resume)
        if not self.slice.exhausted:
            after = self.slice.scanned_to or resume
            return True, None if after is None else list(after)
        return False, None


# ----------------------------------------------------------------------------- cursors


@dataclass
class _Resume:
    backend: WorkerBackend | None
    start: datetime
    end: datetime
    workers: dict[str, list[Any]] = field(default_factory=dict)
    clients: dict[str, list[Any] | None] = field(default_factory=dict)


def _fingerprint(owner: tuple[str, str], args: LogArgs) -> str:
    body = [
        *owner,
        args.severity,
        args.text,
        args.role,
        args.pod,
        args.newest_first,
        args.worker_logs,
        args.client_logs,
    ]
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _encode(print_: str, state: _Resume) -> str:
    body = {
        "v": 1,
        "q": print_,
        "b": state.backend,
        "s": state.start.isoformat(),
        "e": state.end.isoformat(),
        "w": state.workers,
        "c": state.clients,
    }
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str, print_: str) -> _Resume:
    refused = InvalidInput("the cursor is not valid for these logs; start again without it")
    if not 0 < len(cursor) <= _MAX_CURSOR_CHARS:
        raise refused
    try:
        body = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(body, dict) or body.get("v") != 1 or body.get("q") != print_:
            raise ValueError
        backend = body["b"]
        if backend not in (None, "cloud_logging", "kubernetes"):
            raise ValueError
        start, end = datetime.fromisoformat(body["s"]), datetime.fromisoformat(body["e"])
        if start.tzinfo is None or end.tzinfo is None:
            raise ValueError
        workers, clients = body["w"], body["c"]
        if not isinstance(workers, dict) or not isinstance(clients, dict):
            raise ValueError
        for position in workers.values():
            cursor_, skip, limit, pods = position
            ok = (
                (cursor_ is None or isinstance(cursor_, str))
                and _is_int(skip, 0, 10_000)
                and _is_int(limit, 1, 10_000)
                and isinstance(pods, list)
                and all(isinstance(p, str) for p in pods)
            )
            if not ok:
                raise ValueError
        for mid, after in clients.items():
            if not valid_id(mid):
                raise ValueError
            if after is not None:
                score, member = after
                if not isinstance(score, int | float) or not isinstance(member, str):
                    raise ValueError
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise refused from None
    return _Resume(backend, start, end, workers, clients)


def _is_int(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


# ------------------------------------------------------------------------------- merge


def _window(
    args: LogArgs, default: tuple[datetime, datetime], now: float, resume: _Resume | None
) -> tuple[datetime, datetime]:
    """``since``..``until``; one of them alone: until now, or the hour before ``until``;
    neither: ``default``. A cursor keeps the window of the answer it came from."""
    for moment in (args.since, args.until):
        if moment is not None and (moment.tzinfo is None or moment.utcoffset() is None):
            raise InvalidInput("timestamps must carry a time zone")
    if args.since is not None:
        start = args.since
        end = args.until if args.until is not None else datetime.fromtimestamp(now, tz=UTC)
        if args.until is None and end < start:
            end = start + RECENT
    elif args.until is not None:
        start, end = args.until - RECENT, args.until
    else:
        start, end = default
    if resume is not None:
        if (args.since is not None and args.since != resume.start) or (
            args.until is not None and args.until != resume.end
        ):
            raise InvalidInput("the cursor was made for another time window")
        start, end = resume.start, resume.end
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    if end < start:
        raise InvalidInput("the time window ends before it starts")
    if end - start > MAX_WINDOW:
        raise InvalidInput(f"the time window may span at most {MAX_WINDOW.days * 24} hours")
    return start, end


def _check_args(args: LogArgs) -> LogArgs:
    for value in (args.text, args.role, args.pod):
        if value is not None:
            check_value(value)
            if value == "":
                raise InvalidInput("filter values must not be empty")
    severity = check_severity(args.severity) if args.severity is not None else None
    if not (args.worker_logs or args.client_logs):
        raise InvalidInput("ask for worker logs, client logs or both")
    return replace(args, severity=severity)


def _choose(ctx: Context, resume: _Resume | None) -> tuple[WorkerBackend, str | None]:
    """The worker-log backend, and why it is not Cloud Logging (when it is not)."""
    logs = ctx.logs
    if resume is not None and resume.backend is not None:
        if resume.backend == "kubernetes":
            return "kubernetes", "pod logs from Kubernetes, as for the first page"
        return resume.backend, None
    if logs.cloud_logging:
        return "cloud_logging", None
    if logs.kubernetes:
        return "kubernetes", "Cloud Logging is not configured: pod logs from Kubernetes"
    raise BackendNotConfigured(
        "cloud_logging",
        "no worker log backend is configured (Cloud Logging or Kubernetes); "
        "ask with workerLogs: false for the client logs alone",
    )


async def _logs(
    ctx: Context,
    owner: tuple[str, str],
    targets: Sequence[_Target],
    default: tuple[datetime, datetime],
    args: LogArgs,
    *,
    capped: bool = False,
) -> LogAnswer:
    args = _check_args(args)
    size = page_size(ctx, ctx.limits.max_page_size if args.first is None else args.first)
    if size == 0:
        raise InvalidInput("first must be at least 1 for logs")
    print_ = _fingerprint(owner, args)
    resume = _decode(args.after, print_) if args.after is not None else None
    start, end = _window(args, default, ctx.now, resume)
    if resume is not None:
        # A session's cursor keeps the models its first page read.
        unknown = (set(resume.workers) | set(resume.clients)) - {t.key for t in targets}
        if owner[0] != "session" and unknown:
            raise InvalidInput("the cursor is not valid for these logs; start again without it")
        targets = [*targets, *(_Target(k, k) for k in sorted(unknown) if valid_id(k))]

    backend: WorkerBackend | None = resume.backend if resume is not None else None
    fallback: str | None = None
    workers: list[_WorkerSide] = []
    if args.worker_logs and (resume is None or resume.workers):
        backend, fallback = _choose(ctx, resume)
        workers = await _worker_sides(ctx, backend, targets, start, end, size, args, resume)
    clients = _client_sides(targets, start, end, size, args, resume)

    # Round one: every side, with the fallback to pod logs if Cloud Logging is down.
    pages = await ctx.logs.worker.load_many([w.read for w in workers])
    error = first_error(pages)
    if (
        error is not None
        and backend == "cloud_logging"
        and resume is None
        and isinstance(error, BackendUnavailable)
        and ctx.logs.kubernetes
    ):
        backend = "kubernetes"
        fallback = f"Cloud Logging is unavailable ({error.message}): pod logs from Kubernetes"
        workers = await _worker_sides(ctx, backend, targets, start, end, size, args, None)
        pages = await ctx.logs.worker.load_many([w.read for w in workers])
        error = first_error(pages)
    if error is not None:
        raise error
    for side, page in zip(workers, pages, strict=True):
        assert isinstance(page, LogPage)
        side.fill(page)
    found = await ctx.logs.client.load_many([c.request for c in clients])
    for client, slice_ in zip(clients, found, strict=True):
        client.fill(slice_)

    out: list[LogEntry] = []
    used = 0
    rounds = 1
    while True:
        stop, used, blocked = _merge(workers, clients, out, used, size, args.newest_first)
        if not blocked or rounds >= MAX_ROUNDS or len(out) >= size:
            break
        rounds += 1
        await _refill(ctx, blocked)

    has_next = any(w.position() is not None for w in workers) or any(
        c.position()[0] for c in clients
    )
    reason = stop if has_next else None
    if any(w.incomplete for w in workers):
        reason = LogLimit.SOURCE_LIMIT
    elif capped:
        reason = LogLimit.MODELS
    next_cursor = None
    if has_next:
        state = _Resume(backend, start, end)
        for w in workers:
            if (position := w.position()) is not None:
                state.workers[w.key] = position
        for c in clients:
            going, after = c.position()
            if going:
                state.clients[c.key] = after
        next_cursor = _encode(print_, state)
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
    )


async def _worker_sides(
    ctx: Context,
    backend: WorkerBackend,
    targets: Sequence[_Target],
    start: datetime,
    end: datetime,
    size: int,
    args: LogArgs,
    resume: _Resume | None,
) -> list[_WorkerSide]:
    chosen = [t for t in targets if resume is None or t.key in resume.workers]
    pods: dict[str, tuple[str, ...]] = {}
    if backend == "cloud_logging" and resume is None:
        mids = [t.model_id for t in chosen if t.model_id is not None]
        found = await ctx.logs.model_pods.load_many(mids)
        pods = dict(zip(mids, found, strict=True))
    sides = []
    for target in chosen:
        cursor: str | None = None
        skip, limit = 0, size
        model_pods = pods.get(target.key, ())
        if resume is not None:
            cursor, skip, limit, known = resume.workers[target.key]
            model_pods = tuple(known)
        query = LogQuery(
            start=start,
            end=end,
            model_id=target.model_id,
            model_pods=model_pods if target.model_id is not None else (),
            pod=target.pod.name if target.pod is not None else args.pod,
            role=args.role,
            severity_floor=args.severity,
            text=args.text,
            newest_first=args.newest_first,
            limit=limit,
        )
        pods_arg = (target.pod,) if target.pod is not None and backend == "kubernetes" else None
        read = WorkerRead(backend, query, cursor, pods_arg)
        sides.append(_WorkerSide(target.key, read, skip, query.model_pods))
    return sides


def _client_sides(
    targets: Sequence[_Target],
    start: datetime,
    end: datetime,
    size: int,
    args: LogArgs,
    resume: _Resume | None,
) -> list[_ClientSide]:
    # Client lines have no pod or role: a pod or role filter leaves them out.
    if not args.client_logs or args.pod is not None or args.role is not None:
        return []
    sides = []
    for target in targets:
        if target.model_id is None or (resume is not None and target.key not in resume.clients):
            continue
        after = resume.clients[target.key] if resume is not None else None
        request = ClientLogRequest(
            model_id=target.model_id,
            start=start.timestamp(),
            end=end.timestamp(),
            limit=size,
            newest_first=args.newest_first,
            after=None if after is None else (float(after[0]), str(after[1])),
            severity_floor=args.severity,
            text=args.text,
        )
        sides.append(_ClientSide(request))
    return sides


Side = _WorkerSide | _ClientSide


def _merge(
    workers: list[_WorkerSide],
    clients: list[_ClientSide],
    out: list[LogEntry],
    used: int,
    size: int,
    newest_first: bool,
) -> tuple[LogLimit | None, int, list[Side]]:
    """Move entries from the sides' pages to ``out`` in time order.

    Returns why it stopped (None: every side ran out), the bytes used, and the sides
    that ran out of read entries while having more (reading those again may go on).
    """
    sides: list[Side] = [*workers, *clients]

    def later(a: Key, b: Key) -> bool:
        return a < b if newest_first else a > b

    while True:
        if len(out) >= size:
            return LogLimit.LIMIT, used, []
        heads: list[tuple[Key, Side, LogEntry]] = []
        blocked: list[Side] = []
        for side in sides:
            entry = side.head()
            if entry is not None:
                key = side.key_of(entry) if isinstance(side, _WorkerSide) else side.head_key()
                heads.append((key, side, entry))
            elif side.more():
                blocked.append(side)
        if not heads:
            if not blocked:
                return None, used, []
            return _reason(blocked), used, blocked
        key, side, entry = heads[0]
        for candidate in heads[1:]:
            if later(key, candidate[0]):
                key, side, entry = candidate
        for other in blocked:
            horizon = other.horizon()
            if horizon is None or later(key, horizon):
                return _reason(blocked), used, blocked
        cost = entry_size(entry)
        if out and used + cost > MAX_LOG_BYTES:
            return LogLimit.MAX_BYTES, used, []
        out.append(entry)
        used += cost
        if isinstance(side, _WorkerSide):
            side.pos += 1
        else:
            side.taken()


def _reason(blocked: Sequence[Side]) -> LogLimit:
    for side in blocked:
        if isinstance(side, _WorkerSide):
            return side.reason()
    return LogLimit.SCAN_BUDGET


async def _refill(ctx: Context, blocked: Sequence[Side]) -> None:
    workers = [s for s in blocked if isinstance(s, _WorkerSide)]
    clients = [s for s in blocked if isinstance(s, _ClientSide)]
    for side in workers:
        side.refill()
    for client in clients:
        client.refill()
    pages = await ctx.logs.worker.load_many([w.read for w in workers])
    if (error := first_error(pages)) is not None:
        raise error
    for side, page in zip(workers, pages, strict=True):
        assert isinstance(page, LogPage)
        side.fill(page)
    found = await ctx.logs.client.load_many([c.request for c in clients])
    for client, slice_ in zip(clients, found, strict=True):
        client.fill(slice_)


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

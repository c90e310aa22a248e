"""The sides of a logs answer: the worker-log backend chosen, and each side read a page
at a time (a model's or pod's worker logs, a model's client logs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.adapters.logs import LogEntry, LogPage, LogQuery
from openrl_inspect.adapters.redis import ClientLogRequest, ClientLogSlice
from openrl_inspect.core.errors import BackendNotConfigured
from openrl_inspect.loaders.logs import WorkerBackend, WorkerRead
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.logs.args import LogArgs, LogLimit
from openrl_inspect.resolvers.logs.cursor import Resume
from openrl_inspect.resolvers.logs.events import event_objects


@dataclass(frozen=True)
class Target:
    key: str
    model_id: str | None
    pod: ObjectKey | None = None


Key = tuple[datetime, int, str, str]


@dataclass
class WorkerSide:
    key: str
    read: WorkerRead
    skip: int  # entries of ``read``'s page returned by earlier answers
    pods: tuple[str, ...] = ()
    events: tuple[tuple[str, str, str], ...] = ()
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
        """[cursor, skip, limit, pods, event objects] to resume at, or None when this
        side is done (the pods and objects rebuild the very filter the cursor is for)."""
        assert self.page is not None
        limit = self.read.query.limit
        kept = [list(self.pods), [list(o) for o in self.events]]
        if self.pos < len(self.page.entries):
            return [self.read.cursor, self.pos, limit, *kept]
        if self.page.next_cursor is not None:
            return [self.page.next_cursor, 0, limit, *kept]
        return None


@dataclass
class ClientSide:
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


Side = WorkerSide | ClientSide


def choose_backend(ctx: Context, resume: Resume | None) -> tuple[WorkerBackend, str | None]:
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


async def worker_sides(
    ctx: Context,
    backend: WorkerBackend,
    targets: Sequence[Target],
    start: datetime,
    end: datetime,
    size: int,
    args: LogArgs,
    resume: Resume | None,
) -> list[WorkerSide]:
    chosen = [t for t in targets if resume is None or t.key in resume.workers]
    pods: dict[str, tuple[str, ...]] = {}
    if backend == "cloud_logging" and resume is None:
        mids = [t.model_id for t in chosen if t.model_id is not None]
        found = await ctx.logs.model_pods.load_many(mids)
        pods = dict(zip(mids, found, strict=True))
    objects = await event_objects(ctx, chosen, args) if args.events and resume is None else {}
    sides = []
    for target in chosen:
        cursor: str | None = None
        skip, limit = 0, size
        model_pods = pods.get(target.key, ())
        events = objects.get(target.key, ())
        if resume is not None:
            cursor, skip, limit, known, known_events = resume.workers[target.key]
            model_pods = tuple(known)
            events = tuple((o[0], o[1], o[2]) for o in known_events)
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
            event_objects=events,
        )
        pods_arg = (target.pod,) if target.pod is not None and backend == "kubernetes" else None
        read = WorkerRead(backend, query, cursor, pods_arg)
        sides.append(WorkerSide(target.key, read, skip, query.model_pods, events))
    return sides


def client_sides(
    targets: Sequence[Target],
    start: datetime,
    end: datetime,
    size: int,
    args: LogArgs,
    resume: Resume | None,
) -> list[ClientSide]:
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
        sides.append(ClientSide(request))
    return sides


async def refill_blocked(ctx: Context, blocked: Sequence[Side]) -> None:
    workers = [s for s in blocked if isinstance(s, WorkerSide)]
    clients = [s for s in blocked if isinstance(s, ClientSide)]
    for side in workers:
        side.refill()
    for client in clients:
        client.refill()
    pages = await ctx.logs.worker.load_many([w.read for w in workers])
    for side, page in zip(workers, pages, strict=True):
        side.fill(page)
    found = await ctx.logs.client.load_many([c.request for c in clients])
    for client, slice_ in zip(clients, found, strict=True):
        client.fill(slice_)

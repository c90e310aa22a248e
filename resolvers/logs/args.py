"""The arguments of a logs field: their records, checks, and the default time windows."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from openrl_inspect.adapters.logs import LogEntry, check_severity, check_value
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.loaders.logs import WorkerBackend

if TYPE_CHECKING:
    from openrl_inspect.resolvers.logs.cursor import EntryCursor, Resume

# A session's logs read its newest models, at most this many.
MAX_SESSION_MODELS = 10
# Default windows: around a failure, before an end, or the last hour.
BEFORE_FAILURE = timedelta(minutes=10)
AFTER_FAILURE = timedelta(minutes=2)
RECENT = timedelta(hours=1)
MAX_WINDOW = timedelta(hours=168)


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
    # Also the Kubernetes Events of the owner's pods and Workloads (with the worker logs).
    events: bool = False


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
    # The cursor after each entry, in ``entries`` order (encoded when read).
    cursors: tuple[EntryCursor, ...] = ()


def around(at: float, before: timedelta, after: timedelta) -> tuple[datetime, datetime]:
    moment = datetime.fromtimestamp(at, tz=UTC)
    return moment - before, moment + after


def window_of(
    args: LogArgs, default: tuple[datetime, datetime], now: float, resume: Resume | None
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


def check_args(args: LogArgs) -> LogArgs:
    for value in (args.text, args.role, args.pod):
        if value is not None:
            check_value(value)
            if value == "":
                raise InvalidInput("filter values must not be empty")
    severity = check_severity(args.severity) if args.severity is not None else None
    if not (args.worker_logs or args.client_logs):
        raise InvalidInput("ask for worker logs, client logs or both")
    if args.events and not args.worker_logs:
        raise InvalidInput("events come with the worker logs: ask for workerLogs too")
    return replace(args, severity=severity)

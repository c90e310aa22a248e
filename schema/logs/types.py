"""Logs: worker logs (Cloud Logging, or the pods' logs from Kubernetes) and client logs
(Redis), merged in time order; their types (the fields adding ``logs`` to Model,
Session and Pod are in ``fields``).

Every answer is bounded (entries and bytes), says when and why it stopped, and carries
the exact filter the worker-log backend applied with a Logs Explorer link for the same
window. Filter arguments are values, never query text: whatever they hold, they select
by equality or substring and cannot change what else is selected. When the backends
fail, only these fields go null (with a coded error); the rest of the answer stands.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING

import strawberry
from openrl_inspect.adapters.logs import LogEntry as LogEntryRecord
from openrl_inspect.adapters.logs import LogEvent as LogEventRecord
from openrl_inspect.resolvers.logs import reads as logs_reads
from openrl_inspect.schema.common import as_json
from openrl_inspect.schema.connection import PageInfo
from strawberry.scalars import JSON

if TYPE_CHECKING:
    pass


@strawberry.enum(description="LogSeverity of Cloud Logging, lowest first.")
class LogSeverity(Enum):
    DEFAULT = strawberry.enum_value("DEFAULT", description="No severity was set (lowest).")
    DEBUG = strawberry.enum_value("DEBUG", description="Debug or trace information.")
    INFO = strawberry.enum_value("INFO", description="Routine information.")
    NOTICE = strawberry.enum_value("NOTICE", description="Normal but significant events.")
    WARNING = strawberry.enum_value("WARNING", description="Events that might cause problems.")
    ERROR = strawberry.enum_value("ERROR", description="Events likely to cause problems.")
    CRITICAL = strawberry.enum_value(
        "CRITICAL", description="Events that cause more severe problems or outages."
    )
    ALERT = strawberry.enum_value("ALERT", description="A person must act immediately.")
    EMERGENCY = strawberry.enum_value(
        "EMERGENCY", description="One or more systems are unusable (highest)."
    )


@strawberry.enum(description="Where a log line came from.")
class LogSourceKind(Enum):
    WORKER = strawberry.enum_value(
        "worker", description="A worker's log, as shipped to Cloud Logging."
    )
    POD = strawberry.enum_value("pod", description="A pod's log, read from the Kubernetes API.")
    CLIENT = strawberry.enum_value("client", description="A line the client reported (Redis).")
    EVENT = strawberry.enum_value(
        "event",
        description="A Kubernetes Event about one of its pods or Workloads (Cloud Logging's "
        "`events` log, or the Kubernetes events cache): see `event`.",
    )


@strawberry.enum(description="The order of the lines in a logs answer and its pages.")
class LogOrder(Enum):
    OLDEST_FIRST = strawberry.enum_value(
        "oldest_first", description="From the window's start forward in time."
    )
    NEWEST_FIRST = strawberry.enum_value(
        "newest_first", description="From the window's end backward in time."
    )


@strawberry.enum(description="The backend the worker logs were read from.")
class LogBackend(Enum):
    CLOUD_LOGGING = strawberry.enum_value(
        "cloud_logging", description="Google Cloud Logging (the workers' shipped logs)."
    )
    KUBERNETES = strawberry.enum_value(
        "kubernetes", description="The pods' logs through the Kubernetes API (the fallback)."
    )


@strawberry.enum(description="Why a logs answer is short.")
class LogTruncation(Enum):
    LIMIT = strawberry.enum_value("limit", description="`first` lines were returned.")
    MAX_ENTRIES = strawberry.enum_value("max_entries", description="The server's entry cap.")
    MAX_BYTES = strawberry.enum_value("max_bytes", description="The answer's byte budget.")
    SCAN_BUDGET = strawberry.enum_value(
        "scan_budget", description="Too many lines were scanned for one answer."
    )
    TIME_BUDGET = strawberry.enum_value(
        "time_budget", description="The backend's time budget for one answer ran out."
    )
    SOURCE_LIMIT = strawberry.enum_value(
        "source_limit",
        description="Pod logs: a tail or byte cap left out lines of the window that no "
        "cursor reaches; narrow the window.",
    )
    MODELS = strawberry.enum_value(
        "models", description="A session with more models than one answer reads."
    )


@strawberry.type(description="Who wrote a log line.")
class LogSource:
    kind: LogSourceKind = strawberry.field(description="Which kind of source it came from.")
    role: str | None = strawberry.field(description="The worker role (trainer, sampler).")
    pod: str | None = strawberry.field(
        description="The pod that wrote it (worker and pod lines); null for client lines."
    )
    container: str | None = strawberry.field(
        description="The container that wrote it, when the backend says."
    )
    model_id: strawberry.ID | None = strawberry.field(
        description="The model it belongs to, when known (a session's logs mix models)."
    )


@strawberry.type(name="LogEvent", description="What a Kubernetes Event line is about.")
class LogEventType:
    reason: str | None = strawberry.field(description="FailedScheduling, Evicted, BackOff...")
    type: str | None = strawberry.field(description="Normal or Warning.")
    kind: str = strawberry.field(description="The regarded object's kind: Pod, Workload...")
    namespace: str | None = strawberry.field(description="The regarded object's namespace.")
    name: str = strawberry.field(description="The regarded object's name.")
    component: str | None = strawberry.field(description="Who reported it.")

    @classmethod
    def from_record(cls, rec: LogEventRecord) -> LogEventType:
        return cls(
            reason=rec.reason,
            type=rec.type,
            kind=rec.kind,
            namespace=rec.namespace,
            name=rec.name,
            component=rec.component,
        )


@strawberry.type(description="One log line, bounded: a long message ends with a marker.")
class LogEntry:
    time: datetime = strawberry.field(description="When the line was written (UTC).")
    severity: LogSeverity = strawberry.field(
        description="Its severity (DEFAULT when the source set none)."
    )
    source: LogSource = strawberry.field(description="Who wrote it.")
    message: str = strawberry.field(
        description="The line's text; a long one is cut and ends with a marker "
        "(see `truncatedChars`)."
    )
    fields: JSON = strawberry.field(description="Structured fields (bounded in number/size).")
    truncated_chars: int = strawberry.field(description="Characters cut from the message.")
    insert_id: str | None = strawberry.field(description="The backend's id of the line.")
    event: LogEventType | None = strawberry.field(
        description="Set when the line is a Kubernetes Event (source kind EVENT)."
    )

    @classmethod
    def from_record(cls, rec: LogEntryRecord) -> LogEntry:
        return cls(
            time=rec.timestamp,
            severity=LogSeverity(rec.severity),
            source=LogSource(
                kind=LogSourceKind(rec.source.value),
                role=rec.role,
                pod=rec.pod,
                container=rec.container,
                model_id=strawberry.ID(rec.model_id) if rec.model_id else None,
            ),
            message=rec.message,
            fields=as_json(dict(rec.fields)),
            truncated_chars=rec.truncated_chars,
            insert_id=rec.insert_id,
            event=LogEventType.from_record(rec.event) if rec.event else None,
        )


@strawberry.type(description="The exact filter of one worker-log read.")
class LogFilter:
    key: str = strawberry.field(description="The model id, or namespace/pod.")
    filter: str = strawberry.field(
        description="The filter the read applied, in the Logging query language (the "
        "pods' logs are filtered by the same expression)."
    )
    explorer_url: str | None = strawberry.field(
        description="A Logs Explorer link for it over the window; null for the pods' logs."
    )


@strawberry.type(description="One log line with the cursor that resumes after it.")
class LogEdge:
    _cursor: strawberry.Private[object]  # a cursor, encoded when selected (``EntryCursor``)
    node: LogEntry = strawberry.field(description="The line.")

    @strawberry.field(description="Pass as `after` to resume after this line.")
    def cursor(self) -> str:
        return str(self._cursor)


@strawberry.type(
    description="A bounded page of log lines in time order. `truncated` with "
    "`pageInfo.endCursor` when more follow (pass it as `after`)."
)
class LogConnection:
    edges: list[LogEdge] = strawberry.field(description="The page's lines with cursors.")
    nodes: list[LogEntry] = strawberry.field(description="The lines of `edges`, without cursors.")
    page_info: PageInfo = strawberry.field(description="Where the page sits; cursors to go on.")
    total_count: int | None = strawberry.field(
        description="Lines in the whole window, known only when this page holds all of "
        "them (no `after`, not truncated): the backends answer pages, not counts."
    )
    truncated: bool = strawberry.field(
        description="True when lines of the window were left out of this page: more "
        "follow (see `pageInfo`) or a budget cut them (see `truncatedReason`)."
    )
    truncated_reason: LogTruncation | None = strawberry.field(
        description="Why the page is short; null when not truncated."
    )
    bytes: int = strawberry.field(description="Bytes of line text in this page.")
    since: datetime = strawberry.field(description="The window's start (inclusive).")
    until: datetime = strawberry.field(description="The window's end (inclusive).")
    backend: LogBackend | None = strawberry.field(
        description="Where the worker logs came from; null when none were read."
    )
    fallback_reason: str | None = strawberry.field(
        description="Why the worker logs came from the pods' logs instead of Cloud Logging."
    )
    filter: str | None = strawberry.field(
        description="The exact worker-log filter (several reads: ORed), in the Logging "
        "query language."
    )
    explorer_url: str | None = strawberry.field(
        description="A Logs Explorer link for `filter` over the window: everything else."
    )
    filters: list[LogFilter] = strawberry.field(description="Each worker-log read's filter.")

    @classmethod
    def from_answer(cls, answer: logs_reads.LogAnswer) -> LogConnection:
        nodes = [LogEntry.from_record(e) for e in answer.entries]
        whole = not answer.has_previous and not answer.truncated
        return cls(
            edges=[
                LogEdge(_cursor=cursor, node=node)
                for cursor, node in zip(answer.cursors, nodes, strict=True)
            ],
            nodes=nodes,
            page_info=PageInfo(
                has_next_page=answer.next_cursor is not None,
                has_previous_page=answer.has_previous,
                start_cursor=str(answer.cursors[0]) if answer.cursors else None,
                end_cursor=answer.next_cursor,
            ),
            total_count=len(nodes) if whole else None,
            truncated=answer.truncated,
            truncated_reason=LogTruncation(answer.truncated_reason.value)
            if answer.truncated_reason
            else None,
            bytes=answer.bytes_used,
            since=answer.start,
            until=answer.end,
            backend=LogBackend(answer.backend) if answer.backend else None,
            fallback_reason=answer.fallback_reason,
            filter=answer.filter,
            explorer_url=answer.explorer_url,
            filters=[
                LogFilter(key=f.key, filter=f.filter, explorer_url=f.explorer_url)
                for f in answer.filters
            ],
        )

"""The timeline from Cloud Logging: the first ERROR or CRITICAL line of each distinct
message the model's workers wrote in the window."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.adapters.logs import LogQuery
from openrl_inspect.core.domain import TimelineKind, TimelineSource
from openrl_inspect.core.errors import BackendNotConfigured
from openrl_inspect.loaders.logs import WorkerRead
from openrl_inspect.resolvers.context import Context
from openrl_inspect.resolvers.diagnosis import LogSearch, Lookup
from openrl_inspect.resolvers.diagnosis.text import clip, statement
from openrl_inspect.resolvers.timeline.entries import Entry, Found, cut
from openrl_inspect.state.records import ModelRecord

# Error lines read per model, oldest first; distinct messages kept.
LOG_LINES = 200
LOG_MESSAGES = 20
_DIGITS = re.compile(r"\d+")
# A traceback's frames and header, shipped a line an entry: its last line says it.
_CONTINUATION = re.compile(r'^(\s|File "|Traceback \(most recent call last\))')


# --- Cloud Logging ---------------------------------------------------------------------------


def _shape(message: str) -> str:
    """A message with its numbers masked: lines differing only in ids, counts or times
    are one message."""
    return _DIGITS.sub("#", " ".join(message.split()))[:160]


async def cloud_logging(ctx: Context, rec: ModelRecord, since: float, until: float) -> Found:
    if not ctx.logs.cloud_logging:
        raise BackendNotConfigured("cloud_logging", "Cloud Logging is not configured")
    query = LogQuery(
        start=datetime.fromtimestamp(since, tz=UTC),
        end=datetime.fromtimestamp(max(until, since + 1.0), tz=UTC),
        model_id=rec.id,
        severity_floor="ERROR",
        newest_first=False,
        limit=LOG_LINES,
    )
    page = await ctx.logs.worker.load(WorkerRead("cloud_logging", query))
    firsts: dict[str, Entry] = {}
    for line in page.entries:
        shape = _shape(line.message)
        if shape in firsts or _CONTINUATION.match(line.message):
            continue
        at = line.timestamp.timestamp()
        pods = (ObjectKey("", line.pod),) if line.pod else ()
        search = LogSearch(pods=(), start=at - 60.0, end=at + 60.0, severity="ERROR")
        refs = tuple(
            x
            for x in (
                f"insertId {line.insert_id}" if line.insert_id else None,
                f"pod {line.pod}" if line.pod else None,
            )
            if x
        )
        firsts[shape] = Entry(
            at,
            TimelineSource.CLOUD_LOGGING,
            TimelineKind.LOG_ERROR,
            statement(f"{line.severity} {line.role or 'worker'}: {clip(line.message, 120)}"),
            rec.id,
            refs,
            Lookup(logs=search, pods=pods),
        )
        if len(firsts) >= LOG_MESSAGES:
            break
    found = cut(list(firsts.values()), since, until)
    return Found(found.entries, found.truncated or page.truncated)

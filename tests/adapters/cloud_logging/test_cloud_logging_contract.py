"""The same behaviour from both log sources: the real client against the fake Cloud
Logging server, and the in-memory twin. Answers are checked against the sample rows
filtered in plain Python (``cloud_logging_samples.expected``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from openrl_inspect.adapters.cloud_logging import CloudLoggingSource
from openrl_inspect.adapters.logs import (
    CloudLoggingSettings,
    LogPage,
    LogQuery,
    LogSource,
    LogSourceKind,
    TruncationReason,
)
from openrl_inspect.adapters.logs.memory import InMemoryLogSource
from openrl_inspect.core.errors import InvalidInput
from support.cloud_logging_samples import PROJECT, T0, Row, expected, sample_rows
from support.fake_cloud_logging import FakeCloudLogging, fake_cloud_logging

__all__ = ["fake_cloud_logging"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

MakeSource = Callable[..., LogSource]
WINDOW = LogQuery(start=T0, end=T0 + timedelta(minutes=10), limit=500)


@pytest.fixture(params=["memory", "cloud"])
async def make_source(request: pytest.FixtureRequest) -> AsyncIterator[MakeSource]:
    """Builds a source holding ``rows``, with settings overridden by keywords."""
    made: list[LogSource] = []

    def make(rows: list[Row], **overrides: Any) -> LogSource:
        source: LogSource
        if request.param == "memory":
            memory = InMemoryLogSource(CloudLoggingSettings(**overrides), project=PROJECT)
            memory.append(*(row.wire() for row in rows))
            source = memory
        else:
            fake: FakeCloudLogging = request.getfixturevalue("fake_cloud_logging")
            fake.add(*(row.wire() for row in rows))
            settings = CloudLoggingSettings(
                project=PROJECT, api_endpoint=fake.url, anonymous=True, **overrides
            )
            source = CloudLoggingSource(settings)
        made.append(source)
        return source

    yield make
    for source in made:
        await source.aclose()


async def read_all(source: LogSource, query: LogQuery, max_answers: int = 100) -> list[LogPage]:
    pages = [await source.entries(query)]
    while pages[-1].next_cursor is not None:
        assert len(pages) < max_answers, "the cursor never ran out"
        pages.append(await source.entries(query, pages[-1].next_cursor))
    return pages


def ids(pages: list[LogPage]) -> list[str | None]:
    return [entry.insert_id for page in pages for entry in page.entries]


QUERIES = {
    "window": WINDOW,
    "narrow window": replace(
        WINDOW, start=T0 + timedelta(seconds=60), end=T0 + timedelta(seconds=120)
    ),
    "model": replace(WINDOW, model_id="m-alpha"),
    "model or its pods": replace(WINDOW, model_id="m-beta", model_pods=("other-pod-1",)),
    "pod": replace(WINDOW, pod="m-beta-pod-2"),
    "role": replace(WINDOW, role="rollout"),
    "severity floor": replace(WINDOW, severity_floor="warning"),
    "text, any case": replace(WINDOW, text="nan DETECTED"),
    "everything": replace(
        WINDOW,
        model_id="m-alpha",
        role="rollout",
        severity_floor="INFO",
        text="loss",
        newest_first=True,
    ),
    "newest first": replace(WINDOW, newest_first=True),
}


@pytest.mark.parametrize("name", QUERIES)
async def test_answers_exactly_the_matching_entries_in_order(
    make_source: MakeSource, name: str
) -> None:
    rows = sample_rows()
    query = QUERIES[name]
    want = expected(rows, query)
    assert want, "the sample data should match every query"
    page = await make_source(rows).entries(query)
    assert ids([page]) == want
    assert not page.truncated and page.next_cursor is None and page.truncated_reason is None


async def test_entries_carry_the_record_fields(make_source: MakeSource) -> None:
    rows = sample_rows(10)
    page = await make_source(rows).entries(WINDOW)
    by_id = {row.insert_id: row for row in rows}
    for entry in page.entries:
        assert entry.insert_id is not None
        row = by_id[entry.insert_id]
        assert entry.timestamp == row.timestamp
        assert (entry.severity, entry.model_id, entry.role) == (
            row.severity,
            row.model_id,
            row.role,
        )
        assert (entry.pod, entry.container) == (row.pod, row.container)
        assert entry.message == row.message
        assert entry.source is LogSourceKind.WORKER
        assert dict(entry.fields) == ({"step": 7, "worker": row.pod} if row.structured else {})


@pytest.mark.parametrize("newest_first", [False, True])
async def test_cursors_walk_every_entry_once(make_source: MakeSource, newest_first: bool) -> None:
    rows = sample_rows()
    query = replace(WINDOW, role="rollout", limit=7, newest_first=newest_first)
    pages = await read_all(make_source(rows, page_size=5), query)
    assert ids(pages) == expected(rows, query)
    assert len(pages) > 2
    assert all(p.truncated_reason is TruncationReason.LIMIT for p in pages[:-1])
    assert pages[-1].next_cursor is None


async def test_limit_above_the_cap_is_cut_to_max_entries(make_source: MakeSource) -> None:
    rows = sample_rows()
    page = await make_source(rows, max_entries=6).entries(replace(WINDOW, limit=50))
    assert ids([page]) == expected(rows, WINDOW)[:6]
    assert page.truncated and page.truncated_reason is TruncationReason.MAX_ENTRIES


async def test_byte_budget_stops_inside_a_page_and_the_cursor_resumes_there(
    make_source: MakeSource,
) -> None:
    rows = sample_rows()
    budget = 500
    source = make_source(rows, max_bytes=budget, page_size=50)
    pages = await read_all(source, WINDOW)
    assert ids(pages) == expected(rows, WINDOW)
    assert len(pages) > 3
    for page in pages:
        assert page.bytes_used <= budget
        assert len(page.entries) >= 1
    assert all(p.truncated_reason is TruncationReason.MAX_BYTES for p in pages[:-1])


async def test_scan_budget_limits_backend_pages_per_answer(make_source: MakeSource) -> None:
    rows = sample_rows()
    pages = await read_all(make_source(rows, page_size=1, max_pages=3), WINDOW)
    assert ids(pages) == expected(rows, WINDOW)
    assert all(len(p.entries) == 3 for p in pages[:-1])
    assert all(p.truncated_reason is TruncationReason.SCAN_BUDGET for p in pages[:-1])


async def test_long_messages_are_cut_with_a_marker(make_source: MakeSource) -> None:
    long_row = replace(sample_rows(1)[0], message="x" * 5000, structured=False)
    source = make_source([long_row], max_message_chars=100)
    (entry,) = (await source.entries(WINDOW)).entries
    assert entry.message == "x" * 100 + "… [truncated 4900 chars]"
    assert entry.truncated_chars == 4900


async def test_a_cursor_only_fits_its_own_query(make_source: MakeSource) -> None:
    rows = sample_rows()
    source = make_source(rows)
    first = await source.entries(replace(WINDOW, limit=3))
    assert first.next_cursor is not None
    with pytest.raises(InvalidInput):
        await source.entries(replace(WINDOW, limit=3, role="trainer"), first.next_cursor)
    with pytest.raises(InvalidInput):
        await source.entries(WINDOW, "not-a-cursor")


async def test_the_explorer_link_names_the_filter_and_window(make_source: MakeSource) -> None:
    page = await make_source(sample_rows()).entries(replace(WINDOW, model_id="m-alpha"))
    assert page.explorer_url is not None
    assert page.explorer_url.endswith(f"?project={PROJECT}")
    assert "model-id" in page.filter

"""The real google-cloud-logging client (REST, anonymous) against the fake server:
what goes over the wire, real page tokens in cursors, and failures translated."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

import anyio
import pytest
from hypothesis import example, given, settings, strategies
from openrl_inspect.adapters.cloud_logging import CloudLoggingSource
from openrl_inspect.adapters.cloud_logging._client import load_settings
from openrl_inspect.adapters.logs import CloudLoggingSettings, LogPage, LogQuery
from openrl_inspect.adapters.logs._filter import tokenize
from openrl_inspect.adapters.logs.memory import wire_entry
from openrl_inspect.core.errors import (
    BackendError,
    BackendProtocolError,
    BackendTimeout,
    BackendUnavailable,
    InvalidInput,
    SettingsError,
)
from support.cloud_logging_samples import PROJECT, T0, expected, sample_rows
from support.fake_cloud_logging import FakeCloudLogging, fake_cloud_logging

__all__ = ["fake_cloud_logging"]  # the fixture, used by name below

WINDOW = LogQuery(start=T0, end=T0 + timedelta(minutes=10), limit=500)


def settings_for(fake: FakeCloudLogging, **overrides: Any) -> CloudLoggingSettings:
    return CloudLoggingSettings(project=PROJECT, api_endpoint=fake.url, anonymous=True, **overrides)


@pytest.fixture
def loaded(fake_cloud_logging: FakeCloudLogging) -> FakeCloudLogging:
    fake_cloud_logging.add(*(row.wire() for row in sample_rows()))
    return fake_cloud_logging


@pytest.fixture
async def source(loaded: FakeCloudLogging) -> AsyncIterator[CloudLoggingSource]:
    src = CloudLoggingSource(settings_for(loaded, page_size=20))
    yield src
    await src.aclose()


def assert_safe(error: BackendError) -> None:
    assert error.backend == "cloud_logging"
    assert "127.0.0.1" not in error.message and "http" not in error.message


# ----------------------------------------------------------------------- the wire


@pytest.mark.anyio
async def test_the_exact_filter_goes_over_the_wire_with_both_time_bounds(
    source: CloudLoggingSource, loaded: FakeCloudLogging
) -> None:
    query = replace(
        WINDOW, model_id="m-alpha", severity_floor="WARNING", newest_first=True, limit=5
    )
    page = await source.entries(query)
    (sent,) = loaded.requests
    # The client appends its own 24 h window to a filter without one: ours went as is.
    assert sent["filter"] == page.filter
    names = [t.value for t in tokenize(page.filter) if t.kind == "NAME"]
    assert names.count("timestamp") == 2
    assert sent["resourceNames"] == [f"projects/{PROJECT}"]
    assert sent["orderBy"] == "timestamp desc"
    assert sent["pageSize"] == 5
    assert "pageToken" not in sent


@pytest.mark.anyio
async def test_cursors_carry_the_apis_own_page_tokens(
    source: CloudLoggingSource, loaded: FakeCloudLogging
) -> None:
    query = replace(WINDOW, limit=4)
    first = await source.entries(query)
    assert first.next_cursor is not None and loaded.issued_tokens
    second = await source.entries(query, first.next_cursor)
    assert loaded.requests[-1]["pageToken"] == loaded.issued_tokens[0]
    assert [e.insert_id for e in first.entries + second.entries] == expected(sample_rows(), WINDOW)[
        :8
    ]


@pytest.mark.anyio
async def test_short_pages_from_the_api_are_followed_within_one_answer(
    source: CloudLoggingSource, loaded: FakeCloudLogging
) -> None:
    loaded.max_page_entries = 2  # the service may answer with fewer than asked
    query = replace(WINDOW, role="rollout", limit=7)
    pages = [await source.entries(query)]
    while (cursor := pages[-1].next_cursor) is not None:
        pages.append(await source.entries(query, cursor))
    got = [e.insert_id for p in pages for e in p.entries]
    assert got == expected(sample_rows(), query)
    assert all(len(p.entries) == 7 for p in pages[:-1])
    assert loaded.request_count > len(pages)


@pytest.mark.anyio
async def test_the_explorer_link_opens_the_same_filter_and_window(
    source: CloudLoggingSource,
) -> None:
    query = replace(WINDOW, model_id='m "alpha"', text="a;b?c=d")
    page = await source.entries(query)
    assert page.explorer_url is not None
    head, _, project = page.explorer_url.partition("?project=")
    assert project == PROJECT
    base, query_part, range_part = head.split(";")
    assert base == "https://console.cloud.google.com/logs/query"
    assert query_part.startswith("query=") and range_part.startswith("timeRange=")
    assert unquote(query_part.removeprefix("query=")) == page.filter
    assert (
        unquote(range_part.removeprefix("timeRange="))
        == "2026-03-01T12:00:00Z/2026-03-01T12:10:00Z"
    )
    for reserved in ';?/"= ':
        assert reserved not in query_part.removeprefix("query=")


@pytest.mark.anyio
async def test_settings_load_from_the_environment() -> None:
    env = {
        "OPENRL_INSPECT_CLOUD_LOGGING_PROJECT": "my-project-1",
        "OPENRL_INSPECT_CLOUD_LOGGING_TIMEOUT_S": "2.5",
        "OPENRL_INSPECT_CLOUD_LOGGING_MAX_ENTRIES": "40",
        "OPENRL_INSPECT_CLOUD_LOGGING_MODEL_LABEL_KEY": "k8s-pod/openrl_ai/model-id",
    }
    loaded = load_settings(env, {"timeout_s": 3.0})
    assert (loaded.project, loaded.timeout_s, loaded.max_entries) == ("my-project-1", 3.0, 40)
    assert loaded.model_label_key == "k8s-pod/openrl_ai/model-id"
    with pytest.raises(SettingsError):
        load_settings({"OPENRL_INSPECT_CLOUD_LOGGING_MODEL_LABEL_KEY": 'x" OR "'})
    with pytest.raises(SettingsError):
        load_settings({"OPENRL_INSPECT_CLOUD_LOGGING_PAGE_SIZE": "0"})


# ------------------------------------------------------------------------ failures


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def read_once(settings: CloudLoggingSettings, cursor: str | None = None) -> LogPage:
    src = CloudLoggingSource(settings)
    try:
        return await src.entries(WINDOW, cursor)
    finally:
        await src.aclose()


@pytest.mark.anyio
async def test_nothing_listening_is_backend_unavailable() -> None:
    settings = CloudLoggingSettings(
        project=PROJECT, anonymous=True, api_endpoint=f"http://127.0.0.1:{closed_port()}"
    )
    with pytest.raises(BackendUnavailable) as caught:
        await read_once(settings)
    assert_safe(caught.value)


@pytest.mark.anyio
@pytest.mark.parametrize("status", [503, 500, 429, 401, 403, 404])
async def test_error_statuses_are_backend_unavailable(
    loaded: FakeCloudLogging, status: int
) -> None:
    loaded.fail_status = status
    with pytest.raises(BackendUnavailable) as caught:
        await read_once(settings_for(loaded))
    assert_safe(caught.value)


@pytest.mark.anyio
async def test_a_slow_server_is_backend_timeout(loaded: FakeCloudLogging) -> None:
    loaded.delay_s = 30.0  # released when the fixture stops the server
    with pytest.raises(BackendTimeout) as caught:
        await read_once(settings_for(loaded, timeout_s=0.3))
    assert_safe(caught.value)
    assert loaded.request_count == 1


@pytest.mark.anyio
async def test_an_answer_dripping_in_still_times_out(
    loaded: FakeCloudLogging, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every byte arrives well within the socket timeout, so only the answer's own
    # deadline (the backstop around the worker thread) can end the wait.
    import openrl_inspect.adapters.cloud_logging._client as module

    monkeypatch.setattr(module, "_BACKSTOP_GRACE_S", 0.2)
    loaded.trickle_s = 0.05
    with pytest.raises(BackendTimeout) as caught:
        await read_once(settings_for(loaded, timeout_s=0.3))
    assert_safe(caught.value)


@pytest.mark.anyio
async def test_an_answer_that_is_not_json_is_a_protocol_error(loaded: FakeCloudLogging) -> None:
    loaded.garbage = True
    with pytest.raises(BackendProtocolError) as caught:
        await read_once(settings_for(loaded))
    assert_safe(caught.value)


@pytest.mark.anyio
async def test_a_refused_request_is_a_protocol_error(loaded: FakeCloudLogging) -> None:
    loaded.fail_status = 400
    with pytest.raises(BackendProtocolError):
        await read_once(settings_for(loaded))


@pytest.mark.anyio
async def test_a_refused_page_token_is_invalid_input(
    source: CloudLoggingSource, loaded: FakeCloudLogging
) -> None:
    from openrl_inspect.adapters.logs._paging import Position, encode_cursor, fingerprint

    page = await source.entries(replace(WINDOW, limit=2))
    forged = encode_cursor(fingerprint(page.filter, "timestamp asc"), Position("bm90LWEtdG9rZW4"))
    with pytest.raises(InvalidInput):
        await source.entries(replace(WINDOW, limit=2), forged)
    assert loaded.requests[-1]["pageToken"] == "bm90LWEtdG9rZW4"


@pytest.mark.anyio
async def test_bad_queries_are_refused_before_any_call(
    source: CloudLoggingSource, loaded: FakeCloudLogging
) -> None:
    bad = [
        replace(WINDOW, start=WINDOW.start.replace(tzinfo=None)),
        replace(WINDOW, end=WINDOW.start - timedelta(seconds=1)),
        replace(WINDOW, end=WINDOW.start + timedelta(days=30)),
        replace(WINDOW, limit=0),
        replace(WINDOW, severity_floor="LOUD"),
        replace(WINDOW, model_id=""),
        replace(WINDOW, text="a\x00b"),
        replace(WINDOW, model_pods=("p",)),
    ]
    for query in bad:
        with pytest.raises(InvalidInput):
            await source.entries(query)
    with pytest.raises(InvalidInput):
        await source.entries(WINDOW, cursor="garbage")
    assert loaded.request_count == 0


@pytest.mark.anyio
async def test_credentials_are_only_looked_for_when_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # No credentials anywhere, and no probing of a metadata server (google-auth reads
    # NO_GCE_CHECK at import, hence the attribute).
    from google.auth.compute_engine import _metadata

    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)
    src = CloudLoggingSource(CloudLoggingSettings(project="some-project"))
    try:
        with pytest.raises(BackendUnavailable) as caught:
            await src.entries(WINDOW)
        assert_safe(caught.value)
    finally:
        await src.aclose()


# ------------------------------------------------------------ hostile input, end to end

HOSTILE = [
    '" OR severity>=DEBUG OR "',
    '"',
    "\\",
    '\\"',
    '\\" OR \\"',
    "OR",
    ") OR (",
    "line\nbreak",
    'labels."openrl.ai/model-id"="m-alpha"',
    "ümlaut ✓ 🚀",
    "*",
]


@pytest.fixture(scope="module")
def shared_fake() -> Iterator[FakeCloudLogging]:
    fake = FakeCloudLogging(project=PROJECT).start()
    yield fake
    fake.stop()


def hostile_read(fake: FakeCloudLogging, query: LogQuery) -> list[str | None]:
    async def go() -> list[str | None]:
        src = CloudLoggingSource(settings_for(fake))
        try:
            page = await src.entries(query)
        finally:
            await src.aclose()
        return [entry.insert_id for entry in page.entries]

    return anyio.run(go)


def plant(fake: FakeCloudLogging, value: str) -> None:
    """Decoys of other models, and one entry of model ``value`` that says ``value``."""
    fake.entries = [row.wire() for row in sample_rows(12)]
    fake.add(
        wire_entry(
            timestamp=T0 + timedelta(seconds=5),
            message=f"<{value}>",
            model_id=value,
            insert_id="planted",
            project=PROJECT,
        )
    )


values = strategies.text(
    strategies.characters(exclude_characters="\x00", exclude_categories=["Cs"]),
    min_size=1,
    max_size=30,
)


@settings(max_examples=20, deadline=None)
def each_hostile(test: Callable[..., None]) -> Callable[..., None]:
    for hostile in HOSTILE:
        test = example(value=hostile)(test)
    return test


@given(value=values)
@each_hostile
def test_hostile_values_match_only_themselves_over_the_wire(
    shared_fake: FakeCloudLogging, value: str
) -> None:
    plant(shared_fake, value)
    assert hostile_read(shared_fake, replace(WINDOW, model_id=value)) == ["planted"]
    decoys = [
        row.insert_id for row in sample_rows(12) if value.casefold() in row.message.casefold()
    ]
    got = hostile_read(shared_fake, replace(WINDOW, text=value))
    assert sorted(i for i in got if i is not None) == sorted([*decoys, "planted"])

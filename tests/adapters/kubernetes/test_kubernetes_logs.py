"""The pod-logs fallback: the official client's read_namespaced_pod_log against FakeKube.

What goes over the wire (container, timestamps, sinceSeconds, tailLines, limitBytes,
previous, a timeout), which pods are read, filters and cursors shared with the Cloud
Logging adapter, the caps reported as truncation, and errors translated.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from openrl_inspect.adapters.kubernetes import ObjectKey, PodLogSettings, PodLogSource
from openrl_inspect.adapters.kubernetes import load_pod_log_settings as load_settings
from openrl_inspect.adapters.kubernetes._api import create_api_client
from openrl_inspect.adapters.kubernetes._log_lines import parse_line
from openrl_inspect.adapters.kubernetes._pods import parse_pod
from openrl_inspect.adapters.kubernetes._resources import LOG_READS
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.logs import LogQuery, LogSourceKind, TruncationReason
from openrl_inspect.adapters.logs._filter import tokenize
from openrl_inspect.core.errors import (
    BackendTimeout,
    BackendUnavailable,
    InvalidInput,
    NotFound,
    SettingsError,
)
from support import pod_log_samples
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import kube_settings, synced_source
from support.tree import ROOT

__all__ = ["fake_kube"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

WINDOW = LogQuery(
    start=pod_log_samples.T0 - timedelta(minutes=10),
    end=pod_log_samples.NOW,
    model_id=pod_log_samples.MODEL,
    limit=500,
)
RBAC = ROOT / "deploy" / "base" / "inspector" / "rbac.yaml"


@pytest.fixture
async def api_client(fake_kube: FakeKube, tmp_path: Path) -> AsyncIterator[Any]:
    pod_log_samples.load(fake_kube)
    client, _ = await create_api_client(kube_settings(fake_kube, tmp_path))
    try:
        yield client
    finally:
        await client.close()


def twin_of(fake: FakeKube) -> MemoryKubernetesSource:
    """The pods the fake serves, as the Kubernetes twin would hold them."""
    records = [parse_pod(obj) for obj in fake.objects("pods")]
    return MemoryKubernetesSource([r for r in records if r is not None])


def source(api_client: Any, fake: FakeKube, **settings: Any) -> PodLogSource:
    return PodLogSource(
        api_client, twin_of(fake), PodLogSettings(**settings), clock=pod_log_samples.NOW.timestamp
    )


def got(page: Any) -> list[tuple[Any, str]]:
    return [(e.timestamp, e.message) for e in page.entries]


def log_requests(fake: FakeKube) -> list[tuple[str, dict[str, str]]]:
    return [(path, query) for verb, path, query in fake.requests if path.endswith("/log")]


# ------------------------------------------------------------------------- the wire


async def test_a_models_pods_are_read_with_every_bound_on_the_wire(
    fake_kube: FakeKube, api_client: Any
) -> None:
    src = source(api_client, fake_kube, tail_lines=700, limit_bytes=90_000)
    page = await src.entries(WINDOW)
    assert got(page) == pod_log_samples.expected_lines(WINDOW.start, WINDOW.end)
    assert not page.truncated and page.next_cursor is None and page.explorer_url is None
    requests = log_requests(fake_kube)
    paths = sorted({path for path, _ in requests})
    assert paths == [
        f"/api/v1/namespaces/{pod_log_samples.NS}/pods/{pod_log_samples.SAMPLER}/log",
        f"/api/v1/namespaces/{pod_log_samples.NS}/pods/{pod_log_samples.TRAINER}/log",
    ]  # never the other model's pod
    since = int((pod_log_samples.NOW - WINDOW.start).total_seconds()) + 1
    for _, query in requests:
        assert query["timestamps"] == "true"
        assert query["tailLines"] == "700" and query["limitBytes"] == "90000"
        assert query["sinceSeconds"] == str(since)
        assert query["container"] in ("trainer", "sampler")
    # Both pods restarted once (the fixture's container status): previous instances too.
    assert sorted(q.get("previous", "") for _, q in requests) == ["", "", "true", "true"]
    assert src.counts["get", "pods/log"] == fake_kube.count("get", "pods/log") == 4


async def test_entries_carry_pod_container_role_severity_and_fields(
    fake_kube: FakeKube, api_client: Any
) -> None:
    page = await source(api_client, fake_kube).entries(WINDOW)
    by_message = {e.message: e for e in page.entries}
    warning = by_message["grad norm 4 clipped"]
    assert warning.source is LogSourceKind.POD
    assert (warning.severity, warning.pod, warning.container, warning.role) == (
        "WARNING",
        pod_log_samples.TRAINER,
        "trainer",
        "trainer",
    )
    assert warning.model_id == pod_log_samples.MODEL and dict(warning.fields) == {"step": 4}
    error = by_message["[ERROR] sampler batch 6 retried: NaN in logits"]
    assert (error.severity, error.pod, error.role) == ("ERROR", pod_log_samples.SAMPLER, "sampler")
    crash = by_message["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]
    assert crash.fields["previous_instance"] is True
    assert len({e.insert_id for e in page.entries}) == len(page.entries)


async def test_the_real_watch_cache_resolves_the_models_pods(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    pod_log_samples.load(fake_kube)
    async with synced_source(fake_kube, tmp_path) as kube:
        src = PodLogSource.for_cluster(kube, clock=pod_log_samples.NOW.timestamp)
        page = await src.entries(replace(WINDOW, severity_floor="ERROR"))
    assert got(page) == pod_log_samples.expected_lines(WINDOW.start, WINDOW.end, severity="ERROR")
    assert page.entries and all(e.pod == pod_log_samples.SAMPLER for e in page.entries)


# ------------------------------------------------------------------ filters, cursors


@pytest.mark.parametrize(
    "narrow",
    [
        {"severity_floor": "WARNING"},
        {"text": "nan IN LOGITS"},
        {"role": "trainer"},
        {"pod": pod_log_samples.SAMPLER},
        {"newest_first": True},
        {
            "start": pod_log_samples.T0 + timedelta(minutes=3),
            "end": pod_log_samples.T0 + timedelta(minutes=6),
        },
    ],
)
async def test_filters_select_what_the_lines_say(
    fake_kube: FakeKube, api_client: Any, narrow: dict[str, Any]
) -> None:
    query = replace(WINDOW, **narrow)
    page = await source(api_client, fake_kube).entries(query)
    want = pod_log_samples.expected_lines(
        query.start,
        query.end,
        severity=query.severity_floor,
        text=query.text,
        role=query.role,
        pod=query.pod,
        newest_first=query.newest_first,
    )
    assert got(page) == want and want


async def test_role_and_pod_narrow_the_reads_themselves(
    fake_kube: FakeKube, api_client: Any
) -> None:
    await source(api_client, fake_kube).entries(replace(WINDOW, role="sampler"))
    assert {path.split("/")[-2] for path, _ in log_requests(fake_kube)} == {pod_log_samples.SAMPLER}


@pytest.mark.parametrize("field", ["text", "pod", "role", "model_id"], ids=lambda f: f"hostile-{f}")
async def test_hostile_values_select_nothing_more(
    fake_kube: FakeKube, api_client: Any, field: str
) -> None:
    hostile = f'{pod_log_samples.MODEL}" OR severity>=DEFAULT OR labels.x:"'
    query = replace(WINDOW, **{field: hostile})  # type: ignore[arg-type]  # a str field
    page = await source(api_client, fake_kube).entries(query)
    assert page.entries == ()
    strings = [t.value for t in tokenize(page.filter) if t.kind == "STRING"]
    assert hostile in strings  # one literal, structure unchanged


async def test_cursors_page_through_without_gaps_or_repeats(
    fake_kube: FakeKube, api_client: Any
) -> None:
    src = source(api_client, fake_kube)
    query = replace(WINDOW, limit=4, newest_first=True)
    pages = [await src.entries(query)]
    while (cursor := pages[-1].next_cursor) is not None:
        assert pages[-1].truncated_reason is TruncationReason.LIMIT
        pages.append(await src.entries(query, cursor))
    assert [m for p in pages for m in got(p)] == pod_log_samples.expected_lines(
        query.start, query.end, newest_first=True
    )
    assert len(pages) > 3
    with pytest.raises(InvalidInput):
        await src.entries(replace(query, text="rollout"), pages[0].next_cursor)


# -------------------------------------------------------------------------- bounds


async def test_a_tail_that_does_not_reach_the_window_start_is_reported(
    fake_kube: FakeKube, api_client: Any
) -> None:
    page = await source(api_client, fake_kube, tail_lines=3).entries(WINDOW)
    assert page.truncated and page.truncated_reason is TruncationReason.SOURCE_LIMIT
    assert all(q["tailLines"] == "3" for _, q in log_requests(fake_kube))
    # The last three lines of each container that fall in the window, no more.
    assert 0 < len(page.entries) <= 3 * 4


async def test_a_byte_cap_drops_the_cut_line_and_is_reported(
    fake_kube: FakeKube, api_client: Any
) -> None:
    page = await source(api_client, fake_kube, limit_bytes=200, previous=False).entries(WINDOW)
    assert page.truncated and page.truncated_reason is TruncationReason.SOURCE_LIMIT
    full = dict(pod_log_samples.expected_lines(WINDOW.start, WINDOW.end))
    assert page.entries
    for entry in page.entries:  # whole lines only: the cut one is dropped
        assert full[entry.timestamp] == entry.message


async def test_answer_bounds_are_the_cloud_logging_adapters(
    fake_kube: FakeKube, api_client: Any
) -> None:
    from openrl_inspect.adapters.cloud_logging import CloudLoggingSettings

    src = PodLogSource(
        api_client,
        twin_of(fake_kube),
        bounds=CloudLoggingSettings(max_bytes=600, max_message_chars=20),
        clock=pod_log_samples.NOW.timestamp,
    )
    page = await src.entries(WINDOW)
    assert page.truncated and page.truncated_reason is TruncationReason.MAX_BYTES
    assert page.next_cursor is not None and 1 <= len(page.entries) < len(
        pod_log_samples.expected_lines(WINDOW.start, WINDOW.end)
    )
    long = [e for e in page.entries if e.truncated_chars]
    assert long and all(e.message.endswith(f"[truncated {e.truncated_chars} chars]") for e in long)


async def test_pods_and_streams_are_capped(fake_kube: FakeKube, api_client: Any) -> None:
    page = await source(api_client, fake_kube, max_streams=1).entries(WINDOW)
    assert fake_kube.count("get", "pods/log") == 1
    assert page.truncated_reason is TruncationReason.SOURCE_LIMIT


# ------------------------------------------------------------------ given pods, names


async def test_given_pods_are_read_instead_of_the_models(
    fake_kube: FakeKube, api_client: Any
) -> None:
    query = LogQuery(start=WINDOW.start, end=WINDOW.end)
    page = await source(api_client, fake_kube).entries(
        query, pods=[ObjectKey(pod_log_samples.NS, pod_log_samples.OTHER)]
    )
    assert [e.message for e in page.entries] == ["ERROR not this model"]
    assert page.entries[0].model_id == "lora-z"
    with pytest.raises(NotFound):
        await source(api_client, fake_kube).entries(
            query, pods=[ObjectKey(pod_log_samples.NS, "gone-0")]
        )


@pytest.mark.parametrize("key", [("openrl", "../secrets"), ("open rl", "x"), ("openrl", "A_B")])
async def test_names_that_are_not_kubernetes_names_are_refused_before_any_call(
    fake_kube: FakeKube, api_client: Any, key: tuple[str, str]
) -> None:
    query = LogQuery(start=WINDOW.start, end=WINDOW.end)
    with pytest.raises(InvalidInput):
        await source(api_client, fake_kube).entries(query, pods=[ObjectKey(*key)])
    assert fake_kube.count("get", "pods/log") == 0


async def test_a_pod_gone_or_a_container_not_started_is_no_logs_not_an_error(
    fake_kube: FakeKube, api_client: Any
) -> None:
    src = source(api_client, fake_kube)
    fake_kube.delete(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"namespace": pod_log_samples.NS, "name": pod_log_samples.SAMPLER},
        }
    )
    page = await src.entries(WINDOW)  # the twin still lists the sampler: the API says 404
    assert page.entries and {e.pod for e in page.entries} == {pod_log_samples.TRAINER}


# -------------------------------------------------------------------------- errors


@pytest.mark.parametrize("status", [503, 500, 429, 403, 401])
async def test_error_statuses_are_backend_unavailable(
    fake_kube: FakeKube, api_client: Any, status: int
) -> None:
    fake_kube.failures["pods/log"] = status
    with pytest.raises(BackendUnavailable) as caught:
        await source(api_client, fake_kube).entries(WINDOW)
    assert caught.value.backend == "kubernetes"
    assert "127.0.0.1" not in caught.value.message and "http" not in caught.value.message


async def test_a_slow_api_server_is_backend_timeout(fake_kube: FakeKube, api_client: Any) -> None:
    fake_kube.delay_s = 30.0  # cut short when the fixture stops the server
    with pytest.raises(BackendTimeout) as caught:
        await source(api_client, fake_kube, request_timeout_s=0.3).entries(WINDOW)
    assert caught.value.backend == "kubernetes"


async def test_nothing_listening_is_backend_unavailable(
    fake_kube: FakeKube, api_client: Any
) -> None:
    src = source(api_client, fake_kube)
    fake_kube.stop()
    with pytest.raises(BackendUnavailable):
        await src.entries(WINDOW)


async def test_a_window_in_the_future_reads_nothing(fake_kube: FakeKube, api_client: Any) -> None:
    later = LogQuery(
        start=pod_log_samples.NOW + timedelta(hours=1),
        end=pod_log_samples.NOW + timedelta(hours=2),
        model_id=pod_log_samples.MODEL,
    )
    page = await source(api_client, fake_kube).entries(later)
    assert page.entries == () and fake_kube.count("get", "pods/log") == 0


# ----------------------------------------------------------------- settings, RBAC, lines


def test_settings_load_from_the_environment() -> None:
    env = {
        "OPENRL_INSPECT_POD_LOGS_TAIL_LINES": "50",
        "OPENRL_INSPECT_POD_LOGS_CONTAINERS": "trainer, sampler",
        "OPENRL_INSPECT_POD_LOGS_PREVIOUS": "false",
    }
    loaded = load_settings(env)
    assert (loaded.tail_lines, loaded.containers, loaded.previous) == (
        50,
        ("trainer", "sampler"),
        False,
    )
    with pytest.raises(SettingsError):
        load_settings({"OPENRL_INSPECT_POD_LOGS_LIMIT_BYTES": "0"})
    with pytest.raises(SettingsError):
        load_settings({"OPENRL_INSPECT_POD_LOGS_NAMESPACE": "Not/A/Namespace"})


def test_the_cluster_role_grants_what_the_reader_reads() -> None:
    role = next(d for d in yaml.safe_load_all(RBAC.read_text()) if d and d["kind"] == "ClusterRole")
    for group, resource, verbs in LOG_READS:
        granted = {
            verb
            for rule in role["rules"]
            if group in rule["apiGroups"] and resource in rule["resources"]
            for verb in rule["verbs"]
        }
        assert set(verbs) <= granted, (group, resource)


@pytest.mark.parametrize(
    ("line", "severity", "message"),
    [
        ('{"level": "warn", "msg": "slow", "step": 3}', "WARNING", "slow"),
        ('{"severity": 40, "message": "bad"}', "ERROR", "bad"),
        ("2026-03-01 12:00:00,123 ERROR openrl.trainer: boom", "ERROR", None),
        ("[WARN] low memory", "WARNING", None),
        ("INFO:openrl:step 3", "INFO", None),
        ("E0301 12:00:00.000000   1 main.go:12] failed", "ERROR", None),
        ("RuntimeError: CUDA error: an illegal memory access", "DEFAULT", None),
        ("Loaded ERRORS table", "DEFAULT", None),
        ("{not json", "DEFAULT", None),
    ],
)
def test_severity_and_message_of_a_line(line: str, severity: str, message: str | None) -> None:
    got_severity, got_message, payload = parse_line(line)
    assert got_severity == severity
    assert got_message == (line if message is None else message)
    if line.startswith('{"level"'):
        assert payload == {"step": 3}

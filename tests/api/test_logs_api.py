"""Model.logs, Session.logs and Pod.logs through the whole app.

The worker logs are the simulator's (``simulator.logs_twin``), served by the fake Cloud
Logging through the real google client, or pods' logs served by FakeKube through the
official Kubernetes client; client logs are in (fake) Redis. Expected answers are worked
out in plain Python from the raw lines, not from any filter the code under test builds.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import fakeredis
import pytest
from openrl_inspect.adapters.cloud_logging import CloudLoggingSource
from openrl_inspect.adapters.kubernetes import PodLogSource
from openrl_inspect.adapters.logs import SEVERITIES, CloudLoggingSettings, parse_timestamp
from openrl_inspect.adapters.logs._filter import tokenize
from openrl_inspect.adapters.logs.memory import InMemoryLogSource, wire_entry
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.resolvers.logs.reads import MAX_LOG_BYTES
from openrl_inspect.simulator import SimConfig, Simulation
from openrl_inspect.simulator.logs_twin import LogMirror
from openrl_inspect.state import keys
from openrl_inspect.state.records import ModelRecord
from support import pod_log_samples
from support.fake_cloud_logging import FakeCloudLogging, fake_cloud_logging
from support.fake_kube import FakeKube, fake_kube
from support.harness import app_client, gql, populate
from support.kube_harness import synced_source

__all__ = ["fake_cloud_logging", "fake_kube"]  # fixtures, used by name below

pytestmark = pytest.mark.anyio

NOW = time.time()
LABEL = "openrl.ai/model-id"

LOGS = """
  since until truncated truncatedReason bytes backend fallbackReason filter explorerUrl
  filters { key filter explorerUrl }
  pageInfo { hasNextPage hasPreviousPage endCursor }
  nodes { time severity message fields truncatedChars
          source { kind role pod container modelId } }
"""
MODEL_LOGS = f"""
query($id: ID!, $first: Int, $after: String, $severity: LogSeverity, $text: String,
      $role: String, $pod: String, $order: LogOrder, $since: DateTime, $until: DateTime,
      $workerLogs: Boolean, $clientLogs: Boolean) {{
  model(id: $id) {{
    id state failureReason
    logs(first: $first, after: $after, severity: $severity, text: $text, role: $role,
         pod: $pod, since: $since, until: $until,
         order: $order, workerLogs: $workerLogs, clientLogs: $clientLogs) {{ {LOGS} }}
  }}
}}"""
_Vars = dict[str, Any]


@dataclass
class World:
    store: RedisStateStore
    redis: Any
    sim: Simulation
    lines: list[dict[str, Any]]  # every worker line the simulation wrote


@pytest.fixture
async def world() -> World:
    server = fakeredis.FakeServer()
    redis = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(
        redis, SimConfig(seed=3, sessions=1, models_per_session=2, steps_per_model=3), NOW
    )
    store = RedisStateStore.in_memory(server)
    lines = await LogMirror().step(sim, store, NOW)
    return World(store, redis, sim, lines)


@pytest.fixture
async def cloud(
    world: World, fake_cloud_logging: FakeCloudLogging
) -> AsyncIterator[CloudLoggingSource]:
    """The real client against the fake service holding the simulation's worker lines."""
    fake_cloud_logging.add(*world.lines)
    source = CloudLoggingSource(settings_for(fake_cloud_logging))
    yield source
    await source.aclose()


def settings_for(fake: FakeCloudLogging, **overrides: Any) -> CloudLoggingSettings:
    return CloudLoggingSettings(
        project=fake.project, api_endpoint=fake.url, anonymous=True, **overrides
    )


# ------------------------------------------------------------------ expected answers


def _message(line: dict[str, Any]) -> str:
    if "textPayload" in line:
        return str(line["textPayload"])
    return str(line["jsonPayload"].get("message", ""))


@dataclass(frozen=True)
class Want:
    time: datetime
    kind: str
    message: str
    # Ties at one instant: by insertId (worker) or member (client), as the backends do.
    tie: str = field(default="", compare=False)


def worker_wants(
    lines: list[dict[str, Any]],
    mid: str,
    start: datetime,
    end: datetime,
    *,
    severity: str | None = None,
    text: str | None = None,
    role: str | None = None,
    pod: str | None = None,
) -> list[Want]:
    out = []
    for line in lines:
        at = parse_timestamp(line["timestamp"])
        labels = line.get("labels", {})
        if labels.get(LABEL) != mid or not start <= at <= end:
            continue
        if severity and SEVERITIES.index(line["severity"]) < SEVERITIES.index(severity):
            continue
        if text is not None and text.casefold() not in _message(line).casefold():
            continue
        if role is not None and labels.get("openrl.ai/role") != role:
            continue
        if pod is not None and line["resource"]["labels"].get("pod_name") != pod:
            continue
        out.append(Want(at, "WORKER", _message(line), line["insertId"]))
    return merged(out)


async def client_wants(
    redis: Any, mid: str, start: datetime, end: datetime, *, severity: str | None = None
) -> list[Want]:
    """The client lines stored for ``mid`` (raw ZSET members, decoded here)."""
    out = []
    for member, score in await redis.zrange(keys.logs(mid), 0, -1, withscores=True):
        body = json.loads(member)
        at = datetime.fromtimestamp(score, tz=UTC)
        if not start <= at <= end:
            continue
        if severity and SEVERITIES.index(body["level"]) < SEVERITIES.index(severity):
            continue
        out.append(Want(at, "CLIENT", body["msg"], member))
    return out


def merged(*parts: list[Want], newest_first: bool = False) -> list[Want]:
    rank = {"WORKER": 0, "POD": 0, "CLIENT": 1}
    everything = [w for part in parts for w in part]
    everything.sort(key=lambda w: (w.time, rank[w.kind], w.tie), reverse=newest_first)
    return everything


def got(logs: dict[str, Any]) -> list[Want]:
    return [
        Want(datetime.fromisoformat(n["time"]), n["source"]["kind"], n["message"])
        for n in logs["nodes"]
    ]


async def failure_window(world: World, mid: str) -> tuple[datetime, datetime]:
    (rec,) = await world.store.models([mid])
    assert isinstance(rec, ModelRecord) and rec.state == "failed"
    failed = datetime.fromtimestamp(rec.transitions["failed"], tz=UTC)
    return failed - timedelta(minutes=10), failed + timedelta(minutes=2)


async def page_all(client: Any, query: str, **variables: Any) -> list[dict[str, Any]]:
    pages = []
    after = None
    while True:
        body = await gql(client, query, after=after, **variables)
        assert "errors" not in body, body
        logs = body["data"]["model"]["logs"]
        pages.append(logs)
        if not logs["pageInfo"]["hasNextPage"]:
            return pages
        after = logs["pageInfo"]["endCursor"]
        assert len(pages) < 100, "paging does not end"


# --------------------------------------------------------------------- "done when"


async def test_a_failed_models_logs_around_its_failure_come_back_in_one_query(
    world: World, cloud: CloudLoggingSource, fake_cloud_logging: FakeCloudLogging
) -> None:
    mid = world.sim.scenario_ids["failed"]
    start, end = await failure_window(world, mid)
    async with app_client(world.store, logs=cloud) as client:
        body = await gql(client, MODEL_LOGS, id=mid)
    assert "errors" not in body, body
    logs = body["data"]["model"]["logs"]
    assert body["data"]["model"]["state"] == "FAILED"
    # The default window: ten minutes before the failure to two after.
    assert datetime.fromisoformat(logs["since"]) == start
    assert datetime.fromisoformat(logs["until"]) == end
    want = merged(
        worker_wants(world.lines, mid, start, end),
        await client_wants(world.redis, mid, start, end),
    )
    assert got(logs) == want
    assert logs["truncated"] is False and logs["pageInfo"]["hasNextPage"] is False
    # Its failure is there: the traceback, the OOM, the exit, and what the client saw.
    messages = [n["message"] for n in logs["nodes"]]
    assert "Traceback (most recent call last):" in messages
    assert any(m.startswith("torch.OutOfMemoryError: CUDA out of memory") for m in messages)
    assert any(n["severity"] == "CRITICAL" and "exited" in n["message"] for n in logs["nodes"])
    assert {n["source"]["kind"] for n in logs["nodes"]} == {"WORKER", "CLIENT"}
    assert all(n["source"]["modelId"] == mid for n in logs["nodes"])
    # Bounded, and it says how to see everything else: the exact filter and a link.
    assert 0 < logs["bytes"] <= MAX_LOG_BYTES and len(logs["nodes"]) <= 100
    assert logs["backend"] == "CLOUD_LOGGING" and logs["fallbackReason"] is None
    (sent,) = fake_cloud_logging.requests
    assert sent["filter"] == logs["filter"] == logs["filters"][0]["filter"]
    assert mid in [t.value for t in tokenize(logs["filter"]) if t.kind == "STRING"]
    head, _, project = logs["explorerUrl"].partition("?project=")
    assert project == fake_cloud_logging.project
    _, query, window = head.split(";")
    assert unquote(query.removeprefix("query=")) == logs["filter"]
    first, last = unquote(window.removeprefix("timeRange=")).split("/")
    assert (parse_timestamp(first), parse_timestamp(last)) == (start, end)


async def test_a_severity_floor_keeps_the_failure_and_drops_the_routine(
    world: World, cloud: CloudLoggingSource
) -> None:
    mid = world.sim.scenario_ids["failed"]
    start, end = await failure_window(world, mid)
    async with app_client(world.store, logs=cloud) as client:
        body = await gql(client, MODEL_LOGS, id=mid, severity="ERROR", order="NEWEST_FIRST")
    logs = body["data"]["model"]["logs"]
    want = merged(
        worker_wants(world.lines, mid, start, end, severity="ERROR"),
        await client_wants(world.redis, mid, start, end, severity="ERROR"),
        newest_first=True,
    )
    assert got(logs) == want and want
    assert want[0].message.startswith("trainer process exited")
    assert {n["severity"] for n in logs["nodes"]} <= {"ERROR", "CRITICAL"}


# ------------------------------------------------------------------ hostile strings

HOSTILE = [
    'x" OR severity>=DEFAULT OR "',
    '\\" OR labels.x:"',
    "trailing backslash \\",
    ') OR (resource.type:"',
    'op forward_backward finished" OR textPayload:"',
    "NOT AND OR",
    "new\nline\ttab",
    '💥 "quoted" ünïcode',
    "%22%20OR%20%22",
]


@pytest.mark.parametrize("argument", ["text", "pod", "role"])
async def test_hostile_strings_in_filter_arguments_select_only_their_literal_match(
    world: World, fake_cloud_logging: FakeCloudLogging, argument: str
) -> None:
    mid = world.sim.scenario_ids["failed"]
    start, end = await failure_window(world, mid)
    at = start + timedelta(seconds=30)
    # One line per hostile value, matching it literally in the argument's field.
    planted = []
    for i, value in enumerate(HOSTILE):
        planted.append(
            wire_entry(
                timestamp=at + timedelta(seconds=i),
                message=f"planted {i}: {value}" if argument == "text" else f"planted {i}",
                model_id=mid,
                role=value if argument == "role" else "trainer",
                pod=value if argument == "pod" else "openrl-trainer-x",
                severity="INFO",
                insert_id=f"planted-{i}",
            )
        )
    fake_cloud_logging.add(*world.lines, *planted)
    source = CloudLoggingSource(settings_for(fake_cloud_logging))
    try:
        async with app_client(world.store, logs=source) as client:
            benign = await gql(client, MODEL_LOGS, id=mid, **{argument: "benign"})
            shape = _shape(benign["data"]["model"]["logs"]["filter"])
            for i, value in enumerate(HOSTILE):
                body = await gql(client, MODEL_LOGS, id=mid, **{argument: value})
                assert "errors" not in body, (value, body)
                logs = body["data"]["model"]["logs"]
                want = worker_wants(world.lines + planted, mid, start, end, **{argument: value})
                assert got(logs) == want, value
                assert [n["message"] for n in logs["nodes"]] == [planted[i]["textPayload"]]
                # The value is one string literal; the filter's structure is unchanged.
                assert _shape(logs["filter"]) == shape, value
                assert value in [t.value for t in tokenize(logs["filter"]) if t.kind == "STRING"]
    finally:
        await source.aclose()


def _shape(filter_: str) -> list[tuple[str, str]]:
    """The filter's tokens with string literals blanked (their values vary)."""
    return [(t.kind, "" if t.kind == "STRING" else t.value) for t in tokenize(filter_)]


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"id": 'm" OR "1'}, "not a valid id"),
        ({"after": "not-a-cursor"}, "cursor"),
        ({"since": "2026-03-01T12:00:00"}, "time zone"),
        ({"text": ""}, "empty"),
        ({"text": "x" * 1025}, "at most"),
        ({"text": "nul\x00"}, "cannot be searched"),
        ({"first": 101}, "first must be"),
    ],
)
async def test_refused_arguments_are_bad_input_before_any_read(
    world: World,
    cloud: CloudLoggingSource,
    fake_cloud_logging: FakeCloudLogging,
    variables: _Vars,
    message: str,
) -> None:
    values = {"id": world.sim.scenario_ids["failed"], **variables}
    async with app_client(world.store, logs=cloud) as client:
        body = await gql(client, MODEL_LOGS, **values)
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_INPUT" and message in error["message"]
    assert fake_cloud_logging.request_count == 0


# ---------------------------------------------------------- client logs and cursors


async def _plant_client_lines(world: World, mid: str, start: datetime) -> None:
    """Client lines in the documented format, interleaved with the worker lines."""
    for i in range(12):
        at = (start + timedelta(seconds=37 * i + 0.5)).timestamp()
        body = {
            "id": f"test/{i}",
            "t": at,
            "level": ("INFO", "WARNING")[i % 2],
            "msg": f"client {i}",
        }
        await world.redis.zadd(keys.logs(mid), {json.dumps(body, sort_keys=True): at})


@pytest.mark.parametrize("order", ["OLDEST_FIRST", "NEWEST_FIRST"])
async def test_client_lines_merge_in_time_order_and_cursors_cover_both_sides(
    world: World, order: str
) -> None:
    mid = world.sim.scenario_ids["failed"]
    start, end = await failure_window(world, mid)
    await _plant_client_lines(world, mid, start)
    twin = InMemoryLogSource(CloudLoggingSettings(max_bytes=2_000), project="fake-project")
    twin.append(*world.lines)
    async with app_client(world.store, logs=twin) as client:
        pages = await page_all(client, MODEL_LOGS, id=mid, first=7, order=order)
    newest = order == "NEWEST_FIRST"
    want = merged(
        worker_wants(world.lines, mid, start, end),
        await client_wants(world.redis, mid, start, end),
        newest_first=newest,
    )
    assert [w for p in pages for w in got(p)] == want
    assert len([w for w in want if w.kind == "CLIENT"]) == 14
    assert all(len(p["nodes"]) <= 7 for p in pages) and len(pages) >= len(want) // 7
    assert all(p["truncated"] for p in pages[:-1]) and not pages[-1]["truncated"]
    assert [p["pageInfo"]["hasPreviousPage"] for p in pages[:2]] == [False, True]
    client_nodes = [n for p in pages for n in p["nodes"] if n["source"]["kind"] == "CLIENT"]
    assert all(n["source"]["pod"] is None and n["source"]["modelId"] == mid for n in client_nodes)


EDGES = """
query($id: ID!, $first: Int, $after: String, $order: LogOrder) {
  model(id: $id) { logs(first: $first, after: $after, order: $order) {
    totalCount truncated pageInfo { startCursor endCursor hasNextPage }
    edges { cursor node { time message source { kind } } }
    nodes { time message source { kind } }
  } }
}"""


def edge_wants(logs: dict[str, Any]) -> list[Want]:
    return got({"nodes": [e["node"] for e in logs["edges"]]})


@pytest.mark.parametrize("order", ["OLDEST_FIRST", "NEWEST_FIRST"])
async def test_each_log_edge_has_a_cursor_that_resumes_just_after_its_line(
    world: World, order: str
) -> None:
    mid = world.sim.scenario_ids["failed"]
    start, end = await failure_window(world, mid)
    await _plant_client_lines(world, mid, start)
    # A small byte budget makes the worker side read several pages within one answer.
    twin = InMemoryLogSource(CloudLoggingSettings(max_bytes=2_000), project="fake-project")
    twin.append(*world.lines)
    want = merged(
        worker_wants(world.lines, mid, start, end),
        await client_wants(world.redis, mid, start, end),
        newest_first=order == "NEWEST_FIRST",
    )
    async with app_client(world.store, logs=twin) as client:
        body = await gql(client, EDGES, id=mid, first=20, order=order)
        assert "errors" not in body, body
        logs = body["data"]["model"]["logs"]
        edges = logs["edges"]
        assert edge_wants(logs) == got(logs) == want[:20]
        assert logs["truncated"] and logs["totalCount"] is None
        assert logs["pageInfo"]["startCursor"] == edges[0]["cursor"]
        for i, edge in enumerate(edges):
            body = await gql(client, EDGES, id=mid, first=3, after=edge["cursor"], order=order)
            assert "errors" not in body, body
            assert got(body["data"]["model"]["logs"]) == want[i + 1 : i + 4], i
    # Without a byte budget the window fits one page: then its count is known.
    whole = InMemoryLogSource(project="fake-project")
    whole.append(*world.lines)
    async with app_client(world.store, logs=whole) as client:
        body = await gql(client, EDGES, id=mid, first=100, order=order)
    logs = body["data"]["model"]["logs"]
    assert not logs["truncated"] and logs["totalCount"] == len(logs["edges"]) == len(want)


async def test_a_cursor_is_refused_for_other_filters_and_windows(world: World) -> None:
    mid = world.sim.scenario_ids["failed"]
    twin = InMemoryLogSource(project="fake-project")
    twin.append(*world.lines)
    async with app_client(world.store, logs=twin) as client:
        first = await gql(client, MODEL_LOGS, id=mid, first=5)
        cursor = first["data"]["model"]["logs"]["pageInfo"]["endCursor"]
        assert cursor
        for changed in ({"severity": "ERROR"}, {"since": "2020-01-01T00:00:00Z"}):
            body = await gql(client, MODEL_LOGS, id=mid, first=5, after=cursor, **changed)
            assert body["errors"][0]["extensions"]["code"] == "BAD_INPUT", changed
        other = world.sim.scenario_ids["stuck"]
        body = await gql(client, MODEL_LOGS, id=other, first=5, after=cursor)
        assert body["errors"][0]["extensions"]["code"] == "BAD_INPUT"


async def test_role_and_pod_filters_leave_client_lines_out(world: World) -> None:
    mid = world.sim.scenario_ids["failed"]
    start, end = await failure_window(world, mid)
    twin = InMemoryLogSource(project="fake-project")
    twin.append(*world.lines)
    async with app_client(world.store, logs=twin) as client:
        body = await gql(client, MODEL_LOGS, id=mid, role="sampler")
        logs = body["data"]["model"]["logs"]
        assert got(logs) == worker_wants(world.lines, mid, start, end, role="sampler")
        assert logs["nodes"]
        body = await gql(client, MODEL_LOGS, id=mid, workerLogs=False)
        logs = body["data"]["model"]["logs"]
        assert got(logs) == await client_wants(world.redis, mid, start, end)
        assert logs["backend"] is None and logs["filter"] is None


async def test_the_merged_answer_has_its_own_byte_budget(world: World) -> None:
    mid = world.sim.scenario_ids["failed"]
    start, _ = await failure_window(world, mid)
    big = "x" * 4000
    for i in range(80):
        at = (start + timedelta(seconds=i)).timestamp()
        member = json.dumps({"id": f"big/{i}", "t": at, "level": "INFO", "msg": big})
        await world.redis.zadd(keys.logs(mid), {member: at})
    async with app_client(world.store, logs=InMemoryLogSource()) as client:
        body = await gql(client, MODEL_LOGS, id=mid, workerLogs=False)
    logs = body["data"]["model"]["logs"]
    assert logs["truncated"] and logs["truncatedReason"] == "MAX_BYTES"
    assert logs["bytes"] <= MAX_LOG_BYTES and 0 < len(logs["nodes"]) < 80


# ------------------------------------------------------- backends down, fallbacks


async def test_cloud_logging_down_and_no_kubernetes_nulls_only_the_logs(
    world: World, fake_cloud_logging: FakeCloudLogging
) -> None:
    fake_cloud_logging.fail_status = 503
    mid = world.sim.scenario_ids["failed"]
    source = CloudLoggingSource(settings_for(fake_cloud_logging))
    try:
        async with app_client(world.store, logs=source) as client:
            body = await gql(client, MODEL_LOGS, id=mid)
    finally:
        await source.aclose()
    model = body["data"]["model"]
    assert model["id"] == mid and model["state"] == "FAILED" and model["failureReason"]
    assert model["logs"] is None
    (error,) = body["errors"]
    assert error["path"] == ["model", "logs"]
    assert error["extensions"] == {"code": "BACKEND_UNAVAILABLE", "backend": "cloud_logging"}


async def test_no_worker_log_backend_is_a_coded_error(world: World) -> None:
    mid = world.sim.scenario_ids["failed"]
    async with app_client(world.store) as client:
        body = await gql(client, MODEL_LOGS, id=mid)
        assert body["data"]["model"]["logs"] is None
        assert body["errors"][0]["extensions"]["code"] == "BACKEND_NOT_CONFIGURED"
        body = await gql(client, MODEL_LOGS, id=mid, workerLogs=False)
    assert "errors" not in body
    assert [n["source"]["kind"] for n in body["data"]["model"]["logs"]["nodes"]] == [
        "CLIENT",
        "CLIENT",
    ]


async def test_session_logs_merge_its_models(world: World, cloud: CloudLoggingSource) -> None:
    mid = world.sim.scenario_ids["failed"]
    (model,) = await world.store.models([mid])
    assert isinstance(model, ModelRecord)
    start = datetime.fromtimestamp(NOW, tz=UTC) - timedelta(hours=1)
    end = datetime.fromtimestamp(NOW, tz=UTC)
    query = f"""query($id: ID!, $since: DateTime, $until: DateTime, $after: String) {{
      session(id: $id) {{ id logs(since: $since, until: $until, severity: WARNING, first: 40,
                                  after: $after) {{ {LOGS} }} }} }}"""
    pages = []
    after = None
    async with app_client(world.store, logs=cloud) as client:
        while True:
            body = await gql(
                client,
                query,
                id=model.session_id,
                since=start.isoformat(),
                until=end.isoformat(),
                after=after,
            )
            assert "errors" not in body, body
            pages.append(body["data"]["session"]["logs"])
            after = pages[-1]["pageInfo"]["endCursor"]
            if after is None:
                break
    scenario = [m.id for m in world.sim.models.values() if m.session_id == model.session_id]
    want = merged(
        *(worker_wants(world.lines, m, start, end, severity="WARNING") for m in scenario),
        *[await client_wants(world.redis, m, start, end, severity="WARNING") for m in scenario],
    )
    got_ = [w for p in pages for w in got(p)]
    assert len(pages) > 1
    assert sorted(got_, key=lambda w: (w.time, w.message)) == sorted(
        want, key=lambda w: (w.time, w.message)
    )
    assert [w.time for w in got_] == sorted(w.time for w in got_)
    models_seen = {n["source"]["modelId"] for p in pages for n in p["nodes"]}
    assert {mid, world.sim.scenario_ids["stuck"]} <= models_seen
    first = pages[0]
    assert len(first["filters"]) == len(scenario) == 5
    assert first["filter"] == " OR ".join(f"({f['filter']})" for f in first["filters"])
    assert unquote(first["explorerUrl"]).count(" OR (") == len(scenario) - 1


# -------------------------------------------------------- the pod-logs fallback


async def _lora_a(world: World) -> datetime:
    """The sample pods' model in Redis: failed three minutes into the sample logs, with
    two client lines."""
    failed = pod_log_samples.T0 + timedelta(minutes=3)
    rec = world.sim.rec
    rec.session_opened("sess-a", "alice", at=(pod_log_samples.T0 - timedelta(hours=1)).timestamp())
    rec.model_created(
        "lora-a",
        "sess-a",
        "Qwen/Qwen3-8B",
        at=(pod_log_samples.T0 - timedelta(hours=1)).timestamp(),
    )
    rec.model_state("lora-a", "failed", reason="trainer OOM", at=failed.timestamp())
    rec.client_log(
        "lora-a",
        "INFO",
        "step 5 submitted",
        {"step": 5},
        at=(pod_log_samples.T0 + timedelta(seconds=61)).timestamp(),
    )
    rec.client_log(
        "lora-a", "ERROR", "step 6 failed", None, at=(failed + timedelta(seconds=1)).timestamp()
    )
    await rec.flush()  # type: ignore[attr-defined]
    return failed


@pytest.mark.parametrize("cloud_down", [False, True], ids=["not-configured", "unavailable"])
async def test_pod_logs_from_kubernetes_when_cloud_logging_is_missing_or_down(
    world: World,
    fake_kube: FakeKube,
    fake_cloud_logging: FakeCloudLogging,
    tmp_path: Path,
    cloud_down: bool,
) -> None:
    failed = await _lora_a(world)
    pod_log_samples.load(fake_kube)
    start, end = failed - timedelta(minutes=10), failed + timedelta(minutes=2)
    fake_cloud_logging.fail_status = 503
    cloud = CloudLoggingSource(settings_for(fake_cloud_logging)) if cloud_down else None
    try:
        async with synced_source(fake_kube, tmp_path) as kube:
            pods = PodLogSource.for_cluster(kube, clock=pod_log_samples.NOW.timestamp)
            async with app_client(
                world.store, kubernetes=kube, pod_logs=pods, logs=cloud
            ) as client:
                body = await gql(client, MODEL_LOGS, id="lora-a")
                pod_body = await gql(
                    client,
                    f'{{ pod(namespace: "{pod_log_samples.NS}", name: "{pod_log_samples.SAMPLER}") {{ name logs(since: "{start.isoformat()}", until: "{end.isoformat()}") {{ {LOGS} }} }} }}',
                )
    finally:
        if cloud is not None:
            await cloud.aclose()
    assert "errors" not in body, body
    logs = body["data"]["model"]["logs"]
    assert logs["backend"] == "KUBERNETES"
    assert ("unavailable" if cloud_down else "not configured") in logs["fallbackReason"]
    # Tried first, once per logs field (the model's, then the pod's), when configured.
    assert fake_cloud_logging.request_count == (2 if cloud_down else 0)
    pod_lines = [
        Want(at, "POD", message) for at, message in pod_log_samples.expected_lines(start, end)
    ]
    want = merged(pod_lines, await client_wants(world.redis, "lora-a", start, end))
    assert got(logs) == want
    assert [w.kind for w in want].count("CLIENT") == 2
    crash = [n for n in logs["nodes"] if n["fields"].get("previous_instance")]
    assert crash and crash[-1]["message"].startswith("torch.OutOfMemoryError")
    assert logs["explorerUrl"] is None and logs["filter"]
    # Pod.logs: that pod's lines only, no client lines.
    assert "errors" not in pod_body, pod_body
    pod_logs = pod_body["data"]["pod"]["logs"]
    assert got(pod_logs) == [
        Want(at, "POD", m)
        for at, m in pod_log_samples.expected_lines(start, end, pod=pod_log_samples.SAMPLER)
    ]
    assert pod_logs["backend"] == "KUBERNETES" and pod_logs["fallbackReason"]


async def test_pod_logs_failing_too_is_a_coded_error(
    world: World, fake_kube: FakeKube, tmp_path: Path
) -> None:
    await _lora_a(world)
    pod_log_samples.load(fake_kube)
    fake_kube.failures["pods/log"] = 503
    async with synced_source(fake_kube, tmp_path) as kube:
        pods = PodLogSource.for_cluster(kube, clock=pod_log_samples.NOW.timestamp)
        async with app_client(world.store, kubernetes=kube, pod_logs=pods) as client:
            body = await gql(client, MODEL_LOGS, id="lora-a")
    assert body["data"]["model"]["state"] == "FAILED" and body["data"]["model"]["logs"] is None
    assert body["errors"][0]["extensions"] == {
        "code": "BACKEND_UNAVAILABLE",
        "backend": "kubernetes",
    }


async def test_one_query_reads_worker_logs_a_bounded_number_of_times(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openrl_inspect.loaders import logs as loaders

    monkeypatch.setattr(loaders, "MAX_WORKER_READS", 2)
    twin = InMemoryLogSource(project="fake-project")
    twin.append(*world.lines)
    query = (
        "{ models(state: ACTIVE, first: 50) { nodes { id logs(first: 1) { nodes { message } } } } }"
    )
    async with app_client(world.store, logs=twin) as client:
        body = await gql(client, query)
    nodes = body["data"]["models"]["nodes"]
    assert len(nodes) > 2 and all(n["id"] for n in nodes)
    assert sum(n["logs"] is not None for n in nodes) == 2
    codes = {e["extensions"]["code"] for e in body["errors"]}
    assert codes == {"BAD_INPUT"} and len(body["errors"]) == len(nodes) - 2


async def test_a_session_reads_its_newest_models_and_says_so() -> None:
    server = fakeredis.FakeServer()
    redis = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    config = SimConfig(
        seed=4, sessions=1, models_per_session=12, steps_per_model=2, scenarios=False
    )
    sim = await populate(redis, config, NOW)
    store = RedisStateStore.in_memory(server)
    twin = InMemoryLogSource(project="fake-project")
    twin.append(*await LogMirror().step(sim, store, NOW))
    (sid,) = sim.sessions
    query = f'{{ session(id: "{sid}") {{ logs(since: "{datetime.fromtimestamp(NOW - 3000, tz=UTC).isoformat()}") {{ {LOGS} }} }} }}'
    async with app_client(store, logs=twin) as client:
        body = await gql(client, query)
    assert "errors" not in body, body
    logs = body["data"]["session"]["logs"]
    newest = sorted(sim.models.values(), key=lambda m: m.created_at, reverse=True)[:10]
    assert sorted(f["key"] for f in logs["filters"]) == sorted(m.id for m in newest)
    assert logs["truncated"] and logs["truncatedReason"] == "MODELS"
    # ``since`` alone: until the request's now.
    assert datetime.fromisoformat(logs["since"]).timestamp() == pytest.approx(NOW - 3000)
    assert datetime.fromisoformat(logs["until"]).timestamp() >= NOW
    assert {n["source"]["modelId"] for n in logs["nodes"]} <= {m.id for m in newest}

"""Placements recorded from Kubernetes, and the cluster graph over the REAL adapter.

``tracker.placements``: pure derivation, the tracker's admissions, updates and
releases, then records in from the twin and from the fake API server (through the
official client and the watch cache), recorder calls out, read back through the API.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.kubernetes import (
    ClaimRecord,
    GpuDevice,
    KubernetesCacheSource,
    PodRecord,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._dra import parse_claim, parse_slice
from openrl_inspect.adapters.kubernetes._json import parse_time
from openrl_inspect.adapters.kubernetes._pods import parse_pod
from openrl_inspect.adapters.kubernetes._workloads import parse_workload
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.recorder import AsyncRecorder
from openrl_inspect.simulator import SimConfig
from openrl_inspect.simulator.kube_twin import mirror_kubernetes
from openrl_inspect.tracker.placements import PlacementTracker, derive_placement, placement_id
from support import kube_objects
from support.fake_kube import FakeKube, fake_kube
from support.harness import app_client, gql, populate
from support.kube_harness import eventually, synced_source

__all__ = ["fake_kube"]  # the fixture, used by name below

ADMITTED_AT = parse_time("2026-01-05T09:00:30Z")
H100_UUIDS = [kube_objects.gpu_uuid("gpu-h100-1", i) for i in range(8)]


def _parsed(obj: dict[str, Any], parse: Any) -> Any:
    rec = parse(obj)
    assert rec is not None
    return rec


def workload(obj: dict[str, Any]) -> WorkloadRecord:
    return _parsed(obj, parse_workload)  # type: ignore[no-any-return]


def pod(obj: dict[str, Any]) -> PodRecord:
    return _parsed(obj, parse_pod)  # type: ignore[no-any-return]


def claim(obj: dict[str, Any]) -> ClaimRecord:
    return _parsed(obj, parse_claim)  # type: ignore[no-any-return]


def h100_gpus() -> list[GpuDevice]:
    return list(_parsed(kube_objects.h100_slice(), parse_slice).devices)


@dataclass
class Calls:
    """A writer that keeps the calls (the recorder's placement methods)."""

    admitted: list[tuple[Any, ...]] = field(default_factory=list)
    released: list[tuple[str, str, float | None]] = field(default_factory=list)

    def placement_admitted(self, mid: str, pid: str, workload: str, namespace: str,
                           pods: Any, node: str, gpu_ids: Any, at: float | None = None) -> None:  # fmt: skip
        self.admitted.append((mid, pid, workload, namespace, list(pods), node, list(gpu_ids), at))

    def placement_released(self, mid: str, pid: str, at: float | None = None) -> None:
        self.released.append((mid, pid, at))


def test_derive_placement_from_workload_pods_claims_gpus() -> None:
    admitted = workload(kube_objects.admitted_workload())
    facts = derive_placement(
        admitted,
        [pod(kube_objects.running_trainer()), pod(kube_objects.unschedulable_pod())],
        [claim(kube_objects.allocated_claim())],
        h100_gpus(),
    )
    assert facts is not None
    assert (facts.model_id, facts.workload, facts.namespace) == (
        "lora-a", "job-lora-a-trainer-8d1e4", "openrl",
    )  # fmt: skip
    assert facts.pods == ("lora-a-trainer-0",) and facts.node == "gpu-h100-1"
    assert list(facts.gpu_ids) == H100_UUIDS
    assert facts.admitted_at == ADMITTED_AT
    assert facts.placement_id == f"uid-wl-job-lora-a-trainer-8d1e4.{int(ADMITTED_AT or 0)}"
    assert derive_placement(workload(kube_objects.pending_workload()), [], [], []) is None
    # devices not published (yet) keep their DRA names
    unpublished = derive_placement(
        admitted, [pod(kube_objects.running_trainer())], [claim(kube_objects.allocated_claim())], []
    )
    assert unpublished is not None and unpublished.gpu_ids[0] == "gpu-h100-1/gpu-0"


def test_tracker_records_once_keeps_history_and_releases() -> None:
    calls = Calls()
    tracker = PlacementTracker(calls)
    wl, trainer, gpus = (
        workload(kube_objects.admitted_workload()),
        pod(kube_objects.running_trainer()),
        h100_gpus(),
    )
    claims = [claim(kube_objects.allocated_claim())]
    first = tracker.observe([wl], [trainer], claims, gpus, 100.0)
    again = tracker.observe([wl], [trainer], claims, gpus, 101.0)
    assert [c.kind for c in first] == ["admitted"] and again == []
    assert len(calls.admitted) == 1 and calls.admitted[0][7] == ADMITTED_AT
    sampler = pod(
        kube_objects.pod(
            "lora-a-sampler-0", model_id="lora-a", role="sampler", node_name="gpu-h100-1"
        )
    )
    grown = tracker.observe([wl], [trainer, sampler], claims, gpus, 102.0)
    assert [c.kind for c in grown] == ["updated"]
    assert calls.admitted[-1][4] == ["lora-a-trainer-0", "lora-a-sampler-0"]
    # a pod that goes away stays in the history: nothing to write
    assert tracker.observe([wl], [sampler], claims, gpus, 103.0) == []
    # a partial snapshot never releases
    assert tracker.observe([], [], [], [], 104.0, complete=False) == []
    finished = copy.deepcopy(kube_objects.admitted_workload())
    finished["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done",
         "lastTransitionTime": "2026-01-05T09:40:00Z"}
    )  # fmt: skip
    released = tracker.observe([workload(finished)], [], [], [], 105.0)
    assert [c.kind for c in released] == ["released"]
    assert calls.released == [("lora-a", placement_id(wl), parse_time("2026-01-05T09:40:00Z"))]
    assert tracker.open == {}


def test_readmission_after_eviction_is_a_new_placement_and_vanishing_releases_now() -> None:
    """Evicted and re-admitted between two passes: the first placement ended no later
    than the re-admission, whatever the tracker's clock says."""
    calls = Calls()
    tracker = PlacementTracker(calls)
    wl = workload(kube_objects.admitted_workload())
    tracker.observe([wl], [pod(kube_objects.running_trainer())], [], [], 10.0)
    again = copy.deepcopy(kube_objects.admitted_workload())
    for cond in again["status"]["conditions"]:
        cond["lastTransitionTime"] = "2026-01-05T09:45:00Z"
    changes = tracker.observe(
        [workload(again)], [pod(kube_objects.running_trainer())], [], [], 20.0
    )
    assert sorted(c.kind for c in changes) == ["admitted", "released"]
    assert len({c.placement_id for c in changes}) == 2
    assert calls.released == [("lora-a", placement_id(wl), parse_time("2026-01-05T09:45:00Z"))]
    tracker.observe([], [], [], [], 30.0)
    assert calls.released[-1] == ("lora-a", placement_id(workload(again)), 30.0)


PLACEMENTS = """query($id: ID!) { model(id: $id) {
  placements { nodes { id workload namespace pods node gpuIds admittedAt releasedAt source
    livePods { name node { name } gpus { uuid heldBy { model { id } pod { name } } } }
    liveNode { name } liveGpus { uuid } liveWorkload { status } } } } }"""


async def _flush(rec: AsyncRecorder) -> None:
    await rec.flush()
    close = getattr(rec, "close", None)
    if close is not None:
        await close()


@pytest.mark.anyio
async def test_placements_from_the_twin_match_what_the_simulation_recorded() -> None:
    """Twin records in, recorder calls out, read back: the same pods, node and GPUs the
    simulation itself recorded for each running model."""
    now = time.time()
    sim_server = fakeredis.FakeServer()
    sim = await populate(
        fakeredis.FakeAsyncRedis(server=sim_server, decode_responses=True), SimConfig(seed=9), now
    )
    twin = MemoryKubernetesSource()
    mirror_kubernetes(sim, twin)
    server = fakeredis.FakeServer()
    rec = AsyncRecorder(
        fakeredis.FakeAsyncRedis(server=server, decode_responses=True), batch_size=1 << 30
    )
    running = [m for m in sim.models.values() if m.state in ("placed", "active")]
    for m in running:
        rec.model_created(m.id, m.session_id, "base", at=m.created_at)
    changes = await PlacementTracker(rec).sync(twin, now)
    await _flush(rec)
    assert sorted(c.model_id for c in changes) == sorted(m.id for m in running)
    async with app_client(RedisStateStore.in_memory(server), kubernetes=twin) as client:
        for m in running:
            body = await gql(client, PLACEMENTS, id=m.id)
            assert "errors" not in body, body
            (got,) = body["data"]["model"]["placements"]["nodes"]
            assert got["pods"] == sorted(w[2] for w in m.workers)
            assert got["node"] == sim.node_of(m)
            assert set(got["gpuIds"]) == {g.uuid for g in sim.gpus_of(m)}
            assert got["admittedAt"] is not None and got["releasedAt"] is None
            assert {p["name"] for p in got["livePods"]} == set(got["pods"])
            assert got["liveWorkload"]["status"] == "admitted"


@pytest.mark.anyio
async def test_placement_walk_through_the_real_adapter(fake_kube: FakeKube, tmp_path: Path) -> None:
    """The fake API server -> official client -> watch cache -> tracker -> Redis -> API:
    one query walks Model -> placements -> pods -> node -> GPUs -> holder model; the
    waiting model explains itself; no GraphQL request reaches the API server."""
    fake_kube.put(*kube_objects.cluster())
    server = fakeredis.FakeServer()
    rec = AsyncRecorder(
        fakeredis.FakeAsyncRedis(server=server, decode_responses=True), batch_size=1 << 30
    )
    rec.model_created("lora-a", "sess-1", "Qwen/Qwen3-8B", at=parse_time("2026-01-05T08:59:00Z"))
    rec.model_state("lora-a", "active", at=parse_time("2026-01-05T09:03:00Z"))
    rec.model_created("lora-b", "sess-1", "Qwen/Qwen3-8B", at=parse_time("2026-01-05T09:29:00Z"))
    store = RedisStateStore.in_memory(server)
    async with synced_source(fake_kube, tmp_path) as source:
        tracker = PlacementTracker(rec)
        changes = await tracker.sync(source, time.time())
        assert [(c.kind, c.model_id) for c in changes] == [("admitted", "lora-a")]
        await rec.flush()
        await watching(fake_kube, source)
        async with app_client(store, kubernetes=source) as client:
            before = fake_kube.total_requests()
            body = await gql(client, PLACEMENTS, id="lora-a")
            waiting = await gql(
                client,
                '{ model(id: "lora-b") { whyWaiting { rank kind message } } '
                "capacity { total held free } kubernetesStatus { ready degraded } }",
            )
            assert fake_kube.total_requests() == before  # answered from the watch cache
        assert "errors" not in body and "errors" not in waiting, (body, waiting)
        (got,) = body["data"]["model"]["placements"]["nodes"]
        assert (got["workload"], got["namespace"], got["node"]) == (
            "job-lora-a-trainer-8d1e4", "openrl", "gpu-h100-1",
        )  # fmt: skip
        assert got["pods"] == ["lora-a-trainer-0"] and got["gpuIds"] == H100_UUIDS
        (live,) = got["livePods"]
        assert live["node"] == {"name": "gpu-h100-1"}
        assert [g["uuid"] for g in live["gpus"]] == H100_UUIDS
        assert {h["model"]["id"] for g in live["gpus"] for h in g["heldBy"]} == {"lora-a"}
        assert got["liveNode"] == {"name": "gpu-h100-1"}
        assert [g["uuid"] for g in got["liveGpus"]] == H100_UUIDS
        reasons = waiting["data"]["model"]["whyWaiting"]
        assert [(r["rank"], r["kind"]) for r in reasons] == [(1, "QUOTA"), (2, "UNSCHEDULABLE")]
        assert reasons[0]["message"] == kube_objects.PENDING_QUOTA_MESSAGE
        assert waiting["data"]["capacity"] == {"total": 16, "held": 8, "free": 8}
        assert waiting["data"]["kubernetesStatus"] == {"ready": True, "degraded": False}

        # The job ends: its pod, claim and Workload go; the history stays in Redis.
        for obj in (
            kube_objects.running_trainer(),
            kube_objects.allocated_claim(),
            kube_objects.admitted_workload(),
        ):
            fake_kube.delete(obj)

        async def gone() -> bool:
            return (await source.get_pods([live_key()]))[0] is None and not (
                await source.workloads_by_model(["lora-a"])
            )[0].items

        await eventually(gone, what="deletions seen by the watch")
        released = await tracker.sync(source, time.time())
        assert [(c.kind, c.model_id) for c in released] == [("released", "lora-a")]
        await _flush(rec)
        async with app_client(store, kubernetes=source) as client:
            after = await gql(client, PLACEMENTS, id="lora-a")
        (history,) = after["data"]["model"]["placements"]["nodes"]
        assert history["releasedAt"] is not None and history["pods"] == ["lora-a-trainer-0"]
        assert history["livePods"] == [] and history["liveWorkload"] is None
        assert history["gpuIds"] == H100_UUIDS and len(history["liveGpus"]) == 8


def live_key() -> Any:
    from openrl_inspect.adapters.kubernetes import ObjectKey

    return ObjectKey("openrl", "lora-a-trainer-0")


CLUSTER = "{ nodes(first: 10) { degraded nodes { name gpus { nodes { uuid held } } } } }"


async def _steady(source: KubernetesCacheSource) -> bool:
    return not (await source.status()).degraded


async def watching(fake: FakeKube, source: KubernetesCacheSource) -> None:
    """Steady state: synced, and every informer's watch open on the server."""
    informers = sum(len(i) for i in source.informers.values())
    await eventually(lambda: fake.open_watches() >= informers, what="every watch open")


@pytest.mark.anyio
async def test_cluster_queries_survive_a_410_and_a_restart(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.put(*kube_objects.cluster())
    store = RedisStateStore.in_memory(fakeredis.FakeServer())
    async with (
        synced_source(fake_kube, tmp_path) as source,
        app_client(store, kubernetes=source) as client,
    ):
        fake_kube.expire_history()
        await eventually(lambda: fake_kube.expired_watches >= 5, what="410 on every watch")
        fake_kube.put(kube_objects.node("gpu-h100-2"), kube_objects.h100_slice("gpu-h100-2"))
        await eventually(lambda: _steady(source), what="relisted")
        await watching(fake_kube, source)
        before = fake_kube.total_requests()
        body = await gql(client, CLUSTER)
        assert fake_kube.total_requests() == before
        nodes = body["data"]["nodes"]
        assert "gpu-h100-2" in [n["name"] for n in nodes["nodes"]]

        fake_kube.stop()
        await eventually(lambda: not _sync_ok(source), what="watch failing")
        down = await gql(client, CLUSTER)
        assert down["data"]["nodes"]["degraded"] is True  # served from the cache, said so
        assert len(down["data"]["nodes"]["nodes"]) == 4
        fake_kube.put(kube_objects.node("gpu-h200-2", product=kube_objects.H200))
        fake_kube.start()
        await eventually(lambda: _steady(source), what="watching again")

        async def has_new_node() -> bool:
            return (await source.get_nodes(["gpu-h200-2"]))[0] is not None

        await eventually(has_new_node, what="event after the restart")
        await watching(fake_kube, source)
        before = fake_kube.total_requests()
        up = await gql(client, CLUSTER)
        assert fake_kube.total_requests() == before
        assert up["data"]["nodes"]["degraded"] is False
        assert len(up["data"]["nodes"]["nodes"]) == 5


def _sync_ok(source: KubernetesCacheSource) -> bool:
    return source.kind_status("nodes").last_error is None

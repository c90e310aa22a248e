"""Issue 24's second cluster (Kueue serving v1beta2 only, a JobSet of two replicated jobs
on one unlabelled Workload, a preemption, a pod group gated by Kueue and short of CPU
quota, MIG slices) through the official client, the watch cache and the whole app: the
Workload link, the preemption, the quota shortfall (not POD_GATED), the capacity counted
by whole GPUs and slices, the placement the tracker records; and the same cluster with
Kueue at a version this inspector does not read, which is a coded error, never "none"."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.kubernetes import KubernetesCacheSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.tracker.placements import PlacementTracker
from openrl_inspect.web.health import probe_all
from support import second_cluster as cluster
from support.client_models import roundtrip
from support.fake_kube import FakeKube, fake_kube
from support.harness import app_client, gql
from support.kube_harness import synced_source

__all__ = ["fake_kube"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

NOW = time.time()


async def state() -> tuple[RedisStateStore, fakeredis.FakeServer]:
    """OpenRL's records of the three models: grpo running, dpo and sft waiting."""
    server = fakeredis.FakeServer()
    redis = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(redis, settings=RecorderSettings(publish_counters=False))
    rec.session_opened("s-rl-team", "rl-team", at=NOW - 3600)
    for model, status in (
        (cluster.GRPO, "active"),
        (cluster.DPO, "waiting"),
        (cluster.SFT, "waiting"),
    ):
        rec.model_created(model, "s-rl-team", "meta-llama/Llama-3.1-8B", at=NOW - 3000)
        rec.model_state(model, status, at=NOW - 1800)
    await rec.flush()
    await rec.close()
    return RedisStateStore.in_memory(server), server


@asynccontextmanager
async def second_cluster(
    fake: FakeKube, tmp_path: Path, kueue: tuple[str, ...] = ("v1beta2",)
) -> AsyncIterator[KubernetesCacheSource]:
    """The cluster served as GKE 1.34 serves it: DRA at v1 only (betas off, no
    DeviceTaintRules), Kueue at ``kueue``."""
    fake.served["kueue.x-k8s.io"] = kueue
    fake.served["resource.k8s.io"] = ("v1",)
    fake.only_versions["devicetaintrules"] = ("v1alpha3",)
    fake.put(*cluster.objects())
    async with synced_source(fake, tmp_path) as source:
        yield source


CAPACITY = """{
  capacity { nodes total held free unhealthy tainted partitioned
    slices { total held free unhealthy tainted }
    byProduct { product nodes total held free tainted partitioned slices { total held } } }
  kubernetesStatus { kinds { kind version unsupported versionsSeen } }
}"""

MODEL = """query($id: ID!) {
  model(id: $id) {
    id
    workloads { nodes { name modelId priorityClass priorityClassKind status
      pods { nodes { name } } } }
    whyWaiting { rank kind reason message resource flavor shortfall }
    summary { verdict causes { kind rank statement facts } }
  }
}"""


async def test_kueue_v1beta2_only_gives_link_preemption_quota_and_capacity(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    store, _ = await state()
    async with (
        second_cluster(fake_kube, tmp_path) as source,
        app_client(store, kubernetes=source) as client,
    ):
        body = await gql(client, CAPACITY)
        assert "errors" not in body, body["errors"]
        cap = body["data"]["capacity"]
        # Whole GPUs: 32 on four nodes (8 + 4 held, 12 free, 8 cordoned) and the 4
        # partitioned ones (3 with slices held, 1 all free): not 48, 20 and 20.
        assert (cap["total"], cap["held"], cap["free"]) == (36, 15, 13)
        assert (cap["unhealthy"], cap["tainted"], cap["partitioned"]) == (0, 8, 4)
        assert cap["slices"] == {"total": 16, "held": 8, "free": 8, "unhealthy": 0, "tainted": 0}
        (h100,) = cap["byProduct"]
        assert (h100["nodes"], h100["total"], h100["held"], h100["free"]) == (5, 36, 15, 13)
        assert h100["slices"] == {"total": 16, "held": 8}
        kinds = {k["kind"]: k for k in body["data"]["kubernetesStatus"]["kinds"]}
        assert kinds["workloads"]["version"] == "v1beta2"
        assert kinds["resourceslices"]["version"] == "v1"

        grpo = (await gql(client, MODEL, id=cluster.GRPO))["data"]["model"]
        (wl,) = grpo["workloads"]["nodes"]
        assert wl["name"] == cluster.GRPO_WORKLOAD and wl["modelId"] == cluster.GRPO
        assert (wl["priorityClass"], wl["priorityClassKind"]) == (
            "rl-high",
            "WorkloadPriorityClass",
        )
        assert wl["status"] == "admitted" and len(wl["pods"]["nodes"]) == 2

        dpo = (await gql(client, MODEL, id=cluster.DPO))["data"]["model"]
        assert [w["name"] for w in dpo["workloads"]["nodes"]] == [cluster.DPO_WORKLOAD]
        kinds_waiting = [r["kind"] for r in dpo["whyWaiting"]]
        assert "PREEMPTED" in kinds_waiting
        causes = {c["kind"]: c for c in dpo["summary"]["causes"]}
        assert dpo["summary"]["verdict"] == "WAITING"
        preempted = causes["PREEMPTED"]
        assert preempted["facts"]["preemptor_uid"] == cluster.uid("wl", cluster.GRPO_WORKLOAD)
        assert preempted["facts"]["reason"] == "InClusterQueue"

        sft = (await gql(client, MODEL, id=cluster.SFT))["data"]["model"]
        assert [w["name"] for w in sft["workloads"]["nodes"]] == [cluster.SFT]
        top = sft["whyWaiting"][0]
        assert top["kind"] == "QUOTA", sft["whyWaiting"]
        assert (
            "insufficient unused quota for cpu in flavor cpu-highmem, 16 more needed"
            in (top["message"])
        )
        assert (top["resource"], top["flavor"], top["shortfall"]) == ("cpu", "cpu-highmem", 16)
        first = sft["summary"]["causes"][0]
        assert first["kind"] == "QUOTA" and first["kind"] != "POD_GATED"
        assert first["facts"]["shortfall"] == 16 and first["facts"]["resource"] == "cpu"
        assert "16 more cpu needed in flavor cpu-highmem" in first["statement"]


async def test_the_tracker_records_placements_from_v1beta2_workloads(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    class Calls:
        def __init__(self) -> None:
            self.admitted: list[tuple[Any, ...]] = []

        def placement_admitted(self, mid: str, pid: str, **kw: Any) -> None:
            self.admitted.append((mid, kw["workload"], kw["namespace"], kw["pods"],
                                  kw["node"], kw["gpu_ids"]))  # fmt: skip

        def placement_released(self, *args: Any, **kw: Any) -> None:
            raise AssertionError("nothing is released")

    calls = Calls()
    async with second_cluster(fake_kube, tmp_path) as source:
        changes = await PlacementTracker(calls).sync(source, NOW)  # type: ignore[arg-type]
    assert changes and [a[:2] for a in calls.admitted] == [(cluster.GRPO, cluster.GRPO_WORKLOAD)]
    namespace, pods, node, gpus = calls.admitted[0][2:6]
    assert namespace == cluster.NAMESPACE and len(pods) == 2
    assert node in cluster.NODES[:2] and len(gpus) == 12


async def test_kueue_at_an_unknown_version_is_a_coded_error_not_none(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    store, _ = await state()
    async with (
        second_cluster(fake_kube, tmp_path, kueue=("v1beta3",)) as source,
        app_client(store, kubernetes=source) as client,
    ):
        body = await gql(client, MODEL, id=cluster.SFT)
        errors = {tuple(e["path"]): e for e in body["errors"]}
        error = errors["model", "workloads"]
        assert error["extensions"]["code"] == "API_VERSION_UNSUPPORTED"
        assert error["extensions"]["group"] == "kueue.x-k8s.io"
        assert error["extensions"]["versionsSeen"] == ["v1beta3"]
        assert body["data"]["model"]["workloads"] is None  # not an empty list
        assert body["data"]["model"]["id"] == cluster.SFT
        # The capacity does not need Kueue.
        cap = (await gql(client, CAPACITY))["data"]["capacity"]
        assert cap["total"] == 36
        check = next(
            c
            for c in await probe_all(Backends(state=store, kubernetes=source))
            if c["name"] == "kubernetes"
        )
        assert not check["ok"] and check["code"] == "API_VERSION_UNSUPPORTED"
        assert check["unsupported"] == [
            {
                "group": "kueue.x-k8s.io",
                "kind": "workloads",
                "versionsSeen": ["v1beta3"],
                "versionsUnderstood": ["v1beta2", "v1beta1"],
            }
        ]


MODELS = {
    "Node": "V1Node",
    "Pod": "V1Pod",
    "Job": "V1Job",
    "ResourceSlice": "V1ResourceSlice",
    "ResourceClaim": "ResourceV1ResourceClaim",
}


def test_the_built_in_objects_are_the_official_client_models() -> None:
    """Kueue's and JobSet's are custom resources, outside the client's models."""
    checked = 0
    for obj in cluster.objects():
        if obj["kind"] in MODELS:
            roundtrip(obj, MODELS[obj["kind"]])
            checked += 1
    assert checked == len(cluster.objects()) - 5  # 3 Workloads, 2 JobSets

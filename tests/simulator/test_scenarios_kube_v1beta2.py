"""The scenario library served by the fake API server as a current cluster serves it:
Kueue at ``kueue.x-k8s.io/v1beta2`` only, DRA at v1 only. The Kueue scenarios' objects
(as staged, with their JobSets) and the partitioned node with the pods on its slices go
to ``FakeKube``; the real adapter reads them through the official client; each model
gets the cause the demo's twin gives it, and the capacity counts the MIG node's GPUs
once and its slices apart."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.domain import CauseKind
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.resolvers.summary.model import model_summary
from openrl_inspect.simulator import SimConfig, Simulation, partitions, populate
from openrl_inspect.simulator.kube_twin import NAMESPACE, workload_name
from openrl_inspect.simulator.scenarios import kueue as scenario_kueue
from openrl_inspect.simulator.scenarios.cluster_shapes import EVAL_HOLDS
from support import kube_objects
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import synced_source

__all__ = ["fake_kube"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

# Scenario -> the top cause the twin gives it (tests/simulator/test_scenarios_diagnosis).
KUEUE_SCENARIOS = {
    "quota": CauseKind.QUOTA,
    "not_queued": CauseKind.NOT_QUEUED,
    "preempted": CauseKind.PREEMPTED,
    "evicted": CauseKind.EVICTED,
    "workload_inactive": CauseKind.WORKLOAD_INACTIVE,
    "inadmissible": CauseKind.INADMISSIBLE,
    "admission_check": CauseKind.ADMISSION_CHECK,
    "pod_group_quota": CauseKind.QUOTA,
}


async def simulation() -> tuple[Simulation, RedisStateStore]:
    server = fakeredis.FakeServer()
    redis = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    settings = RecorderSettings(publish_counters=False, recorder_id="sim")
    rec = AsyncRecorder(redis, batch_size=1 << 30, settings=settings)
    sim = Simulation(SimConfig(seed=7), rec)
    populate(sim, time.time())
    await rec.flush()
    return sim, RedisStateStore.in_memory(server)


def served_objects(sim: Simulation) -> list[Mapping[str, Any]]:
    """What the API server holds for the Kueue scenarios and the MIG node."""
    objects: list[Mapping[str, Any]] = []
    for name in KUEUE_SCENARIOS:
        model = sim.models[sim.scenario_ids[name]]
        staging = sim.kube_stages[model.id](sim, model)
        objects += staging.objects
        if ("JobSet", NAMESPACE, workload_name(model.id)) not in staging.absent:
            objects.append(scenario_kueue.jobset(model.id, model.created_at, suspended=True))
    (node,) = [n for n in sim.cluster.nodes if n.partitioned]
    objects += [kube_objects.node(node.name, gpus=len(node.gpus)), partitions.resource_slice(node)]
    for stage in sim.cluster_stages:
        objects += stage(sim).objects
    return objects


async def test_kueue_scenarios_at_v1beta2_only_get_their_causes(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    sim, store = await simulation()
    fake_kube.served["kueue.x-k8s.io"] = ("v1beta2",)
    fake_kube.served["resource.k8s.io"] = ("v1",)
    fake_kube.only_versions["devicetaintrules"] = ("v1alpha3",)
    objects = served_objects(sim)
    workloads = [o for o in objects if o["kind"] == "Workload"]
    assert workloads and {o["apiVersion"] for o in workloads} == {"kueue.x-k8s.io/v1beta2"}
    fake_kube.put(*objects)
    async with synced_source(fake_kube, tmp_path) as source:
        assert source.kind_status("workloads").version == "v1beta2"
        ctx = Context.build(Backends(state=store, kubernetes=source))
        ids = [sim.scenario_ids[name] for name in KUEUE_SCENARIOS]
        records = await ctx.state.models.load_many(ids)
        summaries = await asyncio.gather(*(model_summary(ctx, r, 20) for r in records if r))
        tops = {
            name: s.diagnosis.causes[0] for name, s in zip(KUEUE_SCENARIOS, summaries, strict=True)
        }
        assert {name: c.kind for name, c in tops.items()} == KUEUE_SCENARIOS
        group = {f.name: f.value for f in tops["pod_group_quota"].facts}
        assert (group["resource"], group["flavor"], group["shortfall"]) == (
            "cpu",
            "cpu-highmem",
            16,
        )
        preempted = {f.name: f.value for f in tops["preempted"].facts}
        assert str(preempted["preemptor_uid"]).startswith("uid-wl-")

        snap = (await source.gpu_views()).snapshot
        (mig,) = [n for n in sim.cluster.nodes if n.partitioned]
        capacity = snap.node_capacity(mig.name)
        assert capacity is not None and capacity.partitioned == 4
        held = len({gpu for holds in EVAL_HOLDS.values() for gpu, _ in holds})
        taken = sum(len(picks) for holds in EVAL_HOLDS.values() for _, picks in holds)
        assert (capacity.counts.total, capacity.counts.held, capacity.counts.free) == (
            4,
            held,
            4 - held,
        )
        assert (capacity.slices.total, capacity.slices.held) == (16, taken)
    paths = {p for _, p, _ in fake_kube.requests if p.endswith("/workloads")}
    assert paths == {"/apis/kueue.x-k8s.io/v1beta2/workloads"}

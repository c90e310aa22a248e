"""GPU health and container terminations through the whole app, over the simulation's
Kubernetes twin: a tainted GPU (by its driver or a DeviceTaintRule) is UNHEALTHY and
never free; a sampler OOM-killed into CrashLoopBackOff shows on its pod, its placement
and its model."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.kubernetes import (
    ContainerState,
    DeviceTaint,
    GpuDevice,
    ObjectKey,
    PodRecord,
    TaintRuleRecord,
    Termination,
)
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.simulator import SimConfig, Simulation
from openrl_inspect.simulator.kube_twin import mirror_kubernetes
from support.harness import app_client, gql, populate

pytestmark = pytest.mark.anyio

NOW = time.time()
OOM_AT = NOW - 120.0


class World:
    def __init__(self, store: RedisStateStore, sim: Simulation, twin: MemoryKubernetesSource):
        self.store, self.sim, self.twin = store, sim, twin


@pytest.fixture
async def world() -> World:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(client, SimConfig(seed=5), NOW)
    twin = MemoryKubernetesSource()
    mirror_kubernetes(sim, twin)
    return World(RedisStateStore.in_memory(server), sim, twin)


def free_gpu(world: World) -> GpuDevice:
    """A healthy GPU no claim holds, as the twin publishes it (not one a staged
    DeviceTaintRule taints: the device_taint_evicted scenario's)."""
    held = {u for n in world.sim.cluster.nodes for u in n.held}
    ruled = {
        (r.pool, r.device)
        for r in world.twin.view.taint_rules.values()
        if r.pool is not None and r.device is not None
    }
    for rec in world.twin.view.slices.values():
        for device in rec.devices:
            if device.uuid not in held and (device.pool, device.device) not in ruled:
                return device
    raise AssertionError("the simulation holds every GPU")


def rule(name: str, gpu: GpuDevice, **kw: Any) -> TaintRuleRecord:
    taint = DeviceTaint("example.com/maintenance", "NoExecute", "hbm", NOW - 60, rule=name)
    return TaintRuleRecord(
        name=name, uid=f"uid-{name}", taint=taint, selects=True,
        driver=gpu.driver, pool=gpu.pool, device=gpu.device, **kw,
    )  # fmt: skip


GPU = """query($u: String!) { gpu(uuid: $u) { health
  taints { key value effect rule blocking timeAdded } taintRulesNotEvaluated }
  capacity { free unhealthy } }"""


async def test_a_rule_makes_a_gpu_unhealthy_and_not_free(world: World) -> None:
    gpu = free_gpu(world)
    assert gpu.uuid is not None
    async with app_client(world.store, kubernetes=world.twin) as client:
        before = await gql(client, GPU, u=gpu.uuid)
        world.twin.put(rule("drain", gpu))
        after = await gql(client, GPU, u=gpu.uuid)
    assert "errors" not in before and "errors" not in after, (before, after)
    assert before["data"]["gpu"] == {
        "health": "HEALTHY", "taints": [], "taintRulesNotEvaluated": [],
    }  # fmt: skip
    assert after["data"]["gpu"]["health"] == "UNHEALTHY"
    (taint,) = after["data"]["gpu"]["taints"]
    assert taint["rule"] == "drain" and taint["effect"] == "NoExecute" and taint["blocking"]
    assert taint["timeAdded"] is not None
    was, now = before["data"]["capacity"], after["data"]["capacity"]
    assert (now["free"], now["unhealthy"]) == (was["free"] - 1, was["unhealthy"] + 1)


async def test_driver_taints_and_unevaluated_rules(world: World) -> None:
    gpu = free_gpu(world)
    assert gpu.uuid is not None
    (slice_rec,) = [s for s in world.twin.view.slices.values() if s.name == gpu.slice_name]
    info = DeviceTaint("gpu.nvidia.com/xid", "None", "43", NOW - 30)
    tainted = tuple(
        replace(d, taints=(info,)) if d.key == gpu.key else d for d in slice_rec.devices
    )
    world.twin.put(replace(slice_rec, devices=tainted))
    world.twin.put(rule("old-drivers", gpu, cel=("device.driver == 'gpu.nvidia.com'",)))
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, GPU, u=gpu.uuid)
    assert "errors" not in body, body
    got = body["data"]["gpu"]
    assert got["health"] == "HEALTHY" and got["taintRulesNotEvaluated"] == ["old-drivers"]
    assert [(t["key"], t["effect"], t["rule"], t["blocking"]) for t in got["taints"]] == [
        ("gpu.nvidia.com/xid", "None", None, False)
    ]


def oom_sampler(pod: PodRecord) -> PodRecord:
    """The pod as the kubelet shows a sampler the OOM killer ended: waiting in
    CrashLoopBackOff, its last run OOMKilled with exit code 137."""
    last = Termination("OOMKilled", 137, None, None, OOM_AT - 60, OOM_AT)
    sampler = ContainerState(
        "sampler", "waiting", ready=False, restart_count=4, reason="CrashLoopBackOff",
        message="back-off 1m20s restarting failed container=sampler", image="sampler:1",
        last_termination=last,
    )  # fmt: skip
    init = ContainerState("setup", "terminated", init=True, restart_count=1, reason="Completed",
                          exit_code=0)  # fmt: skip
    return replace(pod, containers=(init, sampler))


MODEL = """query($id: ID!) { model(id: $id) {
  oomKills { truncated degraded kills { namespace pod container at exitCode restarts current } }
  one: oomKills(first: 0) { truncated kills { pod } }
  placements { nodes { oomKills { kills { pod container } }
    livePods { name restarts oomKilled containers { name init state ready restarts image
      waitingReason message exitCode signal
      lastTermination { reason exitCode signal oomKilled startedAt finishedAt } } } } } } }"""


async def test_an_oom_killed_sampler_shows_on_pod_placement_and_model(world: World) -> None:
    model = next(m for m in world.sim.models.values() if m.state == "active")
    name = next(w[2] for w in model.workers if w[1] == "sampler")
    pod = world.twin.view.pods.get(ObjectKey("openrl", name))
    assert pod is not None
    world.twin.put(oom_sampler(pod))
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, MODEL, id=model.id)
    assert "errors" not in body, body
    got = body["data"]["model"]
    (kill,) = got["oomKills"]["kills"]
    assert (kill["pod"], kill["container"], kill["exitCode"], kill["restarts"]) == (
        name, "sampler", 137, 4,
    )  # fmt: skip
    assert kill["namespace"] == "openrl" and not kill["current"] and kill["at"] is not None
    assert got["oomKills"]["truncated"] is False and got["oomKills"]["degraded"] is False
    assert got["one"] == {"truncated": True, "kills": []}
    (placement,) = got["placements"]["nodes"]
    assert placement["oomKills"]["kills"] == [{"pod": name, "container": "sampler"}]
    pods = {p["name"]: p for p in placement["livePods"]}
    sick = pods[name]
    assert (sick["restarts"], sick["oomKilled"]) == (5, True)
    init, sampler = sick["containers"]
    assert (init["init"], init["state"], init["exitCode"], init["waitingReason"]) == (
        True, "terminated", 0, None,
    )  # fmt: skip
    assert (sampler["state"], sampler["waitingReason"], sampler["exitCode"]) == (
        "waiting", "CrashLoopBackOff", None,
    )  # fmt: skip
    assert sampler["lastTermination"]["oomKilled"] and sampler["lastTermination"]["exitCode"] == 137
    assert sampler["image"] == "sampler:1" and sampler["message"].startswith("back-off")
    assert all(not p["oomKilled"] for n, p in pods.items() if n != name)


async def test_oom_kills_are_read_without_a_call_per_pod(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    for name in ("pods_by_model", "get_pods"):
        original = getattr(world.twin, name)

        async def counted(*args: Any, _name: str = name, _call: Any = original) -> Any:
            calls[_name] += 1
            return await _call(*args)

        monkeypatch.setattr(world.twin, name, counted)
    query = """{ models(state: ACTIVE, first: 10) { nodes { oomKills { kills { pod } }
      placements { nodes { oomKills { kills { pod } } } } } } }"""
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, query)
    assert "errors" not in body, body
    assert len(body["data"]["models"]["nodes"]) >= 3
    assert calls == {"pods_by_model": 1, "get_pods": 1}

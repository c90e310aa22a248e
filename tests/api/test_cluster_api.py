"""The cluster graph through the whole app: a populated simulation and its Kubernetes twin.

Model -> placements (Redis) -> live pods -> node -> GPUs -> holders; GPU -> holder model;
why a waiting model waits; capacity; and what a failing or missing Kubernetes does to an
answer (only the cluster fields go null).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.errors import BackendUnavailable
from openrl_inspect.simulator import SimConfig, Simulation, partitions
from openrl_inspect.simulator.kube_twin import LOCAL_QUEUE, cluster_records, mirror_kubernetes
from openrl_inspect.simulator.scenarios.base import SCENARIO_NODES
from openrl_inspect.simulator.scenarios.cluster_shapes import EVAL_HOLDS
from openrl_inspect.simulator.scenarios.past import PAST_NODES
from support.harness import app_client, gql, populate

pytestmark = pytest.mark.anyio

NOW = time.time()


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


def running(sim: Simulation) -> list[Any]:
    """The ordinary models holding GPUs (a staged one may have several placements)."""
    staged = set(sim.scenario_ids.values())
    return [
        m for m in sim.models.values() if m.state in ("placed", "active") and m.id not in staged
    ]


# The partitioned node's GPUs other teams hold slices of: held, though no model holds them.
MIG_HELD = len({gpu for holds in EVAL_HOLDS.values() for gpu, _ in holds})


def held_gpus(sim: Simulation) -> int:
    return sum(len(n.held) for n in sim.cluster.nodes) + MIG_HELD


WALK = """
query($id: ID!) {
  model(id: $id) {
    id state
    placements { nodes {
      workload node pods gpuIds releasedAt source
      livePods { name namespace role phase source degraded
        node { name ready gpus(first: 8) { totalCount } }
        gpus { uuid productName node { name } heldBy { model { id } pod { name } claim { name } } }
        claims { name allocated devices { device gpu { uuid } } reservedFor { name } }
      }
      liveNode { name }
      liveGpus { uuid held }
      liveWorkload { name status admission { clusterQueue } }
    } }
    pods { totalCount truncated degraded nodes { name } }
    workloads { nodes { name status } }
  }
}
"""


async def test_one_query_walks_placements_pods_node_gpus(world: World) -> None:
    models = running(world.sim)
    assert len(models) >= 3
    async with app_client(world.store, kubernetes=world.twin) as client:
        for m in models:
            body = await gql(client, WALK, id=m.id)
            assert "errors" not in body, body
            got = body["data"]["model"]
            (placement,) = got["placements"]["nodes"]
            node = world.sim.node_of(m)
            uuids = {g.uuid for g in world.sim.gpus_of(m)}
            assert placement["source"] == "redis" and placement["releasedAt"] is None
            assert placement["node"] == node and set(placement["gpuIds"]) == uuids
            live = placement["livePods"]
            assert [p["name"] for p in live] == placement["pods"] == [w[2] for w in m.workers]
            assert {p["role"] for p in live} == {"trainer", "sampler"}
            assert all(p["source"] == "kubernetes" and not p["degraded"] for p in live)
            assert {p["node"]["name"] for p in live} == {node}
            assert live[0]["node"]["gpus"]["totalCount"] == 8
            pod_gpus = [g for p in live for g in p["gpus"]]
            assert {g["uuid"] for g in pod_gpus} == uuids
            for p in live:
                for g in p["gpus"]:
                    (holder,) = g["heldBy"]
                    assert holder["model"]["id"] == m.id and holder["pod"]["name"] == p["name"]
                    assert g["node"]["name"] == node
                (claim,) = p["claims"]
                assert claim["allocated"] and claim["reservedFor"] == [{"name": p["name"]}]
                assert {d["gpu"]["uuid"] for d in claim["devices"]} == {
                    g["uuid"] for g in p["gpus"]
                }
            assert placement["liveNode"] == {"name": node}
            assert {g["uuid"] for g in placement["liveGpus"]} == uuids
            assert all(g["held"] for g in placement["liveGpus"])
            assert placement["liveWorkload"]["name"] == placement["workload"]
            assert placement["liveWorkload"]["status"] == "admitted"
            assert got["pods"]["totalCount"] == 2 and not got["pods"]["truncated"]
            assert [w["status"] for w in got["workloads"]["nodes"]] == ["admitted"]


async def test_workload_pods_page_on_with_after(world: World) -> None:
    model = running(world.sim)[0]
    query = """query($id: ID!, $after: String) { model(id: $id) { workloads { nodes {
        pods(first: 1, after: $after) { totalCount truncated
          pageInfo { hasNextPage hasPreviousPage endCursor } edges { cursor node { name } } }
    } } } }"""
    names: list[str] = []
    after = None
    async with app_client(world.store, kubernetes=world.twin) as client:
        for _ in range(4):
            body = await gql(client, query, id=model.id, after=after)
            assert "errors" not in body, body
            (workload,) = body["data"]["model"]["workloads"]["nodes"]
            page = workload["pods"]
            names += [e["node"]["name"] for e in page["edges"]]
            assert page["pageInfo"]["hasPreviousPage"] is (after is not None)
            if not page["pageInfo"]["hasNextPage"]:
                break
            assert page["truncated"] and page["totalCount"] is None
            after = page["edges"][-1]["cursor"]
            assert after == page["pageInfo"]["endCursor"]
        bad = await gql(client, query, id=model.id, after="not a cursor")
    assert names == sorted(w[2] for w in model.workers) and len(names) == 2
    assert bad["errors"][0]["extensions"]["code"] == "BAD_INPUT"


async def test_gpu_query_returns_its_holder(world: World) -> None:
    held = {u: mid for n in world.sim.cluster.nodes for u, mid in n.held.items()}
    free = [g.uuid for n in world.sim.cluster.nodes for g in n.free()]
    assert held and free
    query = """query($u: String!) { gpu(uuid: $u) { uuid held node { name }
        heldBy { modelId model { id state } pod { name model { id } } claim { allocated } } } }"""
    async with app_client(world.store, kubernetes=world.twin) as client:
        for uuid, mid in sorted(held.items())[:6]:
            body = await gql(client, query, u=uuid)
            assert "errors" not in body, body
            gpu = body["data"]["gpu"]
            (holder,) = gpu["heldBy"]
            assert gpu["held"] and holder["modelId"] == mid and holder["model"]["id"] == mid
            assert holder["pod"]["model"]["id"] == mid and holder["claim"]["allocated"]
        body = await gql(client, query, u=free[0])
        assert body["data"]["gpu"]["held"] is False and body["data"]["gpu"]["heldBy"] == []
        missing = await gql(client, query, u="GPU-00000000-0000-0000-0000-000000000000")
        bad = await gql(client, query, u="GPU {bad}")
    assert missing["data"]["gpu"] is None
    assert missing["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert bad["errors"][0]["extensions"]["code"] == "BAD_INPUT"


async def test_waiting_model_explains_why(world: World) -> None:
    waiting = world.sim.scenario_ids["waiting"]
    active = world.sim.scenario_ids["stuck"]
    query = """query($w: ID!, $a: ID!) {
      w: model(id: $w) { state waitingSeconds
        whyWaiting { rank kind source reason message object flavor resource shortfall
                     waitedSeconds queuePosition queueLength } }
      a: model(id: $a) { state waitingSeconds whyWaiting { kind } }
    }"""
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, query, w=waiting, a=active)
    assert "errors" not in body, body
    w = body["data"]["w"]
    assert w["state"] == "WAITING" and w["waitingSeconds"] >= 2400
    first = w["whyWaiting"][0]
    assert (first["rank"], first["kind"], first["source"]) == (1, "QUOTA", "kueue")
    assert "insufficient unused quota for nvidia.com/gpu in flavor" in first["message"]
    assert first["flavor"] in first["message"] and first["resource"] == "nvidia.com/gpu"
    assert first["shortfall"] == world.sim.config.gpus_per_model
    assert first["object"] == f"Workload openrl/openrl-{waiting}"
    assert first["waitedSeconds"] >= 2400
    # The queue holds the Workloads pending in it: not those of waiting models with
    # none, deactivated, in another queue, or with quota reserved (staged scenarios).
    pending = [
        w
        for w in world.twin.view.workloads.values()
        if w.queue_name == LOCAL_QUEUE and w.active and not w.is_true("QuotaReserved")
    ]
    waiting_models = {m.id for m in world.sim.models.values() if m.state == "waiting"}
    assert len(pending) < len(waiting_models) and first["queueLength"] == len(pending)
    assert 1 <= first["queuePosition"] <= first["queueLength"]
    assert body["data"]["a"] == {"state": "ACTIVE", "waitingSeconds": None, "whyWaiting": []}


async def test_capacity_matches_the_simulation(world: World) -> None:
    nodes = world.sim.cluster.nodes
    query = """{ capacity { nodes total held free unhealthy unhealthyHeld tainted degraded truncated
        byProduct { product nodes total held free }
        byNode(first: 100) { nodes { nodeName total held free basis condition } } }
      nodes(first: 100) { nodes { name capacity { total held free } } } }"""
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, query)
    assert "errors" not in body, body
    cap = body["data"]["capacity"]
    total = sum(len(n.gpus) for n in nodes)  # a partitioned GPU once
    held = held_gpus(world.sim)
    # The gpu_unhealthy scenario's trainer GPU, tainted under the model that holds it; the
    # device_taint_evicted scenario's, tainted by a NoExecute rule and a NoSchedule drain
    # rule, its pod long gone.
    assert (cap["unhealthy"], cap["unhealthyHeld"], cap["tainted"]) == (3, 1, 0)
    broken = cap["unhealthy"] - cap["unhealthyHeld"]
    assert (cap["nodes"], cap["total"], cap["held"], cap["free"]) == (
        len(nodes), total, held, total - held - broken,
    )  # fmt: skip
    assert (cap["degraded"], cap["truncated"]) == (False, False)
    per_product: Counter[str] = Counter()
    held_product: Counter[str] = Counter()
    for n in nodes:
        for g in n.gpus:
            per_product[g.product] += 1
            held_product[g.product] += g.uuid in n.held
        held_product[n.gpus[0].product] += MIG_HELD if n.partitioned else 0
    assert {p["product"]: (p["total"], p["held"]) for p in cap["byProduct"]} == {
        product: (per_product[product], held_product[product]) for product in per_product
    }
    expected = {n.name: (len(n.gpus), MIG_HELD if n.partitioned else len(n.held)) for n in nodes}
    by_node = {c["nodeName"]: (c["total"], c["held"]) for c in cap["byNode"]["nodes"]}
    assert by_node == expected
    assert {c["basis"] for c in cap["byNode"]["nodes"]} == {"dra"}
    listed = body["data"]["nodes"]["nodes"]
    assert {n["name"]: (n["capacity"]["total"], n["capacity"]["held"]) for n in listed} == expected


GRID = """{ capacity { total held free tainted unhealthy unhealthyHeld
    byProduct { total unhealthy unhealthyHeld } }
  nodes(first: 100) { nodes { name capacity { unhealthy unhealthyHeld }
    gpus(first: 100) { nodes { uuid kind health held } } } } }"""


async def test_capacity_counts_every_gpu_the_grid_shows_unhealthy(world: World) -> None:
    """A tainted GPU under a model is red on the cluster grid and the model's cause:
    capacity counts it unhealthy (and held), never 0 unhealthy beside it."""
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, GRID)
    assert "errors" not in body, body
    data = body["data"]
    whole = [g for n in data["nodes"]["nodes"] for g in n["gpus"]["nodes"] if g["kind"] != "MIG"]
    sick = [g for g in whole if g["health"] == "UNHEALTHY"]
    assert sick, "the simulation stages a tainted GPU"
    cap = data["capacity"]
    assert cap["unhealthy"] == len(sick)
    assert cap["unhealthyHeld"] == sum(g["held"] for g in sick) >= 1
    assert sum(p["unhealthy"] for p in cap["byProduct"]) == cap["unhealthy"]
    assert sum(p["unhealthyHeld"] for p in cap["byProduct"]) == cap["unhealthyHeld"]
    per_node = [n["capacity"] for n in data["nodes"]["nodes"]]
    assert sum(c["unhealthyHeld"] for c in per_node) == cap["unhealthyHeld"]
    unheld = cap["unhealthy"] - cap["unhealthyHeld"]
    assert cap["total"] == cap["held"] + cap["free"] + cap["tainted"] + unheld


MIXED = """query($w: ID!, $i: ID!) {
  w: model(id: $w) { id state waitingSeconds whyWaiting { kind } }
  i: model(id: $i) { id state stepCount
    placements { nodes { gpuIds node livePods { name } liveNode { name } } }
    pods { totalCount } workers { nodes { id pod podObject { name } } } }
  capacity { total }
}"""


async def test_kubernetes_failing_nulls_only_cluster_fields(world: World) -> None:
    world.twin.failure = BackendUnavailable(
        "kubernetes", "the Kubernetes API server cannot be reached"
    )
    ids = world.sim.scenario_ids
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, MIXED, w=ids["waiting"], i=ids["idle_placement"])
    data = body["data"]
    assert data["w"]["state"] == "WAITING" and data["w"]["waitingSeconds"] >= 2400
    assert data["w"]["whyWaiting"] is None
    idle = data["i"]
    assert idle["state"] == "ACTIVE" and idle["stepCount"] == 3
    (placement,) = idle["placements"]["nodes"]
    assert len(placement["gpuIds"]) == 2 and placement["node"]  # the history stands
    assert placement["livePods"] is None and placement["liveNode"] is None
    assert idle["pods"] is None and data["capacity"] is None
    assert all(w["id"] and w["podObject"] is None for w in idle["workers"]["nodes"])
    assert {tuple(map(str, e["path"][-1:])) for e in body["errors"]} == {
        ("whyWaiting",), ("livePods",), ("liveNode",), ("pods",), ("podObject",), ("capacity",),
    }  # fmt: skip
    for error in body["errors"]:
        assert error["extensions"] == {"code": "BACKEND_UNAVAILABLE", "backend": "kubernetes"}
        assert error["message"] == "the Kubernetes API server cannot be reached"


async def test_without_kubernetes_the_fields_say_not_configured(world: World) -> None:
    ids = world.sim.scenario_ids
    async with app_client(world.store) as client:
        body = await gql(client, MIXED, w=ids["waiting"], i=ids["idle_placement"])
        status = await gql(client, "{ kubernetesStatus { ready } nodes { totalCount } }")
    assert body["data"]["i"]["stepCount"] == 3 and body["data"]["i"]["pods"] is None
    codes = {e["extensions"]["code"] for e in body["errors"] + status["errors"]}
    assert codes == {"BACKEND_NOT_CONFIGURED"}
    assert {e["extensions"]["backend"] for e in body["errors"]} == {"kubernetes"}
    assert status["data"] == {"kubernetesStatus": None, "nodes": None}


async def test_degraded_answers_say_so(world: World) -> None:
    m = running(world.sim)[0]
    world.twin.degraded_kinds = {"pods"}
    query = """query($id: ID!) { model(id: $id) { pods { degraded nodes { degraded node { degraded } } } }
      nodes(first: 1) { degraded } kubernetesStatus { ready degraded kinds { kind degraded synced } } }"""
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, query, id=m.id)
    data = body["data"]
    pods = data["model"]["pods"]
    assert pods["degraded"] is True and {p["degraded"] for p in pods["nodes"]} == {True}
    assert {p["node"]["degraded"] for p in pods["nodes"]} == {False}
    assert data["nodes"]["degraded"] is False
    status = data["kubernetesStatus"]
    assert status["degraded"] is True and status["ready"] is False
    assert [k["kind"] for k in status["kinds"] if k["degraded"]] == ["pods"]


async def test_lists_page_through_real_cursors(world: World) -> None:
    names: list[str] = []
    after = None
    async with app_client(world.store, kubernetes=world.twin) as client:
        while True:
            body = await gql(
                client,
                "query($a: String) { nodes(first: 2, after: $a) { totalCount truncated"
                " pageInfo { hasNextPage hasPreviousPage endCursor } nodes { name } } }",
                a=after,
            )
            page = body["data"]["nodes"]
            assert page["totalCount"] is None or page["totalCount"] == len(page["nodes"])
            names += [n["name"] for n in page["nodes"]]
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        listed: list[str] = []
        after, total = None, None
        while True:  # more devices than a page holds: every page, through its cursor
            gpus = await gql(
                client,
                "query($a: String) { gpus(first: 100, after: $a) { totalCount"
                " pageInfo { hasNextPage endCursor } nodes { uuid } } }",
                a=after,
            )
            page = gpus["data"]["gpus"]
            listed += [g["uuid"] for g in page["nodes"]]
            total = page["totalCount"] if total is None else total
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        node = world.sim.cluster.nodes[0].name
        on_node = await gql(
            client,
            "query($n: String!) { gpus(node: $n, first: 3) { pageInfo { endCursor } } }",
            n=node,
        )
        cursor = on_node["data"]["gpus"]["pageInfo"]["endCursor"]
        rest = await gql(
            client,
            "query($n: String!, $a: String!) { node(name: $n) { gpus(first: 8, after: $a) {"
            " truncated nodes { index } } } }",
            n=node,
            a=cursor,
        )
        bad = await gql(client, '{ nodes(after: "garbage") { totalCount } }')
        wrong_kind = await gql(
            client, "query($a: String!) { pods(after: $a) { totalCount } }", a=cursor
        )
        bad_ns = await gql(client, '{ pod(namespace: "Not_A_Namespace", name: "x") { name } }')
    assert names == sorted(n.name for n in world.sim.cluster.nodes)
    # Devices: a whole GPU, or a partitioned GPU's slices.
    all_uuids = {g.uuid for n in world.sim.cluster.nodes if not n.partitioned for g in n.gpus}
    all_uuids |= {
        partitions.slice_uuid(g, p)
        for n in world.sim.cluster.nodes
        if n.partitioned
        for g in n.gpus
        for p in partitions.LAYOUT
    }
    assert sorted(listed) == sorted(all_uuids)
    assert total in (None, len(all_uuids))
    assert [g["index"] for g in rest["data"]["node"]["gpus"]["nodes"]] == [3, 4, 5, 6, 7]
    for answer in (bad, wrong_kind, bad_ns):
        assert answer["errors"][0]["extensions"]["code"] == "BAD_INPUT"


async def test_workers_and_pods_link_both_ways(world: World) -> None:
    m = running(world.sim)[0]
    query = """query($id: ID!) { model(id: $id) { workers { nodes { id pod node
        podObject { name model { id } } nodeObject { name } } } } }"""
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, query, id=m.id)
        pod_name = m.workers[0][2]
        pod = await gql(
            client,
            'query($n: String!, $m: ID!) { pod(namespace: "openrl", name: $n) {'
            " model { id } node { name } containers { state } }"
            " pods(model: $m) { nodes { name } } }",
            n=pod_name,
            m=m.id,
        )
    assert "errors" not in body, body
    for w in body["data"]["model"]["workers"]["nodes"]:
        assert w["podObject"]["name"] == w["pod"] and w["podObject"]["model"]["id"] == m.id
        assert w["nodeObject"]["name"] == w["node"] == world.sim.node_of(m)
    assert pod["data"]["pod"]["model"]["id"] == m.id
    assert {p["name"] for p in pod["data"]["pods"]["nodes"]} == {w[2] for w in m.workers}


async def test_the_twin_follows_the_simulation(world: World) -> None:
    sim, twin = world.sim, world.twin
    m = running(sim)[0]
    gpus = {g.uuid for g in sim.gpus_of(m)}
    sim.finish(m, "ended", NOW + 1)
    await sim.rec.flush()  # type: ignore[attr-defined]  # the fixture's AsyncRecorder
    mirror_kubernetes(sim, twin)
    query = """query($id: ID!) { model(id: $id) { state whyWaiting { kind }
        placements { nodes { pods releasedAt livePods { name } liveGpus { uuid held } liveWorkload { name } } }
        pods { totalCount } } capacity { held } }"""
    async with app_client(world.store, kubernetes=twin) as client:
        body = await gql(client, query, id=m.id)
    assert "errors" not in body, body
    got = body["data"]["model"]
    (placement,) = got["placements"]["nodes"]
    assert got["state"] == "ENDED" and got["pods"]["totalCount"] == 0 and got["whyWaiting"] == []
    assert placement["pods"] and placement["releasedAt"] is not None  # the history
    assert placement["livePods"] == [] and placement["liveWorkload"] is None  # gone live
    assert {g["uuid"] for g in placement["liveGpus"]} == gpus
    assert not any(g["held"] for g in placement["liveGpus"])
    assert body["data"]["capacity"]["held"] == held_gpus(sim)


async def test_the_twin_is_deterministic() -> None:
    async def records() -> tuple[Simulation, Any]:
        client = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), decode_responses=True)
        sim = await populate(client, SimConfig(seed=11), NOW)
        return sim, cluster_records(sim)

    (sim, first), (_, second) = await records(), await records()
    assert first == second
    # The pools, the scenario pool, the MIG node and the past scenarios' two.
    assert len(first.nodes) == len(first.slices) == 6 + SCENARIO_NODES[1] + 1 + PAST_NODES[1]
    # Workloads name their model by ownership (Kueue copies no labels by default); only
    # those staged whole, as Kueue writes them, name it in their pod sets' templates too.
    staged = {w.model_id for w in first.workloads if w.model_id is not None}
    # (A pod group's Workload is owned by its pods.)
    assert all(w.owners[0].kind in ("JobSet", "Pod") for w in first.workloads)
    assert staged and all(w.name == f"openrl-{w.model_id}" for w in first.workloads if w.model_id)
    assert len(staged) < len(first.workloads) / 2
    owned = {uid for w in first.workloads for uid in w.job_uids}
    # Every OpenRL pod is a Workload's, through its jobs or (a pod group's) itself; the
    # pods other teams run on MIG slices are not queued by Kueue.
    # (A failed model's pods may outlive its Workload: the oom_chain scenario's do.)
    failed = [m.id for m in sim.models.values() if m.state == "failed"]
    assert all(
        (set(p.job_uids) | {p.uid}) & owned
        for p in first.pods
        if p.namespace == "openrl" and not any(mid in p.name for mid in failed)
    )

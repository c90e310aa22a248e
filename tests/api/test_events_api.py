"""``events`` on Pod, Workload, Node and Model, through the whole app over the twins.

A model's events are its pods' and Workloads' merged newest first; every list is bounded
and says when it was truncated; one events lookup per level of a query, whatever the
number of objects; Kubernetes failing or missing nulls only these fields, coded.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import fakeredis
import pytest
from openrl_inspect.adapters.kubernetes import (
    EventRecord,
    EventStore,
    Listing,
    ObjectRef,
    Regarding,
)
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.errors import BackendUnavailable
from openrl_inspect.simulator import SimConfig, Simulation
from openrl_inspect.simulator.kube_twin import (
    NAMESPACE,
    cluster_records,
    mirror_kubernetes,
    workload_name,
)
from support.harness import app_client, gql, populate

pytestmark = pytest.mark.anyio

NOW = time.time()


class CountingTwin(MemoryKubernetesSource):
    """The twin, recording the objects of every ``events_for`` call."""

    def __init__(self) -> None:
        super().__init__(events=EventStore(max_events=1000, max_age_s=3600))
        self.event_calls: list[list[Regarding]] = []

    async def events_for(
        self, objects: Sequence[Regarding], limit: int = 100
    ) -> list[Listing[EventRecord]]:
        self.event_calls.append(list(objects))
        return await super().events_for(objects, limit)


def ev(name: str, kind: str, obj: str, ago: float, reason: str, ns: str = NAMESPACE) -> EventRecord:
    return EventRecord(
        namespace=ns or "default",
        name=name,
        uid=f"uid-{name}",
        type="Warning" if reason in ("BackOff", "FailedScheduling") else "Normal",
        reason=reason,
        note=f"{reason} on {obj}",
        action=None,
        regarding=ObjectRef(kind, ns, obj),
        related=None,
        reporting_controller="kubelet",
        count=2,
        first_at=NOW - ago - 30,
        last_at=NOW - ago,
    )


class World:
    def __init__(self, store: RedisStateStore, sim: Simulation, twin: CountingTwin) -> None:
        self.store, self.sim, self.twin = store, sim, twin
        self.model = next(m for m in sim.models.values() if m.state in ("placed", "active"))
        self.pods = [w[2] for w in self.model.workers]
        self.workload = workload_name(self.model.id)
        self.node = sim.node_of(self.model)


@pytest.fixture
async def world() -> World:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(client, SimConfig(seed=5), NOW)
    twin = CountingTwin()
    mirror_kubernetes(sim, twin)
    w = World(RedisStateStore.in_memory(server), sim, twin)
    pod_a, pod_b = w.pods[:2]
    twin.put(
        ev("a1", "Pod", pod_a, 300, "Scheduled"),
        ev("a2", "Pod", pod_a, 60, "BackOff"),
        ev("b1", "Pod", pod_b, 200, "Pulled"),
        ev("w1", "Workload", w.workload, 400, "QuotaReserved"),
        ev("w2", "Workload", w.workload, 100, "Admitted"),
        ev("n1", "Node", w.node, 10, "NodeNotReady", ns=""),
        ev("x1", "Pod", "someone-else-0", 5, "BackOff"),
    )
    return w


MODEL = """query($id: ID!, $n: Int) { model(id: $id) {
  events(first: $n) { truncated degraded nodes {
    name reason type note count firstAt lastAt reportingController
    regarding { kind namespace name } } }
  pods { nodes { name events { nodes { name } truncated } } }
  workloads { nodes { name events(first: 1) { nodes { name } truncated } } }
} }"""


async def test_a_model_merges_its_pods_and_workloads_events(world: World) -> None:
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, MODEL, id=world.model.id, n=10)
    assert "errors" not in body, body
    model = body["data"]["model"]
    events = model["events"]
    assert [e["name"] for e in events["nodes"]] == ["a2", "w2", "b1", "a1", "w1"]
    assert not events["truncated"] and not events["degraded"]
    first = events["nodes"][0]
    assert first["regarding"] == {"kind": "Pod", "namespace": NAMESPACE, "name": world.pods[0]}
    assert first["reason"] == "BackOff" and first["type"] == "Warning" and first["count"] == 2
    assert first["firstAt"] < first["lastAt"]
    pods = {p["name"]: p["events"] for p in model["pods"]["nodes"]}
    assert [e["name"] for e in pods[world.pods[0]]["nodes"]] == ["a2", "a1"]
    assert [e["name"] for e in pods[world.pods[1]]["nodes"]] == ["b1"]
    (workload,) = model["workloads"]["nodes"]
    assert workload["events"] == {"nodes": [{"name": "w2"}], "truncated": True}


async def test_one_lookup_per_level(world: World) -> None:
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, MODEL, id=world.model.id, n=10)
    assert "errors" not in body, body
    # The model's own (pods + Workload), then every pod's at once, then the Workload's.
    sizes = sorted(len(call) for call in world.twin.event_calls)
    assert len(world.twin.event_calls) == 3
    assert sizes == sorted([len(world.pods) + 1, len(world.pods), 1])


async def test_a_models_events_are_bounded(world: World) -> None:
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, MODEL, id=world.model.id, n=2)
        refused = await gql(client, MODEL, id=world.model.id, n=1000)
    events = body["data"]["model"]["events"]
    assert [e["name"] for e in events["nodes"]] == ["a2", "w2"] and events["truncated"]
    assert refused["data"]["model"]["events"] is None
    assert {e["extensions"]["code"] for e in refused["errors"]} == {"BAD_INPUT"}


async def test_a_node_and_a_pod_by_name(world: World) -> None:
    query = """query($node: String!, $pod: String!) {
      node(name: $node) { events { nodes { name regarding { namespace } } } }
      pod(namespace: "openrl", name: $pod) { events(first: 1) { nodes { reason } truncated } }
    }"""
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, query, node=world.node, pod=world.pods[0])
    assert "errors" not in body, body
    assert body["data"]["node"]["events"]["nodes"] == [
        {"name": "n1", "regarding": {"namespace": None}}
    ]
    assert body["data"]["pod"]["events"] == {"nodes": [{"reason": "BackOff"}], "truncated": True}


async def test_the_kind_status_shows_the_events_cache(world: World) -> None:
    query = "{ kubernetesStatus { kinds { kind objects evicted } } }"
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, query)
    kinds = {k["kind"]: k for k in body["data"]["kubernetesStatus"]["kinds"]}
    # The seven put here, and those the simulation's staged scenarios show.
    staged = len(cluster_records(world.sim).events)
    assert staged and kinds["events"] == {"kind": "events", "objects": 7 + staged, "evicted": 0}


EVENTS_ONLY = """query($id: ID!) { model(id: $id) { id state events { nodes { name } } } }"""


async def test_kubernetes_down_nulls_only_the_events(world: World) -> None:
    world.twin.failure = BackendUnavailable(
        "kubernetes", "the Kubernetes API server cannot be reached"
    )
    async with app_client(world.store, kubernetes=world.twin) as client:
        body = await gql(client, EVENTS_ONLY, id=world.model.id)
    assert body["data"]["model"]["id"] == world.model.id and body["data"]["model"]["events"] is None
    (error,) = body["errors"]
    assert error["path"] == ["model", "events"]
    assert error["extensions"] == {"code": "BACKEND_UNAVAILABLE", "backend": "kubernetes"}


async def test_without_kubernetes_the_events_say_not_configured(world: World) -> None:
    async with app_client(world.store) as client:
        body = await gql(client, EVENTS_ONLY, id=world.model.id)
    assert body["data"]["model"]["events"] is None
    (error,) = body["errors"]
    assert error["extensions"] == {
        "code": "BACKEND_NOT_CONFIGURED",
        "backend": "kubernetes",
        "fields": 1,
    }

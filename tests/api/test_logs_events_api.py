"""``Model.logs(events: true)``: Kubernetes Events among a model's worker lines.

The worker lines and the exported events are in the in-memory Cloud Logging twin (GKE's
wire shapes); the cluster is the simulation's Kubernetes twin; placements are in (fake)
Redis. Expected answers are worked out here from the entries written.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.logs.memory import InMemoryLogSource, event_wire_entry, wire_entry
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.simulator import SimConfig, Simulation
from openrl_inspect.simulator.kube_twin import NAMESPACE, mirror_kubernetes, workload_name
from support.harness import app_client, gql, populate

pytestmark = pytest.mark.anyio

NOW = time.time()
SINCE = datetime.fromtimestamp(NOW, tz=UTC) - timedelta(minutes=30)
UNTIL = datetime.fromtimestamp(NOW, tz=UTC)

QUERY = """
query($id: ID!, $first: Int, $after: String, $events: Boolean, $role: String,
      $since: DateTime, $until: DateTime, $workerLogs: Boolean) {
  model(id: $id) {
    logs(first: $first, after: $after, events: $events, role: $role, since: $since,
         until: $until, clientLogs: false, workerLogs: $workerLogs) {
      truncated filter pageInfo { endCursor }
      nodes { message severity source { kind pod } event { reason kind namespace name } }
    }
  }
}"""


def at(minutes: float) -> datetime:
    return SINCE + timedelta(minutes=minutes)


class World:
    def __init__(self, store: RedisStateStore, sim: Simulation, twin: MemoryKubernetesSource):
        self.store, self.sim, self.twin = store, sim, twin
        self.model = next(m for m in sim.models.values() if m.state in ("placed", "active"))
        self.trainer, self.sampler = (w[2] for w in self.model.workers[:2])
        self.failed = sim.models[sim.scenario_ids["failed"]]
        self.logs = InMemoryLogSource(project="openrl-local")
        self.logs.append(*self._entries())

    def _entries(self) -> list[dict[str, Any]]:
        m = self.model
        lines = [
            wire_entry(timestamp=at(2), message="trainer up", model_id=m.id, pod=self.trainer),
            wire_entry(timestamp=at(6), message="sampler up", model_id=m.id, pod=self.sampler),
            wire_entry(timestamp=at(9), message="step 1 done", model_id=m.id, pod=self.trainer),
        ]
        events = [
            (at(1), "Workload", workload_name(m.id), "QuotaReserved", "Normal"),
            (at(3), "Pod", self.trainer, "BackOff", "Warning"),
            (at(7), "Pod", self.sampler, "Unhealthy", "Warning"),
            (at(8), "Pod", "someone-else-0", "BackOff", "Warning"),
            (at(4), "Pod", self.failed.workers[0][2], "Evicted", "Warning"),
        ]
        for stamp, kind, name, reason, type_ in events:
            lines.append(
                event_wire_entry(
                    timestamp=stamp,
                    kind=kind,
                    name=name,
                    namespace=NAMESPACE,
                    reason=reason,
                    message=f"{reason} {name}",
                    event_type=type_,
                    component="kubelet" if kind == "Pod" else "kueue-admission",
                )
            )
        return lines


@pytest.fixture
async def world() -> World:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(client, SimConfig(seed=5), NOW)
    twin = MemoryKubernetesSource()
    mirror_kubernetes(sim, twin)
    return World(RedisStateStore.in_memory(server), sim, twin)


async def logs(world: World, mid: str, kube: bool = True, **variables: Any) -> dict[str, Any]:
    others: dict[str, Any] = {"logs": world.logs}
    if kube:
        others["kubernetes"] = world.twin
    variables = {"since": SINCE.isoformat(), "until": UNTIL.isoformat(), **variables}
    async with app_client(world.store, **others) as client:
        body = await gql(client, QUERY, id=mid, **variables)
    assert "errors" not in body, body
    got: dict[str, Any] = body["data"]["model"]["logs"]
    return got


def lines(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(n["source"]["kind"], n["message"]) for n in answer["nodes"]]


async def test_events_join_the_worker_lines_in_time_order(world: World) -> None:
    m = world.model
    answer = await logs(world, m.id, events=True)
    assert lines(answer) == [
        ("EVENT", f"QuotaReserved {workload_name(m.id)}"),
        ("WORKER", "trainer up"),
        ("EVENT", f"BackOff {world.trainer}"),
        ("WORKER", "sampler up"),
        ("EVENT", f"Unhealthy {world.sampler}"),
        ("WORKER", "step 1 done"),
    ]
    backoff = answer["nodes"][2]
    assert backoff["severity"] == "WARNING" and backoff["source"]["pod"] == world.trainer
    assert backoff["event"] == {
        "reason": "BackOff", "kind": "Pod", "namespace": NAMESPACE, "name": world.trainer,
    }  # fmt: skip
    assert "logs/events" in answer["filter"]


async def test_the_default_is_the_container_lines_only(world: World) -> None:
    answer = await logs(world, world.model.id)
    assert [k for k, _ in lines(answer)] == ["WORKER"] * 3
    assert "logs/events" not in answer["filter"]


async def test_a_failed_models_deleted_pods_still_have_their_events(world: World) -> None:
    pod = world.failed.workers[0][2]
    assert (await world.twin.get_pods([ObjectKey(NAMESPACE, pod)])) == [
        None
    ]  # gone from the cluster
    answer = await logs(world, world.failed.id, events=True)
    assert lines(answer) == [("EVENT", f"Evicted {pod}")]


async def test_without_kubernetes_the_recorded_objects_still_count(world: World) -> None:
    answer = await logs(world, world.model.id, kube=False, events=True)
    assert [k for k, _ in lines(answer)].count("EVENT") == 3


async def test_pages_of_lines_and_events_follow_one_cursor(world: World) -> None:
    whole = lines(await logs(world, world.model.id, events=True))
    seen: list[tuple[str, str]] = []
    after = None
    for _ in range(10):
        answer = await logs(world, world.model.id, events=True, first=2, after=after)
        seen += lines(answer)
        if (after := answer["pageInfo"]["endCursor"]) is None:
            break
    assert seen == whole


async def test_a_role_keeps_the_events_of_that_roles_pods(world: World) -> None:
    answer = await logs(world, world.model.id, events=True, role="trainer")
    assert [m for k, m in lines(answer) if k == "EVENT"] == [f"BackOff {world.trainer}"]


async def test_events_need_the_worker_logs(world: World) -> None:
    async with app_client(world.store, logs=world.logs, kubernetes=world.twin) as client:
        body = await gql(client, QUERY, id=world.model.id, events=True, workerLogs=False)
    assert body["data"]["model"]["logs"] is None
    assert {e["extensions"]["code"] for e in body["errors"]} == {"BAD_INPUT"}

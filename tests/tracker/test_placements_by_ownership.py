"""The tracker on Workloads without model labels (Kueue's default), as Kueue, Job and
JobSet shape them: placements only for admitted Workloads whose pods are bound to a
node, and a history that stays right through preemption and re-admission."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
from openrl_inspect.adapters.kubernetes._json import parse_time
from openrl_inspect.adapters.kubernetes._pods import parse_pod
from openrl_inspect.adapters.kubernetes._workloads import parse_job, parse_workload
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.tracker.placements import PlacementTracker
from support import kube_owned as owned

pytestmark = pytest.mark.anyio


@dataclass
class Calls:
    admitted: list[tuple[str, str, str, list[str], str]] = field(default_factory=list)
    released: list[tuple[str, str, float | None]] = field(default_factory=list)

    def placement_admitted(
        self, mid: str, pid: str, workload: str, namespace: str, pods: Any, node: str,
        gpu_ids: Any, at: float | None = None,
    ) -> None:  # fmt: skip
        self.admitted.append((mid, pid, workload, list(pods), node))

    def placement_released(self, mid: str, pid: str, at: float | None = None) -> None:
        self.released.append((mid, pid, at))


def twin(workload_c: dict[str, Any] | None = None, pod_c: dict[str, Any] | None = None) -> Any:
    source = MemoryKubernetesSource()
    for obj, kind in ((owned.jobset_c(), "JobSet"), (owned.child_job_c(), "Job"),
                      (owned.job_d(), "Job")):  # fmt: skip
        source.put(parse_job(obj, kind))  # type: ignore[arg-type]
    for pod in (pod_c or owned.pod_c(),):
        source.put(parse_pod(pod))  # type: ignore[arg-type]
    for w in (workload_c or owned.workload_c(), owned.workload_d()):
        source.put(parse_workload(w))  # type: ignore[arg-type]
    return source


async def test_admitted_unlabelled_workload_is_placed_and_pending_one_is_not() -> None:
    calls = Calls()
    changes = await PlacementTracker(calls).sync(twin(), 1e9)
    assert [(c.kind, c.model_id) for c in changes] == [("admitted", "lora-c")]
    (mid, _, workload, pods, node) = calls.admitted[0]
    assert (mid, workload, pods, node) == ("lora-c", owned.WORKLOAD_C, [owned.POD_C], "gpu-h100-1")


async def test_admitted_without_pods_on_a_node_is_not_a_placement() -> None:
    unbound = owned.pod_c()
    del unbound["spec"]["nodeName"]
    unbound["status"]["phase"] = "Pending"
    calls = Calls()
    assert await PlacementTracker(calls).sync(twin(pod_c=unbound), 1e9) == []
    assert calls.admitted == []


async def test_preemption_then_readmission_keeps_the_history() -> None:
    calls = Calls()
    tracker = PlacementTracker(calls)
    await tracker.sync(twin(), 1e9)
    first = calls.admitted[0][1]

    preempted = owned.workload_c()
    conditions = preempted["status"]["conditions"]
    for cond in conditions:
        cond.update(status="False", reason="Preempted", lastTransitionTime="2026-01-05T10:00:00Z")
    conditions.append({"type": "Evicted", "status": "True", "reason": "Preempted",
                       "message": "Preempted to accommodate a workload (UID: wl-x) due to "
                       "prioritization in the ClusterQueue",
                       "lastTransitionTime": "2026-01-05T10:00:00Z"})  # fmt: skip
    del preempted["status"]["admission"]
    changes = await tracker.sync(twin(workload_c=preempted), 1e9 + 10)
    assert [c.kind for c in changes] == ["released"]
    assert calls.released == [("lora-c", first, parse_time("2026-01-05T10:00:00Z"))]

    again = copy.deepcopy(owned.workload_c(admitted_at="2026-01-05T10:05:00Z"))
    changes = await tracker.sync(twin(workload_c=again), 1e9 + 20)
    assert [c.kind for c in changes] == ["admitted"]
    second = calls.admitted[-1][1]
    assert second != first and tracker.open.keys() == {second}

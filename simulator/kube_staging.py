"""What a staged scenario adds to the Kubernetes twin beyond what the simulation implies.

A scenario registers a ``KubeStage`` for its model in ``Simulation.kube_stages``;
``kube_twin.cluster_records`` calls it on every mirror and applies the ``Staging`` it
returns: the objects as the API server would serve them (JSON, written the way the
kubelet, the scheduler, Kueue or the DRA driver write them; Events in the
events.k8s.io/v1 shape), read with the adapter's own parsers, each replacing the record
of the same kind and key; and the objects the model does not have (a Workload Kueue
never created, a claim not created yet). A stage reads the simulation (``sim.now``
for events that keep recurring), so what it shows stays in step with the demo's ticks.
A ``ClusterStage`` (``Simulation.cluster_stages``) shows what belongs to no model (other
teams' pods on MIG slices) the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openrl_inspect.adapters.kubernetes import (
    ClaimRecord,
    EventRecord,
    JobRecord,
    NodeRecord,
    PodRecord,
    SliceRecord,
    TaintRuleRecord,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes.memory import parse_object

if TYPE_CHECKING:
    from openrl_inspect.simulator.kube_twin import ClusterRecords
    from openrl_inspect.simulator.sim import SimModel, Simulation

Json = Mapping[str, Any]


@dataclass(frozen=True)
class Staging:
    """``objects`` to show (JSON with ``kind``); ``absent``: ``(kind, namespace, name)``
    of objects to drop (kinds ``Pod``, ``Workload``, ``ResourceClaim``, ``JobSet``,
    ``Job``)."""

    objects: tuple[Json, ...] = ()
    absent: tuple[tuple[str, str, str], ...] = ()


KubeStage = Callable[["Simulation", "SimModel"], Staging]
ClusterStage = Callable[["Simulation"], Staging]


def _lists(records: ClusterRecords) -> dict[type, list[Any]]:
    return {
        PodRecord: records.pods,
        WorkloadRecord: records.workloads,
        ClaimRecord: records.claims,
        SliceRecord: records.slices,
        NodeRecord: records.nodes,
        JobRecord: records.jobs,
        EventRecord: records.events,
        TaintRuleRecord: records.taint_rules,
    }


# kind -> (its records' type, the first part of their ``_key``)
_ABSENT: dict[str, tuple[type, str]] = {
    "Pod": (PodRecord, "PodRecord"),
    "Workload": (WorkloadRecord, "WorkloadRecord"),
    "ResourceClaim": (ClaimRecord, "ClaimRecord"),
    "JobSet": (JobRecord, "JobSet"),
    "Job": (JobRecord, "Job"),
}


def _key(record: Any) -> tuple[str, str, str]:
    if isinstance(record, JobRecord):
        return record.kind, record.namespace, record.name
    if isinstance(record, NodeRecord | SliceRecord | TaintRuleRecord):
        return type(record).__name__, "", record.name
    return type(record).__name__, record.key.namespace, record.key.name


def _drop(items: list[Any], key: tuple[str, str, str]) -> None:
    items[:] = [r for r in items if _key(r) != key]


def apply(sim: Simulation, records: ClusterRecords) -> None:
    """Apply every cluster stage, then every registered stage of a model the simulation
    still has, in order."""
    lists = _lists(records)
    stagings = [stage(sim) for stage in sim.cluster_stages]
    for mid, stage in sim.kube_stages.items():
        model = sim.models.get(mid)
        if model is not None:
            stagings.append(stage(sim, model))
    for staging in stagings:
        for kind, namespace, name in staging.absent:
            cls, first = _ABSENT[kind]
            _drop(lists[cls], (first, namespace, name))
        for obj in staging.objects:
            record = parse_object(obj)
            if record is None:
                raise ValueError(f"staged object not readable: {obj.get('kind')}")
            items = lists[type(record)]
            _drop(items, _key(record))
            items.append(record)

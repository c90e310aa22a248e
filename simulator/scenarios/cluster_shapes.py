"""Shapes of today's GKE clusters the other families do not stage:

- ``mig``: a node of 4 H100 partitioned by static MIG into 16 slices (``partitions``),
  8 of which another team's evaluation pods hold on three of its GPUs: 4 GPUs in the
  capacity (3 held, 1 free), not 16, and 16 slices apart (a cluster stage: no model);
- ``pod_group_quota``: a model whose two worker pods are a Kueue pod group (plain pods,
  ``kueue.x-k8s.io/pod-group-name``), held by Kueue's admission gate while the group's
  Workload (``kueue.x-k8s.io/v1beta2``, named after the group, owned by the pods) is
  short of CPU quota in flavor ``cpu-highmem``, 16 more needed: its top cause is QUOTA,
  not POD_GATED.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any

from openrl_inspect.adapters.kubernetes import MODEL_ID_LABEL, ROLE_LABEL
from openrl_inspect.simulator import partitions
from openrl_inspect.simulator.cluster import Node
from openrl_inspect.simulator.kube_staging import Staging
from openrl_inspect.simulator.kube_twin import LOCAL_QUEUE, NAMESPACE, QUEUE_LABEL, workload_name
from openrl_inspect.simulator.scenarios import events as scenario_events
from openrl_inspect.simulator.scenarios import kueue as scenario_kueue
from openrl_inspect.simulator.scenarios.base import stage_kube, staged
from openrl_inspect.simulator.scenarios.objects import IMAGES, condition, iso
from openrl_inspect.simulator.sim import SimModel, Simulation

Json = dict[str, Any]
MIG_POOL = "h100-mig"
EVAL_NAMESPACE = "eval"
CPU_FLAVOR = "cpu-highmem"
ROLE_HASH = "7c3d9a1e"  # the pod group's pod set: Kueue names it by the role hash
GROUP_PODS = 2
GATE = "kueue.x-k8s.io/admission"
# Slices the evaluation pods hold: pod -> [(GPU index, slice indexes in the layout)].
EVAL_HOLDS: dict[str, list[tuple[int, tuple[int, ...]]]] = {
    "mig-eval-0": [(0, (0, 1, 2)), (0, (3,))],
    "mig-eval-1": [(1, (0, 1, 2))],
    "mig-eval-2": [(2, (0,))],
}


def quota_message() -> str:
    return (
        f"couldn't assign flavors to pod set {ROLE_HASH}: insufficient unused quota for "
        f"cpu in flavor {CPU_FLAVOR}, 16 more needed"
    )


# --- MIG ------------------------------------------------------------------------------


def _eval_pod(node: Node, name: str, claims: list[str], since: float) -> Json:
    """Another team's evaluation pod running on MIG slices (no model)."""
    refs = [c.rsplit("-", 1)[1] for c in claims]
    container = {
        "name": "eval",
        "image": "us-docker.pkg.dev/openrl-prod/images/evaluator:0.9.1",
        "resources": {"claims": [{"name": r} for r in refs]},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": EVAL_NAMESPACE,
            "uid": f"uid-pod-{name}",
            "creationTimestamp": iso(since),
            "labels": {"app": "mig-eval"},
        },
        "spec": {
            "nodeName": node.name,
            "containers": [container],
            "resourceClaims": [
                {"name": r, "resourceClaimTemplateName": f"mig-{r}"} for r in refs
            ],
            "restartPolicy": "Always",
        },
        "status": {
            "phase": "Running",
            "startTime": iso(since + 1),
            "conditions": [condition("PodScheduled", "True", since + 1),
                           condition("Ready", "True", since + 20)],
            "resourceClaimStatuses": [
                {"name": r, "resourceClaimName": c} for r, c in zip(refs, claims, strict=True)
            ],
        },
    }  # fmt: skip


def _mig_holders(sim: Simulation, since: float) -> Staging:
    node = next(n for n in sim.cluster.nodes if n.partitioned)
    objects: list[Json] = []
    for pod, holds in EVAL_HOLDS.items():
        claims = []
        for gpu_index, picks in holds:
            gpu = node.gpus[gpu_index]
            chosen = [(gpu, partitions.LAYOUT[i]) for i in picks]
            claim = partitions.slice_claim(node, EVAL_NAMESPACE, pod, chosen, iso(since))
            objects.append(claim)
            claims.append(claim["metadata"]["name"])
        objects.append(_eval_pod(node, pod, claims, since))
    return Staging(tuple(objects))


def add_mig_node(sim: Simulation, now: float) -> None:
    """The partitioned node (UUIDs from a stream of its own: the simulation's other
    draws stay as they were) and the evaluation pods on its slices."""
    rng = random.Random(f"mig-node-{sim.config.seed}")
    sim.cluster.add_nodes(MIG_POOL, 1, rng, gpus=4, partitioned=True)
    sim.cluster_stages.append(partial(_mig_holders, since=now - 5400))


# --- a pod group gated by Kueue, short of CPU quota -------------------------------------


def _group_pod(model: SimModel, i: int, since: float) -> Json:
    name = f"{workload_name(model.id)}-{i}"
    container = {
        "name": "trainer",
        "image": IMAGES["trainer"],
        "command": ["python", "-m", "openrl.trainer"],
        "resources": {"requests": {"cpu": "64", "memory": "256Gi"}},
    }
    blocked = "Scheduling is blocked due to non-empty scheduling gates"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-pod-{name}",
            "creationTimestamp": iso(since),
            "labels": {
                MODEL_ID_LABEL: model.id,
                ROLE_LABEL: "trainer",
                QUEUE_LABEL: LOCAL_QUEUE,
                "kueue.x-k8s.io/managed": "true",
                "kueue.x-k8s.io/pod-group-name": workload_name(model.id),
            },
            "annotations": {
                "kueue.x-k8s.io/pod-group-total-count": str(GROUP_PODS),
                "kueue.x-k8s.io/role-hash": ROLE_HASH,
            },
            "finalizers": ["kueue.x-k8s.io/managed"],
        },
        "spec": {
            "containers": [container],
            "schedulingGates": [{"name": GATE}],
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
        },
        "status": {
            "phase": "Pending",
            "qosClass": "Burstable",
            "conditions": [condition("PodScheduled", "False", since, "SchedulingGated", blocked)],
        },
    }


def _pod_group(sim: Simulation, model: SimModel, since: float) -> Staging:
    """The group's pods and its Workload (replacing the twin's JobSet and Workload)."""
    pods = [_group_pod(model, i, since) for i in range(GROUP_PODS)]
    template = {"spec": {k: v for k, v in pods[0]["spec"].items() if k != "schedulingGates"}}
    name = workload_name(model.id)
    pending = scenario_kueue.cond("QuotaReserved", "False", since + 1, "Pending", quota_message())
    owners = [
        {"apiVersion": "v1", "kind": "Pod", "name": p["metadata"]["name"],
         "uid": p["metadata"]["uid"]} for p in pods
    ]  # fmt: skip
    workload: Json = {
        "apiVersion": scenario_kueue.API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-wl-{model.id}",
            "generation": 1,
            "creationTimestamp": iso(since),
            "annotations": {"kueue.x-k8s.io/is-group-workload": "true"},
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "ownerReferences": owners,
        },
        "spec": {
            "active": True,
            "queueName": LOCAL_QUEUE,
            "priority": 0,
            "podSets": [{"name": ROLE_HASH, "count": GROUP_PODS, "template": template}],
        },
        "status": {
            "conditions": [pending],
            "resourceRequests": [
                {"name": ROLE_HASH, "resources": {"cpu": "128", "memory": "512Gi"}}
            ],
        },
    }
    count, last = scenario_events.repeats(since + 1, 60.0, sim.now)
    ref = scenario_events.regarding("Workload", name, f"uid-wl-{model.id}")
    event = scenario_events.core_event(
        ref, "Pending", quota_message(), component="kueue-admission", first=since + 1,
        last=last, count=count, warning=False,
    )  # fmt: skip
    return Staging((*pods, workload, event), absent=(("JobSet", NAMESPACE, name),))


def stage(sim: Simulation, sid: str, now: float) -> None:
    add_mig_node(sim, now)
    model = staged(sim, sid, "pod_group_quota", now - 1300)
    stage_kube(sim, model, partial(_pod_group, since=now - 1300))

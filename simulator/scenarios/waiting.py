"""Scenarios on the way to GPUs, as Kueue, the scheduler and the DRA claim controller
report them (the ``waiting`` scenario, short of quota, is staged with the originals):

- ``quota``: waiting 25 minutes, 6 more ``nvidia.com/gpu`` needed in ``h100-flavor``;
- ``not_queued``: its JobSet waits suspended but Kueue never created a Workload;
- ``preempted``: it ran, then a higher-priority workload preempted it 12 minutes ago;
- ``evicted``: admitted, its pods never became ready: evicted on the PodsReady
  timeout 15 minutes ago and requeued;
- ``workload_inactive``: deactivated by Kueue after too many requeues;
- ``inadmissible``: its LocalQueue name is misspelt: Kueue cannot admit it;
- ``admission_check``: quota reserved, the provisioning admission check pending;
- ``unschedulable``: admitted, but each pod's claim asks for 16 GPUs on one node and
  every node has 8: ``FailedScheduling`` ("cannot allocate all claims") for 15 minutes;
- ``claim_unallocated``: admitted, but its pods name a ResourceClaimTemplate that does
  not exist: no claim is created (``FailedResourceClaimCreation``) and the scheduler,
  waiting for the claims, says nothing on the pods (KEP-5501).

Admitted is not placed: until its pods run on a node, OpenRL has it waiting.
"""

from __future__ import annotations

from functools import partial

from openrl_inspect.adapters.kubernetes import GPU_RESOURCE
from openrl_inspect.simulator.kube_staging import KubeStage, Staging
from openrl_inspect.simulator.kube_twin import NAMESPACE, flavor, workload_name
from openrl_inspect.simulator.scenarios import events as scenario_events
from openrl_inspect.simulator.scenarios import kueue as scenario_kueue
from openrl_inspect.simulator.scenarios import objects as scenario_objects
from openrl_inspect.simulator.scenarios.base import hold, requeue, run_until, stage_kube, staged
from openrl_inspect.simulator.sim import SimModel, Simulation

PREEMPTOR = "openrl-eval-llama-70b-7f3k2"  # a higher-priority Workload of the same queue
TYPO_QUEUE = "openrl-trainnig"
MISSING_TEMPLATE = "openrl-gpu-h100x2"
CLAIM_GPUS = 16
KUEUE = "kueue-admission"
KUEUE_WORKLOADS = "kueue-workload-controller"
DEACTIVATED = (
    "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
)


def _wl_ref(model: SimModel) -> scenario_events.Json:
    return scenario_events.regarding("Workload", workload_name(model.id), f"uid-wl-{model.id}")


def _quota(sim: Simulation, model: SimModel, since: float) -> Staging:
    message = (
        "couldn't assign flavors to pod set trainer: insufficient unused quota for "
        f"{GPU_RESOURCE} in flavor {flavor('h100')}, 6 more needed"
    )
    wl = scenario_kueue.workload(
        model.id, since, [scenario_kueue.cond("QuotaReserved", "False", since, "Pending", message)]
    )
    count, last = scenario_events.repeats(since, 60.0, sim.now)
    event = scenario_events.core_event(
        _wl_ref(model),
        "Pending",
        message,
        component=KUEUE,
        first=since,
        last=last,
        count=count,
        warning=False,
    )
    return Staging((wl, event))


def _not_queued(sim: Simulation, model: SimModel) -> Staging:
    return Staging(absent=(("Workload", NAMESPACE, workload_name(model.id)),))


def _preempted(sim: Simulation, model: SimModel, at: float) -> Staging:
    message = scenario_kueue.preemption_message(PREEMPTOR)
    conditions = [
        scenario_kueue.cond("QuotaReserved", "False", at + 2, "Pending", message),
        scenario_kueue.cond("Evicted", "True", at, "Preempted", message),
        scenario_kueue.cond("Preempted", "True", at, "InClusterQueue", message),
        scenario_kueue.cond("Admitted", "False", at + 2, *scenario_kueue.NO_RESERVATION),
        scenario_kueue.cond("Requeued", "True", at + 2, "Preempted", message),
        scenario_kueue.cond(
            "PodsReady", "False", at, "PodsReady", "Not all pods are ready or succeeded"
        ),
    ]
    ref = _wl_ref(model)
    return Staging(
        (
            scenario_kueue.workload(model.id, model.created_at, conditions),
            scenario_events.core_event(
                ref, "Preempted", message, component=KUEUE, first=at, warning=False
            ),
            scenario_events.core_event(
                ref,
                "EvictedDueToPreempted",
                message,
                component=KUEUE_WORKLOADS,
                first=at + 1,
                warning=False,
            ),
        )
    )


def _evicted(sim: Simulation, model: SimModel, at: float) -> Staging:
    message = f"Exceeded the PodsReady timeout {NAMESPACE}/{workload_name(model.id)}"
    conditions = [
        scenario_kueue.cond("QuotaReserved", "False", at, "Pending", message),
        scenario_kueue.cond("Evicted", "True", at, "PodsReadyTimeout", message),
        scenario_kueue.cond("Admitted", "False", at, *scenario_kueue.NO_RESERVATION),
        scenario_kueue.cond(
            "Requeued", "True", at + 60, "BackoffFinished", "The workload backoff was finished"
        ),
        scenario_kueue.cond(
            "PodsReady", "False", at, "PodsReady", "Not all pods are ready or succeeded"
        ),
    ]
    wl = scenario_kueue.workload(
        model.id, model.created_at, conditions, status=scenario_kueue.requeue_state(1, at + 60)
    )
    event = scenario_events.core_event(
        _wl_ref(model),
        "EvictedDueToPodsReadyTimeout",
        message,
        component=KUEUE_WORKLOADS,
        first=at,
        warning=False,
    )
    return Staging((wl, event))


def _inactive(sim: Simulation, model: SimModel, at: float) -> Staging:
    retries = "exceeding the maximum number of re-queuing retries"
    conditions = [
        scenario_kueue.cond("QuotaReserved", "False", at, "Pending", DEACTIVATED),
        scenario_kueue.cond(
            "Evicted", "True", at, "DeactivatedDueToRequeuingLimitExceeded", DEACTIVATED
        ),
        scenario_kueue.cond("Admitted", "False", at, *scenario_kueue.NO_RESERVATION),
        scenario_kueue.cond("Requeued", "False", at, "RequeuingLimitExceeded", retries),
    ]
    status = scenario_kueue.requeue_state(5, at)
    return Staging(
        (
            scenario_kueue.workload(
                model.id, model.created_at, conditions, active=False, status=status
            ),
        )
    )


def _inadmissible(sim: Simulation, model: SimModel) -> Staging:
    since = model.created_at + 1
    message = f"LocalQueue {TYPO_QUEUE} doesn't exist"
    conditions = [scenario_kueue.cond("QuotaReserved", "False", since, "Inadmissible", message)]
    wl = scenario_kueue.workload(model.id, model.created_at, conditions, queue=TYPO_QUEUE)
    count, last = scenario_events.repeats(since, 300.0, sim.now)
    event = scenario_events.core_event(
        _wl_ref(model),
        "Pending",
        message,
        component=KUEUE,
        first=since,
        last=last,
        count=count,
        warning=False,
    )
    return Staging((wl, event))


def _admission_check(sim: Simulation, model: SimModel) -> Staging:
    since = model.created_at + 20
    waiting = (
        "Waiting for resources. Currently there are not enough resources available to "
        "fulfill the request."
    )
    conditions = [
        scenario_kueue.cond(
            "QuotaReserved",
            "True",
            since,
            "QuotaReserved",
            "Quota reserved in ClusterQueue openrl-cq",
        ),
        scenario_kueue.cond(
            "Admitted", "False", since, "UnsatisfiedChecks", "The workload has not all checks ready"
        ),
    ]
    check = {
        "name": "openrl-dws",
        "state": "Pending",
        "message": waiting,
        "lastTransitionTime": scenario_objects.iso(since),
    }
    status = {"admission": scenario_kueue.admission("h100", 2), "admissionChecks": [check]}
    return Staging(
        (scenario_kueue.workload(model.id, model.created_at, conditions, status=status),)
    )


def _admitted(model: SimModel, at: float) -> list[scenario_objects.Json]:
    """Its Workload admitted at ``at``, and so its JobSet running and its Jobs created
    (their pods are the scenario's)."""
    conditions = [
        scenario_kueue.cond(
            "QuotaReserved", "True", at, "QuotaReserved", "Quota reserved in ClusterQueue openrl-cq"
        ),
        scenario_kueue.cond("Admitted", "True", at, "Admitted", "The workload is admitted"),
        scenario_kueue.cond(
            "PodsReady", "False", at, "PodsReady", "Not all pods are ready or succeeded"
        ),
    ]
    status = {"admission": scenario_kueue.admission("h100", CLAIM_GPUS)}
    return [
        scenario_kueue.workload(model.id, model.created_at, conditions, status=status),
        scenario_kueue.jobset(model.id, model.created_at, suspended=False),
        *(scenario_kueue.child_job(model.id, role, at + 0.5) for role in scenario_kueue.ROLES),
    ]


def _unschedulable(sim: Simulation, model: SimModel, at: float) -> Staging:
    nodes = len(sim.cluster.nodes)
    message = (
        f"0/{nodes} nodes are available: {nodes} cannot allocate all claims. preemption: "
        f"0/{nodes} nodes are available: {nodes} Preemption is not helpful for scheduling."
    )
    # Unschedulable pods are retried on cluster events, and every five minutes at least.
    count, last = scenario_events.repeats(at + 2, 300.0, sim.now)
    objects = _admitted(model, at)
    for role in scenario_kueue.ROLES:
        name = scenario_objects.pod_name(model.id, role)
        failed = scenario_objects.condition(
            "PodScheduled", "False", at + 2, "Unschedulable", message
        )
        pod = scenario_objects.worker_pod(
            model.id, role, created=at + 1, node=None, phase="Pending", conditions=[failed]
        )
        ref = scenario_events.regarding("Pod", name, f"uid-pod-{name}")
        objects += [
            pod,
            scenario_objects.pending_claim(name, at + 1, CLAIM_GPUS),
            scenario_events.scheduler_event(ref, message, first=at + 2, last=last, count=count),
        ]
    return Staging(tuple(objects))


def _claim_unallocated(sim: Simulation, model: SimModel, at: float) -> Staging:
    count, last = scenario_events.repeats(at + 1, 300.0, sim.now)
    objects = _admitted(model, at)
    for role in scenario_kueue.ROLES:
        name = scenario_objects.pod_name(model.id, role)
        pod = scenario_objects.worker_pod(
            model.id,
            role,
            created=at + 1,
            node=None,
            phase="Pending",
            conditions=[],
            claim=False,
            template=MISSING_TEMPLATE,
        )
        note = (
            f'PodResourceClaim gpus: resource claim template "{MISSING_TEMPLATE}": '
            f'resourceclaimtemplate.resource.k8s.io "{MISSING_TEMPLATE}" not found'
        )
        ref = scenario_events.regarding("Pod", name, f"uid-pod-{name}")
        event = scenario_events.core_event(
            ref,
            "FailedResourceClaimCreation",
            note,
            component="resource_claim",
            first=at + 1,
            last=last,
            count=count,
        )
        objects += [pod, event]
    return Staging(tuple(objects))


def _stages(now: float) -> list[tuple[str, float, KubeStage]]:
    """Each waiting scenario: its name, when its model was created, its stage."""
    return [
        ("quota", now - 1500, partial(_quota, since=now - 1500)),
        ("not_queued", now - 1200, _not_queued),
        ("preempted", now - 3000, partial(_preempted, at=now - 700)),
        ("evicted", now - 2000, partial(_evicted, at=now - 900)),
        ("workload_inactive", now - 4000, partial(_inactive, at=now - 1200)),
        ("inadmissible", now - 1800, _inadmissible),
        ("admission_check", now - 1000, _admission_check),
        ("unschedulable", now - 1000, partial(_unschedulable, at=now - 900)),
        ("claim_unallocated", now - 800, partial(_claim_unallocated, at=now - 700)),
    ]


def stage(sim: Simulation, sid: str, now: float) -> None:
    for name, created, stage_fn in _stages(now):
        model = staged(sim, sid, name, created)
        stage_kube(sim, model, stage_fn)
        if name == "preempted":
            run_until(sim, model, now - 705, 20)
            requeue(sim, model, now - 700)
        elif name == "evicted":
            hold(sim, model, now - 1500, silent=scenario_kueue.ROLES)
            requeue(sim, model, now - 900)

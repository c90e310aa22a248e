"""The simulated cluster as Kubernetes sees it, kept in the in-memory Kubernetes twin.

``mirror_kubernetes(sim, twin)`` makes a ``MemoryKubernetesSource`` (built by the demo's
wiring, ``openrl_inspect.cli.demo``) hold exactly what the simulation implies, derived only
from the simulation's state:

- a Node per simulated node (8 ``nvidia.com/gpu``, Ready, the usual GPU taint) and the
  ResourceSlice NVIDIA's DRA driver would publish for it, with the simulated GPU UUIDs
  (a partitioned node's: its GPUs' MIG slices, ``partitions``);
- a JobSet per model (labelled with the model id; suspended while it waits), a child Job
  per role once admitted, and a Kueue Workload owned by the JobSet with Kueue's
  ``job-uid`` label and no model label (Kueue's default): pending on quota while it
  waits (``QuotaReserved=False`` with Kueue's insufficient-quota message), admitted with
  its pod set assignments once placed;
- a pod per worker of a placed or active model, owned by its role's Job, with the Job
  and JobSet controllers' labels and the model id and role from the pod template, and
  per pod a ResourceClaim allocated to the worker's GPUs and reserved for the pod.

Ended and failed models have neither Workload nor pods. A staged scenario's model shows
what its ``kube_staging`` stage adds (its pods' failures, its Workload's evictions, the
Events about them). The twin answers through the same queries as the real watch cache
(``KubernetesSource``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from openrl_inspect.adapters.kubernetes import (
    GPU_RESOURCE,
    JOBSET_UID_LABEL,
    KUEUE_JOB_UID_LABEL,
    MODEL_ID_LABEL,
    NVIDIA_GPU_DRIVER,
    ROLE_LABEL,
    Admission,
    AllocatedDevice,
    ClaimConsumer,
    ClaimRecord,
    ClaimRequest,
    Condition,
    ContainerState,
    EventRecord,
    GpuDevice,
    JobRecord,
    NodeRecord,
    OwnerRef,
    PodRecord,
    PodResourceClaim,
    PodSet,
    PodSetAssignment,
    SliceRecord,
    Taint,
    TaintRuleRecord,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource, parse_object
from openrl_inspect.core.domain import HOLDING_STATES, ModelState
from openrl_inspect.simulator import kube_staging, partitions
from openrl_inspect.simulator.cluster import Gpu, Node
from openrl_inspect.simulator.sim import SimModel, Simulation

NAMESPACE = "openrl"
LOCAL_QUEUE = "openrl-training"
CLUSTER_QUEUE = "openrl-cq"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
MEMORY = {"h100": 80 * 2**30, "h200": 141 * 2**30}


def flavor(pool: str) -> str:
    return f"{pool}-flavor"


def quota_message(role: str, pool: str, more: int) -> str:
    """Kueue's message for a pod set that does not fit the flavor's unused quota."""
    return (
        f"couldn't assign flavors to pod set {role}: insufficient unused quota for "
        f"{GPU_RESOURCE} in flavor {flavor(pool)}, {more} more needed"
    )


def workload_name(model_id: str) -> str:
    return f"openrl-{model_id}"  # as the simulator records it in placements


@dataclass(frozen=True)
class ClusterRecords:
    nodes: list[NodeRecord]
    slices: list[SliceRecord]
    workloads: list[WorkloadRecord]
    pods: list[PodRecord]
    claims: list[ClaimRecord]
    jobs: list[JobRecord]
    events: list[EventRecord] = field(default_factory=list)
    taint_rules: list[TaintRuleRecord] = field(default_factory=list)


def jobset_uid(model_id: str) -> str:
    return f"uid-jobset-{model_id}"


def job_uid(model_id: str, role: str) -> str:
    return f"uid-job-{model_id}-{role}"


def _jobset_labels(model_id: str) -> dict[str, str]:
    return {JOBSET_NAME_LABEL: workload_name(model_id), JOBSET_UID_LABEL: jobset_uid(model_id)}


def _jobs(model: SimModel) -> list[JobRecord]:
    """The model's JobSet and, once admitted, a child Job per role."""
    jobset = JobRecord(
        kind="JobSet",
        namespace=NAMESPACE,
        name=workload_name(model.id),
        uid=jobset_uid(model.id),
        labels={MODEL_ID_LABEL: model.id, QUEUE_LABEL: LOCAL_QUEUE},
        model_id=model.id,
        owner_uids=(),
        suspended=model.state == ModelState.WAITING,
        created=model.created_at,
    )
    if model.state == ModelState.WAITING:
        return [jobset]
    children = [
        JobRecord(
            kind="Job",
            namespace=NAMESPACE,
            name=f"{workload_name(model.id)}-{role}-0",
            uid=job_uid(model.id, role),
            labels=_jobset_labels(model.id),
            model_id=None,
            owner_uids=(jobset_uid(model.id),),
            suspended=False,
            created=model.placed_at,
        )
        for role, _ in _roles(model)
    ]
    return [jobset, *children]


def node_record(node: Node) -> NodeRecord:
    product = node.gpus[0].product if node.gpus else ""
    ready = Condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
    return NodeRecord(
        name=node.name,
        labels={
            "kubernetes.io/hostname": node.name,
            "cloud.google.com/gke-nodepool": f"{node.pool}-pool",
            "nvidia.com/gpu.product": product.replace(" ", "-"),
            "nvidia.com/gpu.count": str(len(node.gpus)),
        },
        gpu_allocatable=len(node.gpus),
        gpu_capacity=len(node.gpus),
        ready=True,
        unschedulable=False,
        taints=(Taint(GPU_RESOURCE, "NoSchedule", "present"),),
        conditions=(ready,),
        created=None,
    )


def _device(node: Node, gpu: Gpu) -> GpuDevice:
    return GpuDevice(
        driver=NVIDIA_GPU_DRIVER,
        pool=node.name,
        pool_generation=1,
        node_name=node.name,
        device=f"gpu-{gpu.index}",
        device_type="gpu",
        uuid=gpu.uuid,
        index=gpu.index,
        minor=gpu.index,
        product_name=gpu.product,
        architecture="Hopper",
        driver_version="570.133.20",
        pci_bus_id=f"0000:{0x18 + 0x10 * gpu.index:02x}:00.0",
        memory_bytes=MEMORY.get(node.pool),
        slice_name=f"{node.name}-{NVIDIA_GPU_DRIVER}",
    )


def slice_record(node: Node) -> SliceRecord:
    if node.partitioned:
        parsed = parse_object(partitions.resource_slice(node))
        if not isinstance(parsed, SliceRecord):
            raise ValueError(f"the MIG slices of {node.name} are not readable")
        return parsed
    return SliceRecord(
        name=f"{node.name}-{NVIDIA_GPU_DRIVER}",
        driver=NVIDIA_GPU_DRIVER,
        pool=node.name,
        pool_generation=1,
        node_name=node.name,
        devices=tuple(_device(node, g) for g in node.gpus),
    )


def _cond(type_: str, status: str, reason: str, message: str, at: float | None) -> Condition:
    return Condition(type_, status, reason, message, at)


def _roles(model: SimModel) -> list[tuple[str, int]]:
    if model.workers:
        return [(role, len(gpus)) for _, role, _, gpus in model.workers]
    return [("trainer", 1), ("sampler", 1)]


def _waiting_workload(sim: Simulation, model: SimModel) -> WorkloadRecord:
    # The team's ClusterQueue quota is what its admitted models hold: a waiting model
    # is short by its whole request in the flavor with the most unused hardware.
    whole = [n for n in sim.cluster.nodes if not n.partitioned]
    pools = sorted({n.pool for n in whole})
    free = {p: sum(len(n.free()) for n in whole if n.pool == p) for p in pools}
    pool = max(pools, key=lambda p: (free[p], p)) if pools else "gpu"
    need = sim.config.gpus_per_model
    role = _roles(model)[0][0]
    quota = _cond(
        "QuotaReserved", "False", "Pending", quota_message(role, pool, need), model.created_at
    )
    return _workload(model, (quota,), None)


def _admitted_workload(sim: Simulation, model: SimModel) -> WorkloadRecord:
    placed = model.placed_at
    node = next((n for n in sim.cluster.nodes if n.name == sim.node_of(model)), None)
    pool = node.pool if node is not None else "gpu"
    conditions = [
        _cond("QuotaReserved", "True", "QuotaReserved",
              f"Quota reserved in ClusterQueue {CLUSTER_QUEUE}", placed),
        _cond("Admitted", "True", "Admitted", "The workload is admitted", placed),
    ]  # fmt: skip
    if model.state == ModelState.ACTIVE:
        conditions.append(
            _cond("PodsReady", "True", "PodsReady", "All pods reached readiness and the "
                  "workload is running", model.active_at)
        )  # fmt: skip
    else:
        conditions.append(
            _cond("PodsReady", "False", "PodsReady", "Not all pods are ready or succeeded",
                  placed)
        )  # fmt: skip
    assignments = tuple(
        PodSetAssignment(
            name=role,
            flavors={GPU_RESOURCE: flavor(pool)},
            resource_usage={GPU_RESOURCE: str(count)},
            count=1,
        )
        for role, count in _roles(model)
    )
    return _workload(model, tuple(conditions), Admission(CLUSTER_QUEUE, assignments))


def _workload(
    model: SimModel, conditions: tuple[Condition, ...], admission: Admission | None
) -> WorkloadRecord:
    return WorkloadRecord(
        namespace=NAMESPACE,
        name=workload_name(model.id),
        uid=f"uid-wl-{model.id}",
        labels={KUEUE_JOB_UID_LABEL: jobset_uid(model.id)},
        model_id=None,  # Kueue copies no job labels unless configured to
        queue_name=LOCAL_QUEUE,
        priority=100,
        priority_class="openrl-standard",
        priority_class_kind="WorkloadPriorityClass",
        active=True,
        pod_sets=tuple(PodSet(role, 1) for role, _ in _roles(model)),
        conditions=conditions,
        admission=admission,
        requeue_count=None,
        created=model.created_at,
        job_uids=(jobset_uid(model.id),),
        owners=(OwnerRef("JobSet", workload_name(model.id), jobset_uid(model.id), True),),
    )


def _pod_and_claim(
    sim: Simulation,
    model: SimModel,
    worker: tuple[str, str, str, list[str]],
    gpus: dict[str, tuple[Node, Gpu]],
) -> tuple[PodRecord, ClaimRecord | None]:
    _, role, name, uuids = worker
    node = sim.node_of(model) or None
    active = model.state == ModelState.ACTIVE
    uid = f"uid-pod-{name}"
    claim_name = f"{name}-gpus"
    started = model.active_at if active else None
    pod = PodRecord(
        namespace=NAMESPACE,
        name=name,
        uid=uid,
        phase="Running" if active else "Pending",
        node_name=node,
        labels={
            MODEL_ID_LABEL: model.id,
            ROLE_LABEL: role,
            CONTROLLER_UID_LABEL: job_uid(model.id, role),
            **_jobset_labels(model.id),
        },
        model_id=model.id,
        worker_role=role,
        conditions=(
            _cond("PodScheduled", "True", "", "", model.placed_at),
            _cond("Ready", "True" if active else "False", "", "", started or model.placed_at),
        ),
        containers=(
            ContainerState(role, "running", ready=True, started_at=started)
            if active
            else ContainerState(role, "waiting", reason="ContainerCreating"),
        ),
        scheduling_failure=None,
        resource_claims=(PodResourceClaim("gpus", claim_name, "openrl-gpu"),) if uuids else (),
        gpu_request=0,
        owner_kind="Job",
        owner_name=f"{workload_name(model.id)}-{role}-0",
        created=model.placed_at,
        started=model.placed_at,
        deleting=False,
        job_uids=(job_uid(model.id, role), jobset_uid(model.id)),
    )
    return pod, _claim(model, name, uid, claim_name, uuids, gpus) if uuids else None


def _claim(
    model: SimModel,
    pod_name: str,
    pod_uid: str,
    name: str,
    uuids: list[str],
    gpus: dict[str, tuple[Node, Gpu]],
) -> ClaimRecord:
    """The worker's ResourceClaim: allocated to its GPUs and reserved for its pod."""
    devices = tuple(
        AllocatedDevice("gpus", NVIDIA_GPU_DRIVER, gpus[u][0].name, f"gpu-{gpus[u][1].index}")
        for u in uuids
        if u in gpus
    )
    return ClaimRecord(
        namespace=NAMESPACE,
        name=name,
        uid=f"uid-claim-{pod_name}",
        requests=(ClaimRequest("gpus", NVIDIA_GPU_DRIVER, len(uuids), "ExactCount"),),
        allocated=True,
        devices=devices,
        reserved_for=(ClaimConsumer("pods", pod_name, pod_uid),),
        created=model.placed_at,
        deleting=False,
    )


def cluster_records(sim: Simulation) -> ClusterRecords:
    """Everything Kubernetes would hold for the simulation's current state."""
    gpus = {g.uuid: (n, g) for n in sim.cluster.nodes for g in n.gpus}
    workloads: list[WorkloadRecord] = []
    pods: list[PodRecord] = []
    claims: list[ClaimRecord] = []
    jobs: list[JobRecord] = []
    for model in sim.models.values():
        if model.state == ModelState.WAITING:
            workloads.append(_waiting_workload(sim, model))
            jobs.extend(_jobs(model))
        elif model.state in HOLDING_STATES:
            workloads.append(_admitted_workload(sim, model))
            jobs.extend(_jobs(model))
            for worker in model.workers:
                pod, claim = _pod_and_claim(sim, model, worker, gpus)
                pods.append(pod)
                if claim is not None:
                    claims.append(claim)
    records = ClusterRecords(
        nodes=[node_record(n) for n in sim.cluster.nodes],
        slices=[slice_record(n) for n in sim.cluster.nodes],
        workloads=workloads,
        pods=pods,
        claims=claims,
        jobs=jobs,
    )
    kube_staging.apply(sim, records)
    return records


def mirror_kubernetes(sim: Simulation, twin: MemoryKubernetesSource) -> None:
    """Make ``twin`` hold what the simulation holds now."""
    records = cluster_records(sim)
    twin.view.nodes.replace(records.nodes)
    twin.view.slices.replace(records.slices)
    twin.view.workloads.replace(records.workloads)
    twin.view.pods.replace(records.pods)
    twin.view.claims.replace(records.claims)
    twin.view.jobs.replace(j for j in records.jobs if j.kind == "Job")
    twin.view.jobsets.replace(j for j in records.jobs if j.kind == "JobSet")
    twin.view.taint_rules.replace(records.taint_rules)
    # Events are upserted, not replaced: the store ages them out as the API server does.
    twin.put(*records.events)

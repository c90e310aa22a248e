"""Plain frozen records the Kubernetes adapter hands out (never SDK objects).

Times are POSIX seconds (``float``); quantities the inspector counts (GPUs, bytes) are
``int``. Parsers from the API server's JSON live in ``_pods`` and ``_workloads``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from openrl_inspect.core.errors import ApiVersionUnsupported

MODEL_ID_LABEL = "openrl.ai/model-id"
ROLE_LABEL = "openrl.ai/role"
# What Kueue and the job controllers write on the objects they create: how a Workload,
# a job and its pods find each other when no model label was copied to the Workload.
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
JOB_CONTROLLER_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
JOBSET_UID_LABEL = "jobset.sigs.k8s.io/jobset-uid"
GPU_RESOURCE = "nvidia.com/gpu"
NVIDIA_GPU_DRIVER = "gpu.nvidia.com"

# The API server's name grammars (RFC 1123): namespace and container names are labels,
# pod names subdomains (their 253-character limit is checked separately).
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LabelKeys:
    """The label keys OpenRL puts on its jobs and pods (settings, not constants): the
    model id and the worker role. Kueue copies them to Workloads only when configured
    to (``labelKeysToCopy``), so a Workload is linked by ownership as well."""

    model: str = MODEL_ID_LABEL
    role: str = ROLE_LABEL

    def log_label(self, key: str) -> str:
        """The entry label GKE's logging agent writes for a pod label: ``k8s-pod/`` and
        the key with dots as underscores (``openrl.ai/model-id`` ->
        ``k8s-pod/openrl_ai/model-id``)."""
        return "k8s-pod/" + key.replace(".", "_")


DEFAULT_LABELS = LabelKeys()


class ObjectKey(NamedTuple):
    """``(namespace, name)``; namespace is ``""`` for cluster-scoped objects."""

    namespace: str
    name: str


class DeviceKey(NamedTuple):
    """A DRA device's identity: what a ResourceClaim allocation names."""

    driver: str
    pool: str
    device: str


@dataclass(frozen=True, slots=True)
class Listing(Generic[T]):
    """A bounded answer: ``truncated`` when more matched than the limit (or than a direct
    read could fetch); ``degraded`` when served while the kind's watch cache was not in
    sync (a bounded direct read, or a cache that has lost its watch)."""

    items: tuple[T, ...]
    truncated: bool = False
    degraded: bool = False


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition: float | None = None


@dataclass(frozen=True, slots=True)
class Termination:
    """How a container run ended (``state.terminated`` or ``lastState.terminated``).

    ``reason`` is the kubelet's word: ``OOMKilled``, ``Error``, ``Completed``,
    ``ContainerStatusUnknown``, ...; ``exit_code`` 137 with ``signal`` 9 is a SIGKILL.
    """

    reason: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    message: str | None = None
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def oom_killed(self) -> bool:
        return self.reason == "OOMKilled"


@dataclass(frozen=True, slots=True)
class ContainerState:
    """One container's state; ``state`` is waiting, running, terminated or unknown.

    ``reason``/``message``/``exit_code``/``signal`` and the times describe the current
    state (a waiting reason such as ``CrashLoopBackOff``, or the current termination);
    ``last_termination`` is the previous run's end (``lastState.terminated``), which is
    where an OOM kill shows once the kubelet restarts the container.
    """

    name: str
    state: str
    init: bool = False
    ready: bool = False
    restart_count: int = 0
    reason: str | None = None
    message: str | None = None
    exit_code: int | None = None
    started_at: float | None = None
    finished_at: float | None = None
    signal: int | None = None
    image: str | None = None
    last_termination: Termination | None = None
    # The spec's memory limit as written (``64Gi``), the ceiling an OOM kill hit.
    memory_limit: str | None = None


@dataclass(frozen=True, slots=True)
class SchedulingFailure:
    """The pod's ``PodScheduled=False`` condition: why the scheduler has not placed it."""

    reason: str | None
    message: str | None
    since: float | None


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """A pod's claim reference: ``claim_name`` is the ResourceClaim, once known."""

    name: str
    claim_name: str | None
    template_name: str | None = None


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """An ``ownerReferences`` entry: ``controller`` marks the managing owner."""

    kind: str
    name: str
    uid: str
    controller: bool = False


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A job that Kueue queues (a batch/v1 Job or a JobSet): the link between a model's
    Workload (which owns nothing and names its job only by owner reference and
    ``kueue.x-k8s.io/job-uid``) and its pods (owned by the Job; a JobSet's Jobs and pods
    also carry ``jobset.sigs.k8s.io/jobset-uid``)."""

    kind: str
    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    model_id: str | None
    owner_uids: tuple[str, ...]  # a JobSet's child Job names the JobSet here
    suspended: bool
    created: float | None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class PodRecord:
    namespace: str
    name: str
    uid: str
    phase: str | None
    node_name: str | None
    labels: Mapping[str, str]
    model_id: str | None
    worker_role: str | None
    conditions: tuple[Condition, ...]
    containers: tuple[ContainerState, ...]
    scheduling_failure: SchedulingFailure | None
    resource_claims: tuple[PodResourceClaim, ...]
    gpu_request: int
    owner_kind: str | None
    owner_name: str | None
    created: float | None
    started: float | None
    deleting: bool
    # The jobs this pod belongs to, by UID: its controlling Job and, for JobSets, the
    # JobSet (labels the controllers write); how a pod is found from its Workload.
    job_uids: tuple[str, ...] = ()

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)

    @property
    def claim_names(self) -> tuple[str, ...]:
        """Names of the ResourceClaims this pod uses (generated ones once created)."""
        return tuple(c.claim_name for c in self.resource_claims if c.claim_name)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str
    value: str | None = None


@dataclass(frozen=True, slots=True)
class NodeRecord:
    name: str
    labels: Mapping[str, str]
    gpu_allocatable: int | None
    gpu_capacity: int | None
    ready: bool | None
    unschedulable: bool
    taints: tuple[Taint, ...]
    conditions: tuple[Condition, ...]
    created: float | None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey("", self.name)


@dataclass(frozen=True, slots=True)
class PodSet:
    name: str
    count: int | None


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    name: str
    flavors: Mapping[str, str]
    resource_usage: Mapping[str, str]
    count: int | None


@dataclass(frozen=True, slots=True)
class Admission:
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]


@dataclass(frozen=True, slots=True)
class WorkloadRecord:
    """A Kueue Workload: its queue, the demand, the quota decision and its history."""

    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    model_id: str | None
    queue_name: str | None
    priority: int | None
    priority_class: str | None
    active: bool
    pod_sets: tuple[PodSet, ...]
    conditions: tuple[Condition, ...]
    admission: Admission | None
    requeue_count: int | None
    created: float | None
    # The job it queues: owner references and Kueue's job-uid label, by UID.
    job_uids: tuple[str, ...] = ()
    owners: tuple[OwnerRef, ...] = ()
    # WorkloadPriorityClass (Kueue's) or PriorityClass (the pods'); None if unnamed.
    priority_class_kind: str | None = None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)

    def condition(self, type_: str) -> Condition | None:
        """The condition of that type (QuotaReserved, Admitted, PodsReady, Evicted, ...)."""
        for cond in self.conditions:
            if cond.type == type_:
                return cond
        return None

    def is_true(self, type_: str) -> bool:
        cond = self.condition(type_)
        return cond is not None and cond.status == "True"


@dataclass(frozen=True, slots=True)
class KindStatus:
    """One kind's cache state, for readiness and for marking answers degraded.

    ``list_age_s`` is the time since the last complete LIST; ``error_age_s`` how long the
    current error has lasted (``None`` when healthy); ``evicted`` counts the records a
    bounded cache (events) dropped to stay in its bounds. A kind is degraded when it has not
    synced yet or its watch is failing (answers then come from a possibly stale cache or
    a bounded direct read).

    ``version`` is the API version it is read at, as discovery chose it. A kind the
    cluster serves only at versions the adapter does not read has ``unsupported_versions``
    (those it saw; ``understood`` the ones it reads): it holds nothing, and a read that
    needs it is refused with ``ApiVersionUnsupported`` rather than answered empty.
    """

    kind: str
    served: bool
    synced: bool
    objects: int
    list_age_s: float | None
    error_age_s: float | None
    last_error: str | None
    relists: int
    watch_restarts: int
    evicted: int = 0
    group: str = ""
    version: str | None = None
    understood: tuple[str, ...] = ()
    unsupported_versions: tuple[str, ...] = ()

    @property
    def unsupported(self) -> bool:
        return bool(self.unsupported_versions)

    @property
    def degraded(self) -> bool:
        if self.unsupported:  # nothing to be stale about: its reads are refused
            return False
        return self.served and (not self.synced or self.last_error is not None)

    def refusal(self) -> ApiVersionUnsupported:
        """The error a read needing this (unsupported) kind raises."""
        return ApiVersionUnsupported(
            "kubernetes", self.group, self.kind, self.unsupported_versions, self.understood
        )


@dataclass(frozen=True, slots=True)
class SourceStatus:
    backend: str
    kinds: tuple[KindStatus, ...]

    @property
    def ready(self) -> bool:
        """Every kind has synced (or is not served by this cluster)."""
        return all(k.synced or not k.served for k in self.kinds)

    @property
    def degraded(self) -> bool:
        return any(k.degraded for k in self.kinds)

    @property
    def unsupported(self) -> tuple[KindStatus, ...]:
        """The kinds served only at API versions the adapter does not read."""
        return tuple(k for k in self.kinds if k.unsupported)

    def kind(self, name: str) -> KindStatus | None:
        return next((k for k in self.kinds if k.kind == name), None)

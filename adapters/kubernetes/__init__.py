"""Kubernetes, read-only: pods, nodes, Kueue Workloads and the jobs they queue, DRA
ResourceSlices, Claims and DeviceTaintRules, and the Events regarding them.

The public surface of the adapter. ``KubernetesSource`` is the abstract source the
loaders use; ``open_kubernetes(settings)`` gives the real one (a watch cache over the
official ``kubernetes.aio`` client) and ``memory.MemoryKubernetesSource`` the in-memory
twin. ``PodLogSource`` reads pods' logs through the same client, for when Cloud
Logging is not configured.

Reads return plain frozen records. Lists are ``Listing`` (items, ``truncated``,
``degraded``), filtered before they are capped and ordered by key, with an ``after``
cursor. Batch methods take a list of keys and return one result per key, in key order:
``None`` (or an empty ``Listing``) for a miss, as DataLoaders want. A one-to-one batch
answered while its kind was not synced is visible only through ``status()``.

Private modules, one concept each::

    _records           records of pods, nodes, workloads and jobs; keys, Listing, statuses
    _json              reading the API server's JSON: tolerant accessors, shared fields
    _pods              JSON -> pod and node records
    _workloads         JSON -> Kueue Workload, Job and JobSet records
    _dra               GPU devices, their taints, DeviceTaintRules, ResourceClaims: the
                       records and the parsers (resource.k8s.io v1, v1beta2, v1beta1)
    _events            Events and the objects they regard: the record, the parser
                       (events.k8s.io/v1, deprecated fields folded), the exported log entry
    _event_store       the Events store: bounded in count and age, by regarded object
    _resources         the watched resources, the API versions understood, every verb
                       used (RBAC)
    _discovery         which version each resource is read at, from API discovery
    _store             keyed stores with indexes; newest-generation GPU index with rules
    _capacity          GPU capacity counting: held, free, unhealthy, tainted
    _gpu_views         per-node GPUs with holders and capacity, kept up to date per event
    _links             the stores that link kinds to each other, updated together
    _view              the queries over stores
    _queries           KubernetesSource: the reads shared by the real source and the twin
    _api               the official client: paged LIST, WATCH, errors, request counts
    _informer          list, watch, 410 relist, resync, backoff
    _source            the real source: cache reads, degraded direct reads
    _pod_logs          pods' logs through the API (the Cloud Logging fallback)
    _pod_log_settings  PodLogSettings (OPENRL_INSPECT_POD_LOGS_*), the PodLogReader protocol
    _log_lines         one log line -> severity, message, payload (JSON, level words, klog)
    _settings          KubernetesSettings (OPENRL_INSPECT_KUBERNETES_*)
    _lease             Leases for leader election: the record, LeaseStore, the wire format,
                       and the client over CoordinationV1Api

The SDK is imported when a source opens, and the source's modules when first named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openrl_inspect.adapters.kubernetes._capacity import (
    BLOCKING_EFFECTS,
    GPU_TAINT,
    PRODUCT_LABEL,
    UNHEALTHY_TAINTS,
    CapacityCounts,
    ClusterCapacity,
    NodeCapacity,
    ProductCapacity,
    by_product,
    node_capacity,
    node_condition,
)
from openrl_inspect.adapters.kubernetes._devices import (
    BLOCKING_TAINT_EFFECTS,
    AllocatedDevice,
    ClaimConsumer,
    ClaimRecord,
    ClaimRequest,
    DeviceTaint,
    GpuDevice,
    SliceRecord,
    TaintRuleRecord,
)
from openrl_inspect.adapters.kubernetes._event_store import (
    EventStore,
    Regarding,
    newest_event_first,
)
from openrl_inspect.adapters.kubernetes._events import EventRecord, ObjectRef
from openrl_inspect.adapters.kubernetes._gpu_views import GpuSnapshot, NodeGpus
from openrl_inspect.adapters.kubernetes._pod_log_settings import (
    PodLogReader,
    PodLogSettings,
    load_pod_log_settings,
)
from openrl_inspect.adapters.kubernetes._queries import GpuViewRead, KubernetesSource
from openrl_inspect.adapters.kubernetes._records import (
    DEFAULT_LABELS,
    GPU_RESOURCE,
    JOB_CONTROLLER_UID_LABELS,
    JOBSET_UID_LABEL,
    KUEUE_JOB_UID_LABEL,
    MODEL_ID_LABEL,
    NVIDIA_GPU_DRIVER,
    ROLE_LABEL,
    Admission,
    Condition,
    ContainerState,
    DeviceKey,
    JobRecord,
    KindStatus,
    LabelKeys,
    Listing,
    NodeRecord,
    ObjectKey,
    OwnerRef,
    PodRecord,
    PodResourceClaim,
    PodSet,
    PodSetAssignment,
    SchedulingFailure,
    SourceStatus,
    Taint,
    Termination,
    WorkloadRecord,
)
from openrl_inspect.adapters.kubernetes._resources import (
    LEASE_VERBS,
    LOG_READS,
    READ_VERBS,
    WATCHED_RESOURCES,
    WatchedResource,
)
from openrl_inspect.adapters.kubernetes._settings import KubernetesSettings, load_settings

if TYPE_CHECKING:
    from openrl_inspect.adapters.kubernetes._lease import (
        KubeLeases,
        LeaseConflict,
        LeaseRecord,
        LeaseStore,
        open_leases,
    )
    from openrl_inspect.adapters.kubernetes._pod_logs import PodLogSource
    from openrl_inspect.adapters.kubernetes._source import KubernetesCacheSource, open_kubernetes

__all__ = [
    "BLOCKING_EFFECTS",
    "BLOCKING_TAINT_EFFECTS",
    "DEFAULT_LABELS",
    "GPU_RESOURCE",
    "GPU_TAINT",
    "JOBSET_UID_LABEL",
    "JOB_CONTROLLER_UID_LABELS",
    "KUEUE_JOB_UID_LABEL",
    "LEASE_VERBS",
    "LOG_READS",
    "MODEL_ID_LABEL",
    "NVIDIA_GPU_DRIVER",
    "PRODUCT_LABEL",
    "READ_VERBS",
    "ROLE_LABEL",
    "UNHEALTHY_TAINTS",
    "WATCHED_RESOURCES",
    "Admission",
    "AllocatedDevice",
    "CapacityCounts",
    "ClaimConsumer",
    "ClaimRecord",
    "ClaimRequest",
    "ClusterCapacity",
    "Condition",
    "ContainerState",
    "DeviceKey",
    "DeviceTaint",
    "EventRecord",
    "EventStore",
    "GpuDevice",
    "GpuSnapshot",
    "GpuViewRead",
    "JobRecord",
    "KindStatus",
    "KubeLeases",
    "KubernetesCacheSource",
    "KubernetesSettings",
    "KubernetesSource",
    "LabelKeys",
    "LeaseConflict",
    "LeaseRecord",
    "LeaseStore",
    "Listing",
    "NodeCapacity",
    "NodeGpus",
    "NodeRecord",
    "ObjectKey",
    "ObjectRef",
    "OwnerRef",
    "PodLogReader",
    "PodLogSettings",
    "PodLogSource",
    "PodRecord",
    "PodResourceClaim",
    "PodSet",
    "PodSetAssignment",
    "ProductCapacity",
    "Regarding",
    "SchedulingFailure",
    "SliceRecord",
    "SourceStatus",
    "Taint",
    "TaintRuleRecord",
    "Termination",
    "WatchedResource",
    "WorkloadRecord",
    "by_product",
    "load_pod_log_settings",
    "load_settings",
    "newest_event_first",
    "node_capacity",
    "node_condition",
    "open_kubernetes",
    "open_leases",
]

# The real source, the pod-log reader and the Lease client bring asyncio and the client
# module (not the SDK, which loads when a client opens); the records above are all most
# importers need, so these load on first use (PEP 562).
_ON_FIRST_USE = {
    "KubernetesCacheSource": "_source",
    "open_kubernetes": "_source",
    "KubeLeases": "_lease",
    "LeaseConflict": "_lease",
    "LeaseRecord": "_lease",
    "LeaseStore": "_lease",
    "open_leases": "_lease",
    "PodLogSource": "_pod_logs",
}


# lazy: PEP 562, the names above load their modules on first use.
def __getattr__(name: str) -> Any:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

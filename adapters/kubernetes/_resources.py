"""What the adapter asks of the API server: each watched resource and every verb used.

Kept apart from the clients so that the RBAC tests (``deploy/base/*/rbac.yaml``) and the
records can name the resources without importing the Kubernetes SDK or the clients.
"""

from __future__ import annotations

from dataclasses import dataclass

BACKEND = "kubernetes"
KUEUE_GROUP = "kueue.x-k8s.io"
DRA_GROUP = "resource.k8s.io"
BATCH_GROUP = "batch"
JOBSET_GROUP = "jobset.x-k8s.io"
EVENTS_GROUP = "events.k8s.io"
COORDINATION_GROUP = "coordination.k8s.io"


@dataclass(frozen=True, slots=True)
class WatchedResource:
    """A resource the adapter lists and watches; ``kind`` names it everywhere else."""

    group: str
    resource: str
    namespaced: bool

    @property
    def kind(self) -> str:
        return self.resource


PODS = WatchedResource("", "pods", namespaced=True)
NODES = WatchedResource("", "nodes", namespaced=False)
WORKLOADS = WatchedResource(KUEUE_GROUP, "workloads", namespaced=True)
RESOURCE_SLICES = WatchedResource(DRA_GROUP, "resourceslices", namespaced=False)
RESOURCE_CLAIMS = WatchedResource(DRA_GROUP, "resourceclaims", namespaced=True)
# The jobs Kueue queues: how a Workload without model labels reaches its model and pods.
JOBS = WatchedResource(BATCH_GROUP, "jobs", namespaced=True)
JOBSETS = WatchedResource(JOBSET_GROUP, "jobsets", namespaced=True)
# Alpha or beta on most clusters (feature gate DRADeviceTaintRules): often not served,
# which the informer reports as such and the GPUs are then read without rules.
DEVICE_TAINT_RULES = WatchedResource(DRA_GROUP, "devicetaintrules", namespaced=False)
EVENTS = WatchedResource(EVENTS_GROUP, "events", namespaced=True)

#: Everything the adapter reads, with get/list/watch; the inspector's and the tracker's
#: RBAC (``deploy/base/*/rbac.yaml``) must match.
WATCHED_RESOURCES: tuple[WatchedResource, ...] = (
    PODS,
    NODES,
    WORKLOADS,
    RESOURCE_SLICES,
    RESOURCE_CLAIMS,
    JOBS,
    JOBSETS,
    DEVICE_TAINT_RULES,
    EVENTS,
)
READ_VERBS = ("get", "list", "watch")

#: What the pod-log reader asks beyond the watch cache: (API group, resource, verbs).
#: ``deploy/base/inspector/rbac.yaml`` must grant it.
LOG_READS: tuple[tuple[str, str, tuple[str, ...]], ...] = (("", "pods/log", ("get",)),)
#: What the tracker's leader election asks: (API group, resource, verbs).
LEASE_VERBS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (COORDINATION_GROUP, "leases", ("get", "create", "update")),
)

"""What the adapter reads from the API server: each watched resource and the verbs used.

Kept apart from the client so that the RBAC tests (``deploy/base/*/rbac.yaml``) and the
records can name the resources without importing the Kubernetes SDK.
"""

from __future__ import annotations

from dataclasses import dataclass

BACKEND = "kubernetes"
KUEUE_GROUP = "kueue.x-k8s.io"
DRA_GROUP = "resource.k8s.io"
BATCH_GROUP = "batch"
JOBSET_GROUP = "jobset.x-k8s.io"
EVENTS_GROUP = "events.k8s.io"


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

"""What the adapter asks of the API server: each watched resource, the API versions it
understands, and every verb used.

Kept apart from the clients so that the RBAC tests (``deploy/base/*/rbac.yaml``) and the
records can name the resources without importing the Kubernetes SDK or the clients.

No version is configured: each resource is read at the newest version the API server
serves among ``versions`` (``_discovery``), so a Kueue that stops serving v1beta1 or a
cluster that turns DRA v1 on is followed without a restart.
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
    """A resource the adapter lists and watches; ``kind`` names it everywhere else.

    ``versions`` are the API versions its parsers understand, newest first: discovery
    picks the first one the server serves the resource at.
    """

    group: str
    resource: str
    namespaced: bool
    versions: tuple[str, ...] = ("v1",)

    @property
    def kind(self) -> str:
        return self.resource


# Kueue: v1beta2 from 0.15 (storage from 0.16), v1beta1 until Kueue stops serving it.
KUEUE_VERSIONS = ("v1beta2", "v1beta1")
# DRA: v1 is GA in 1.34; v1beta2 has the same shape; v1beta1 nests devices under "basic".
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")
# DeviceTaintRule: v1alpha3 from 1.33, v1beta2 from 1.36, v1 from 1.37 (one shape).
TAINT_RULE_VERSIONS = ("v1", "v1beta2", "v1alpha3")

PODS = WatchedResource("", "pods", namespaced=True)
NODES = WatchedResource("", "nodes", namespaced=False)
WORKLOADS = WatchedResource(KUEUE_GROUP, "workloads", namespaced=True, versions=KUEUE_VERSIONS)
RESOURCE_SLICES = WatchedResource(DRA_GROUP, "resourceslices", False, DRA_VERSIONS)
RESOURCE_CLAIMS = WatchedResource(DRA_GROUP, "resourceclaims", True, DRA_VERSIONS)
# The jobs Kueue queues: how a Workload without model labels reaches its model and pods.
JOBS = WatchedResource(BATCH_GROUP, "jobs", namespaced=True)
JOBSETS = WatchedResource(JOBSET_GROUP, "jobsets", namespaced=True, versions=("v1alpha2",))
# Alpha or beta on most clusters (feature gate DRADeviceTaintRules): often not served,
# which the informer reports as such and the GPUs are then read without rules.
DEVICE_TAINT_RULES = WatchedResource(DRA_GROUP, "devicetaintrules", False, TAINT_RULE_VERSIONS)
EVENTS = WatchedResource(EVENTS_GROUP, "events", namespaced=True)
# Not watched: the tracker's leader election reads and writes one Lease.
LEASES = WatchedResource(COORDINATION_GROUP, "leases", namespaced=True)

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

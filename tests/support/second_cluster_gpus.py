"""The nodes and GPUs of issue 24's second cluster (``second_cluster``): four nodes of 8
H100 as NVIDIA's DRA driver 25.12 publishes them (the fourth cordoned), and one of 4 H100
partitioned by static MIG into 16 slices, 8 of which another team's pods hold on three
of the GPUs (4 of GPU 0, 3 of GPU 1, 1 of GPU 2)."""

from __future__ import annotations

import uuid
from typing import Any

from support import kube_mig_objects, kube_objects

Obj = dict[str, Any]

NODES = [f"gke-rl-a3-pool-1-{s}" for s in ("9x2c", "b4k8", "m7q1", "z3d5")]
CORDONED = NODES[3]
MIG_NODE = "gke-rl-a3-mig-pool-1-k2v7"


def uid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, "/".join(parts)))


def settled(pod: Obj) -> Obj:
    """A running pod's container never restarted (the shared builder's had an OOM kill)."""
    for status in pod["status"].get("containerStatuses", ()):
        status |= {"restartCount": 0, "lastState": {}}
    return pod


def nodes() -> list[Obj]:
    out = [kube_objects.node(n) for n in NODES] + [kube_objects.node(MIG_NODE, gpus=4)]
    cordoned = out[3]
    cordoned["spec"]["unschedulable"] = True
    cordoned["spec"]["taints"].append(
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
         "timeAdded": "2026-09-12T07:30:00Z"}
    )  # fmt: skip
    return out


def slices() -> list[Obj]:
    whole = [
        kube_mig_objects.resource_slice(n, [kube_mig_objects.whole_gpu(n, m) for m in range(8)])
        for n in NODES
    ]
    return [*whole, kube_mig_objects.static_mig_slice(MIG_NODE, 4)]


def _mig(pod: str, claim: str, minor: int, layouts: slice, profile: str) -> Obj:
    chosen = kube_mig_objects.LAYOUT[layouts]
    devices = [kube_mig_objects.slice_name(minor, layout) for layout in chosen]
    return kube_mig_objects.mig_claim(claim, "eval", pod, MIG_NODE, devices, profile)


def mig_holders() -> list[Obj]:
    """Another team's evaluation pods on MIG slices: 4 of GPU 0, 3 of GPU 1, 1 of GPU 2."""
    claims = [
        _mig("mig-eval-0", "mig-eval-0-mig-2g", 0, slice(0, 3), "2g.20gb"),
        _mig("mig-eval-0", "mig-eval-0-mig-1g", 0, slice(3, 4), "1g.10gb"),
        _mig("mig-eval-1", "mig-eval-1-mig-2g", 1, slice(0, 3), "2g.20gb"),
        _mig("mig-eval-2", "mig-eval-2-mig-2g", 2, slice(0, 1), "2g.20gb"),
    ]
    pods = []
    for name in ("mig-eval-0", "mig-eval-1", "mig-eval-2"):
        mine = [c for c in claims if c["status"]["reservedFor"][0]["name"] == name]
        pod = kube_objects.pod(
            name, model_id="", node_name=MIG_NODE, claim_template=None, namespace="eval"
        )
        pod["metadata"]["labels"] = {"app": "mig-eval"}
        pod["metadata"]["uid"] = uid("pod", "eval", name)
        del pod["metadata"]["ownerReferences"]
        pod["spec"]["resourceClaims"] = [
            {"name": c["metadata"]["name"][len(name) + 1 :], "resourceClaimTemplateName":
             f"mig-{c['metadata']['name'].rsplit('-', 1)[1]}"} for c in mine
        ]  # fmt: skip
        pod["status"]["resourceClaimStatuses"] = [
            {"name": c["metadata"]["name"][len(name) + 1 :], "resourceClaimName":
             c["metadata"]["name"]} for c in mine
        ]  # fmt: skip
        pods.append(settled(pod))
    return [*claims, *pods]


def gpu_objects() -> list[Obj]:
    return [*nodes(), *slices(), *mig_holders()]

"""Parsers, stores and queries of the Kubernetes adapter, and its in-memory twin."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings, strategies
from openrl_inspect.adapters.kubernetes import DeviceKey, ObjectKey, PodRecord
from openrl_inspect.adapters.kubernetes._dra import parse_claim, parse_slice
from openrl_inspect.adapters.kubernetes._json import parse_quantity, parse_time
from openrl_inspect.adapters.kubernetes._pods import parse_node, parse_pod
from openrl_inspect.adapters.kubernetes._store import GpuIndex, pod_store
from openrl_inspect.adapters.kubernetes._view import ClusterView
from openrl_inspect.adapters.kubernetes._workloads import parse_workload
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.core.errors import BackendUnavailable, InvalidInput
from support import kube_objects


def _pod(obj: dict[str, Any]) -> PodRecord:
    record = parse_pod(obj)
    assert record is not None
    return record


def test_unschedulable_pod_says_why() -> None:
    pod = _pod(kube_objects.unschedulable_pod())
    assert pod.phase == "Pending" and pod.node_name is None
    assert pod.scheduling_failure is not None
    assert pod.scheduling_failure.reason == "Unschedulable"
    assert pod.scheduling_failure.message == kube_objects.UNSCHEDULABLE_MESSAGE
    assert pod.scheduling_failure.since == parse_time("2026-01-05T09:30:00Z")
    assert (pod.model_id, pod.worker_role, pod.gpu_request) == ("lora-b", "trainer", 8)
    assert (pod.owner_kind, pod.owner_name) == ("Job", "lora-b-trainer")
    assert pod.claim_names == ()


def test_running_pod_containers_and_claims() -> None:
    pod = _pod(kube_objects.running_trainer())
    assert pod.scheduling_failure is None and pod.node_name == "gpu-h100-1"
    (container,) = pod.containers
    assert (container.state, container.ready, container.restart_count) == ("running", True, 1)
    assert container.started_at == parse_time("2026-01-05T09:02:00Z")
    assert pod.claim_names == ("lora-a-trainer-0-gpus-x7k2p",)
    assert pod.resource_claims[0].template_name == "h100x8"
    assert [c.type for c in pod.conditions] == ["PodScheduled", "Ready"]


def test_claim_name_unknown_until_generated() -> None:
    obj = kube_objects.pod(
        "p", model_id="m", claim_template="h100x8", claim_name=None, phase="Pending"
    )
    pod = _pod(obj)
    assert pod.resource_claims[0].claim_name is None and pod.claim_names == ()


def test_terminated_container_keeps_exit_code() -> None:
    obj = kube_objects.running_trainer()
    obj["status"]["containerStatuses"][0]["state"] = {
        "terminated": {"exitCode": 1, "reason": "Error", "message": "CUDA error: out of memory"}
    }
    (container,) = _pod(obj).containers
    assert (container.state, container.exit_code, container.reason) == (
        "terminated",
        1,
        "Error",
    )
    assert container.message == "CUDA error: out of memory"


def test_objects_without_a_name_or_status_are_tolerated() -> None:
    assert parse_pod({"metadata": {}}) is None
    bare = _pod({"metadata": {"name": "x", "namespace": "n"}})
    assert (bare.phase, bare.containers, bare.labels, bare.created) == (None, (), {}, None)


def test_node_gpus_readiness_and_taints() -> None:
    node = parse_node(kube_objects.node("gpu-h100-1"))
    assert node is not None
    assert (node.gpu_allocatable, node.gpu_capacity, node.ready) == (8, 8, True)
    assert node.taints[0].key == "nvidia.com/gpu" and node.taints[0].effect == "NoSchedule"
    sick = kube_objects.node("n2", ready=False)
    sick["spec"]["unschedulable"] = True
    parsed = parse_node(sick)
    assert parsed is not None and parsed.ready is False and parsed.unschedulable
    no_gpus = parse_node({"metadata": {"name": "cpu"}, "status": {"allocatable": {}}})
    assert no_gpus is not None and no_gpus.gpu_allocatable is None and no_gpus.ready is None


def test_pending_workload_carries_kueue_reason() -> None:
    wl = parse_workload(kube_objects.pending_workload())
    assert wl is not None
    cond = wl.condition("QuotaReserved")
    assert cond is not None
    assert (cond.status, cond.reason, cond.message) == (
        "False",
        "Pending",
        kube_objects.PENDING_QUOTA_MESSAGE,
    )
    assert wl.admission is None and not wl.is_true("Admitted")
    assert (wl.model_id, wl.queue_name, wl.priority) == ("lora-b", "openrl-training", 100)
    assert wl.pod_sets[0].name == "main" and wl.pod_sets[0].count == 1


def test_admitted_workload_assignments() -> None:
    wl = parse_workload(kube_objects.admitted_workload())
    assert wl is not None and wl.admission is not None
    assert wl.is_true("Admitted") and wl.is_true("PodsReady") and not wl.is_true("Evicted")
    assert wl.admission.cluster_queue == "gpu-cq"
    (assignment,) = wl.admission.pod_set_assignments
    assert assignment.flavors["nvidia.com/gpu"] == "h100-flavor"
    assert assignment.resource_usage["nvidia.com/gpu"] == "8" and assignment.count == 1


def test_slice_devices_v1_and_v1beta1_agree() -> None:
    v1 = parse_slice(kube_objects.h100_slice())
    beta = parse_slice(kube_objects.h100_slice(version="v1beta1"))
    assert v1 is not None and beta is not None
    assert v1.devices == beta.devices and len(v1.devices) == 8
    gpu = v1.devices[3]
    assert gpu.product_name == "NVIDIA H100 80GB HBM3" and gpu.memory_bytes == 80 * 2**30
    assert (gpu.index, gpu.minor, gpu.node_name, gpu.device) == (3, 3, "gpu-h100-1", "gpu-3")
    assert gpu.uuid == kube_objects.gpu_uuid("gpu-h100-1", 3) and gpu.pci_bus_id == "0000:48:00.0"
    assert (gpu.architecture, gpu.driver_version, gpu.device_type) == (
        "Hopper",
        "570.133.20",
        "gpu",
    )
    assert gpu.key == DeviceKey("gpu.nvidia.com", "gpu-h100-1", "gpu-3")


def test_qualified_attribute_names_and_driver_filter() -> None:
    obj = kube_objects.h200_slice()
    for device in obj["spec"]["devices"]:
        device["attributes"] = {f"gpu.nvidia.com/{k}": v for k, v in device["attributes"].items()}
    parsed = parse_slice(obj)
    assert parsed is not None and parsed.devices[0].product_name == "NVIDIA H200"
    assert parsed.devices[0].memory_bytes == 141 * 2**30
    assert parse_slice(obj, drivers=frozenset({"other.example.com"})) is None


def test_claims_v1_and_v1beta1_agree() -> None:
    v1, beta = (
        parse_claim(kube_objects.allocated_claim()),
        parse_claim(kube_objects.allocated_claim(version="v1beta1")),
    )
    assert v1 is not None and v1 == beta
    assert v1.allocated and len(v1.devices) == 8
    assert v1.requests[0].device_class == "gpu.nvidia.com" and v1.requests[0].count == 8
    assert [c.name for c in v1.reserved_pods] == ["lora-a-trainer-0"]
    pending = copy.deepcopy(kube_objects.allocated_claim())
    del pending["status"]
    unallocated = parse_claim(pending)
    assert unallocated is not None and not unallocated.allocated and unallocated.devices == ()


@pytest.mark.parametrize(
    ("text", "value"),
    [("8", 8), ("80Gi", 80 * 2**30), ("141Gi", 141 * 2**30), ("1.5k", 1500), ("500m", 0),
     ("2M", 2_000_000), ("1e3", 1000), ("", None), ("lots", None), (None, None), (4, 4)],
)  # fmt: skip
def test_quantities(text: Any, value: int | None) -> None:
    assert parse_quantity(text) == value


def test_only_the_newest_pool_generation_counts() -> None:
    old = parse_slice(kube_objects.h100_slice(generation=1))
    new = parse_slice(
        kube_objects.resource_slice("gpu-h100-1", generation=2, count=4, product=kube_objects.H200)
    )
    other = parse_slice(kube_objects.h200_slice())
    assert old is not None and new is not None and other is not None
    index = GpuIndex([old, new, other])
    on_node = [d for d in index.devices if d.node_name == "gpu-h100-1"]
    assert len(on_node) == 4 and {d.pool_generation for d in on_node} == {2}
    assert len(index.by_node["gpu-h200-1"]) == 8


def test_store_indexes_follow_modifications() -> None:
    store = pod_store()
    pod = _pod(kube_objects.pod("p", model_id="a", node_name="n1"))
    store.upsert(pod)
    moved = _pod(kube_objects.pod("p", model_id="b", node_name="n2"))
    store.upsert(moved)
    assert store.keys_for("model", "a") == set() and store.keys_for("node", "n1") == set()
    assert store.keys_for("model", "b") == {ObjectKey("openrl", "p")}
    store.replace([_pod(kube_objects.pod("q", model_id="b"))])
    assert store.keys_for("model", "b") == {ObjectKey("openrl", "q")} and len(store) == 1


pod_specs = strategies.lists(
    strategies.tuples(strategies.sampled_from(["ns-a", "ns-b", "ns-c"]), strategies.integers(0, 40),
              strategies.sampled_from(["m1", "m2"]), strategies.sampled_from(["Running", "Pending"])),
    max_size=40,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    pod_specs,
    strategies.integers(1, 7),
    strategies.sampled_from([None, "ns-b"]),
    strategies.sampled_from([None, "m1"]),
)
def test_pages_cover_every_match_once(
    specs: list[tuple[str, int, str, str]], limit: int, namespace: str | None, model: str | None
) -> None:
    view = ClusterView()
    for ns, n, model_id, phase in specs:
        view.pods.upsert(
            _pod(kube_objects.pod(f"p{n}", model_id=model_id, phase=phase, namespace=ns))
        )
    expected = sorted(
        p.key
        for p in view.pods.values()
        if (namespace is None or p.namespace == namespace)
        and (model is None or p.model_id == model)
        and p.phase == "Running"
    )
    seen: list[ObjectKey] = []
    after = None
    while True:
        page = view.list_pods(
            namespace=namespace, model_id=model, phase="Running", after=after, limit=limit
        )
        seen.extend(p.key for p in page.items)
        assert len(page.items) <= limit
        if not page.truncated:
            break
        after = page.items[-1].key
    assert seen == expected


PARSERS: dict[str, Callable[[Any], Any]] = {
    "Pod": parse_pod,
    "Node": parse_node,
    "Workload": parse_workload,
    "ResourceSlice": parse_slice,
    "ResourceClaim": parse_claim,
}


def _twin() -> MemoryKubernetesSource:
    twin = MemoryKubernetesSource()
    for obj in kube_objects.cluster():
        record = PARSERS[obj["kind"]](obj)
        assert record is not None
        twin.put(record)
    return twin


@pytest.mark.anyio
async def test_twin_batches_answer_in_key_order() -> None:
    twin = _twin()
    pods = await twin.get_pods(
        [ObjectKey("openrl", "nope"), ObjectKey("openrl", "lora-b-trainer-0")]
    )
    assert pods[0] is None and pods[1] is not None and pods[1].name == "lora-b-trainer-0"
    by_model = await twin.pods_by_model(["lora-b", "none", "lora-a"])
    assert [[p.name for p in listing.items] for listing in by_model] == [
        ["lora-b-trainer-0"],
        [],
        ["lora-a-trainer-0"],
    ]
    nodes = await twin.get_nodes(["gpu-h200-1", "missing"])
    assert nodes[0] is not None and nodes[0].gpu_allocatable == 8 and nodes[1] is None
    uuid = kube_objects.gpu_uuid("gpu-h200-1", 5)
    gpus = await twin.gpus_by_uuid([uuid, "GPU-unknown"])
    assert gpus[0] is not None and gpus[0].device == "gpu-5" and gpus[1] is None


@pytest.mark.anyio
async def test_twin_follows_a_gpu_to_its_pod_and_back() -> None:
    twin = _twin()
    (claims,) = await twin.claims_for_pods([ObjectKey("openrl", "lora-a-trainer-0")])
    (claim,) = claims.items
    devices = await twin.gpus_by_device([d.key for d in claim.devices])
    assert [d.index for d in devices if d is not None] == list(range(8))
    gpu = devices[2]
    assert gpu is not None
    (held,) = await twin.claims_by_device([gpu.key])
    assert [c.reserved_pods[0].name for c in held.items] == ["lora-a-trainer-0"]
    (free,) = await twin.claims_by_device([DeviceKey("gpu.nvidia.com", "gpu-h200-1", "gpu-0")])
    assert free.items == ()


@pytest.mark.anyio
async def test_twin_reports_truncation_degradation_and_failure() -> None:
    twin = _twin()
    page = await twin.list_gpus(limit=10)
    assert len(page.items) == 10 and page.truncated and not page.degraded
    twin.degraded_kinds.add("resourceslices")
    assert (await twin.list_gpus(node_name="gpu-h200-1")).degraded
    status = await twin.status()
    assert status.degraded and not status.ready
    with pytest.raises(InvalidInput):
        await twin.list_pods(limit=-1)
    twin.failure = BackendUnavailable("kubernetes", "down")
    with pytest.raises(BackendUnavailable):
        await twin.list_nodes()
    twin.failure = None
    twin.remove("pods", ObjectKey("openrl", "lora-a-trainer-0"))
    assert [p.name for p in (await twin.list_pods()).items] == ["lora-b-trainer-0"]

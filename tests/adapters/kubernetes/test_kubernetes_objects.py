"""The fake cluster's objects and wire format, checked against the official client.

The objects in ``support.kube_objects`` must be real Kubernetes objects: each one goes
through the client's own (pydantic) model and back without losing a field
(``support.client_models.roundtrip``). The fake server is then read by the official
synchronous client's typed calls and typed watch, so its LIST and WATCH answers are what
the client expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as _client
from kubernetes import config as _config
from kubernetes import watch as _watch
from support import kube_objects
from support import kube_owned as owned
from support.client_models import roundtrip
from support.fake_kube import FakeKube, fake_kube, write_kubeconfig

__all__ = ["fake_kube"]  # the fixture, used by name below

# The SDK's models type every field Optional and some functions are unannotated: the
# tests assert on shapes at run time, so they use it as Any.
client: Any = _client
config: Any = _config
watch: Any = _watch


@pytest.mark.parametrize(
    ("obj", "model"),
    [
        (kube_objects.node("gpu-h100-1"), "V1Node"),
        (kube_objects.node("gpu-h200-1", product=kube_objects.H200), "V1Node"),
        (kube_objects.running_trainer(), "V1Pod"),
        (kube_objects.unschedulable_pod(), "V1Pod"),
        (kube_objects.h100_slice(), "V1ResourceSlice"),
        (kube_objects.h200_slice(), "V1ResourceSlice"),
        (kube_objects.h100_slice(version="v1beta1"), "V1beta1ResourceSlice"),
        (kube_objects.allocated_claim(), "ResourceV1ResourceClaim"),
        (kube_objects.allocated_claim(version="v1beta1"), "V1beta1ResourceClaim"),
        (owned.child_job_c(), "V1Job"),
        (owned.job_d(), "V1Job"),
        (owned.pod_c(), "V1Pod"),
    ],
    ids=lambda v: v if isinstance(v, str) else v["metadata"]["name"],
)
def test_objects_are_valid_for_the_client_models(obj: dict[str, Any], model: str) -> None:
    roundtrip(obj, model)


def test_a_misspelt_field_is_caught() -> None:
    """The check above can fail: a field the model does not know is dropped."""
    pod = kube_objects.unschedulable_pod()
    pod["status"]["condition"] = pod["status"].pop("conditions")
    with pytest.raises(AssertionError):
        roundtrip(pod, "V1Pod")


def test_device_attributes_are_what_the_nvidia_driver_publishes() -> None:
    parsed = roundtrip(kube_objects.h100_slice(), "V1ResourceSlice")
    devices = parsed.spec.devices
    assert len(devices) == 8
    first = devices[0].attributes
    assert first["productName"].string == "NVIDIA H100 80GB HBM3"
    assert first["index"].int == 0
    assert first["uuid"].string.startswith("GPU-")
    assert {"minor", "architecture", "driverVersion", "pcieBusID"} <= set(first)
    assert devices[0].capacity["memory"].value == "80Gi"
    assert len({d.attributes["uuid"].string for d in devices}) == 8


@pytest.mark.parametrize(
    "workload", [kube_objects.pending_workload(), kube_objects.admitted_workload()]
)
def test_workload_parts_follow_kubernetes_types(workload: dict[str, Any]) -> None:
    """Kueue's Workload is a CRD (no client model): its conditions are metav1.Conditions
    and its pod set templates are PodTemplateSpecs."""
    for condition in workload["status"]["conditions"]:
        roundtrip(condition, "V1Condition")
    for pod_set in workload["spec"]["podSets"]:
        roundtrip(pod_set["template"], "V1PodTemplateSpec")


@pytest.fixture
def sync_client(fake_kube: FakeKube, tmp_path: Path) -> Iterator[Any]:
    fake_kube.put(*kube_objects.cluster())
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", fake_kube.url)
    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield api
    finally:
        api.close()


def test_fake_lists_read_by_the_typed_client(sync_client: Any) -> None:
    core = client.CoreV1Api(sync_client)
    pods = core.list_pod_for_all_namespaces(_request_timeout=5)
    assert isinstance(pods, client.V1PodList)
    assert sorted(p.metadata.name for p in pods.items) == ["lora-a-trainer-0", "lora-b-trainer-0"]
    assert int(pods.metadata.resource_version) > 0
    nodes = core.list_node(limit=2, _request_timeout=5)
    assert len(nodes.items) == 2 and nodes.metadata._continue
    rest = core.list_node(limit=2, _continue=nodes.metadata._continue, _request_timeout=5)
    assert len(rest.items) == 1 and not rest.metadata._continue
    slices = client.ResourceV1Api(sync_client).list_resource_slice(_request_timeout=5)
    assert {s.spec.node_name for s in slices.items} == {"gpu-h100-1", "gpu-h200-1"}
    workloads = client.CustomObjectsApi(sync_client).list_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta1", "workloads", _request_timeout=5
    )
    assert len(workloads["items"]) == 2


def test_fake_watch_read_by_the_typed_watch(fake_kube: FakeKube, sync_client: Any) -> None:
    dra = client.ResourceV1Api(sync_client)
    listed = dra.list_resource_claim_for_all_namespaces(_request_timeout=5)
    claim = kube_objects.allocated_claim()
    claim["metadata"]["name"] = "second"
    fake_kube.put(claim)
    fake_kube.delete(kube_objects.allocated_claim())
    stream = watch.Watch(return_type="ResourceV1ResourceClaim").stream(
        dra.list_resource_claim_for_all_namespaces,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=1,
        _request_timeout=5,
    )
    events = [(e["type"], e["object"].metadata.name) for e in stream]
    assert events == [("ADDED", "second"), ("DELETED", "lora-a-trainer-0-gpus-x7k2p")]


def test_fake_answers_an_expired_watch_with_a_410_error_event(
    fake_kube: FakeKube, sync_client: Any
) -> None:
    core = client.CoreV1Api(sync_client)
    old = core.list_node(_request_timeout=5).metadata.resource_version
    fake_kube.expire_history()
    w = watch.Watch()
    with pytest.raises(client.ApiException) as caught:
        for _ in w.stream(
            core.list_node, resource_version=old, timeout_seconds=1, _request_timeout=5
        ):
            pass
    assert caught.value.status == 410
    assert fake_kube.expired_watches >= 1

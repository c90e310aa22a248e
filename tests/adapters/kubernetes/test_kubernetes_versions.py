"""API versions discovered, through the official client at ``FakeKube``: each group read
at the newest version the server serves among those understood, in every mode (both
served, only the new, only the old, the group absent, only versions unknown), followed
when the served versions change, and the Lease client's group checked the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openrl_inspect.adapters.kubernetes import (
    KubernetesSettings,
    ObjectKey,
    open_leases,
)
from openrl_inspect.adapters.kubernetes._discovery import NotDiscovered
from openrl_inspect.core.errors import ApiVersionUnsupported
from support import kube_objects
from support.fake_kube import FakeKube, fake_kube, write_kubeconfig
from support.fake_leases import fake_leases
from support.kube_conversion import convert
from support.kube_harness import eventually, synced_source, unstarted_source

__all__ = ["fake_kube"]  # the fixture, used by name below

pytestmark = pytest.mark.anyio

KUEUE = "kueue.x-k8s.io"
DRA = "resource.k8s.io"
PENDING = ObjectKey("openrl", "job-lora-b-trainer-3f9c2")
ADMITTED = ObjectKey("openrl", "job-lora-a-trainer-8d1e4")


def paths(fake: FakeKube, plural: str) -> set[str]:
    return {path for verb, path, _ in fake.requests if path.endswith(f"/{plural}")}


def v1beta2(obj: dict[str, Any]) -> dict[str, Any]:
    """A Workload as Kueue 0.16+ stores it (v1beta2: ``priorityClassRef``)."""
    out = convert(obj, KUEUE, "v1beta2")
    assert "priorityClassRef" in out["spec"] and "priorityClassName" not in out["spec"]
    return out


def cluster(fake: FakeKube) -> None:
    """The fake cluster, one Workload stored at v1beta2 and one at v1beta1."""
    others = [o for o in kube_objects.cluster() if o["kind"] != "Workload"]
    fake.put(*others, v1beta2(kube_objects.admitted_workload()), kube_objects.pending_workload())


@pytest.mark.parametrize(
    ("served", "read_at"),
    [
        (("v1beta2", "v1beta1"), "v1beta2"),  # Kueue 0.15 to 0.19: v1beta2 preferred
        (("v1beta1", "v1beta2"), "v1beta2"),  # whatever the server prefers
        (("v1beta2",), "v1beta2"),  # Kueue past v1beta1
        (("v1beta1",), "v1beta1"),  # Kueue before 0.15
    ],
)
async def test_kueue_is_read_at_the_newest_version_served(
    fake_kube: FakeKube, tmp_path: Path, served: tuple[str, ...], read_at: str
) -> None:
    fake_kube.served[KUEUE] = served
    cluster(fake_kube)
    async with synced_source(fake_kube, tmp_path) as source:
        status = (await source.status()).kind("workloads")
        assert status is not None and status.version == read_at and not status.unsupported
        assert paths(fake_kube, "workloads") == {f"/apis/{KUEUE}/{read_at}/workloads"}
        listing = await source.list_workloads()
        got = {w.key: w for w in listing.items}
        assert set(got) == {PENDING, ADMITTED}
        # The priority class, from priorityClassRef (v1beta2) or priorityClassName and
        # priorityClassSource (v1beta1), whichever version each was stored at.
        for w in got.values():
            assert (w.priority_class, w.priority_class_kind) == (
                "openrl-standard",
                "WorkloadPriorityClass",
            )
        (pending,) = await source.workloads_by_model(["lora-b"])
        assert [w.key for w in pending.items] == [PENDING]


async def test_kueue_absent_is_not_served_and_holds_nothing(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    del fake_kube.served[KUEUE]
    fake_kube.put(*[o for o in kube_objects.cluster() if o["kind"] != "Workload"])
    async with synced_source(fake_kube, tmp_path) as source:
        status = await source.status()
        workloads = status.kind("workloads")
        assert workloads is not None and not workloads.served and workloads.version is None
        assert not workloads.unsupported and status.unsupported == ()
        assert (await source.list_workloads()).items == ()
        assert paths(fake_kube, "workloads") == set()  # discovery said no: never listed


async def test_kueue_served_only_at_unknown_versions_is_refused_not_empty(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.served[KUEUE] = ("v1beta3",)
    cluster(fake_kube)
    async with synced_source(fake_kube, tmp_path) as source:
        status = await source.status()
        workloads = status.kind("workloads")
        assert workloads is not None and workloads.unsupported and workloads.served
        assert workloads.unsupported_versions == ("v1beta3",)
        assert workloads.understood == ("v1beta2", "v1beta1")
        assert [k.kind for k in status.unsupported] == ["workloads"]
        assert status.ready  # the rest of the cluster is read as usual
        with pytest.raises(ApiVersionUnsupported) as caught:
            await source.list_workloads()
        error = caught.value
        assert error.code == "API_VERSION_UNSUPPORTED" and error.backend == "kubernetes"
        assert error.extensions()["group"] == KUEUE
        assert error.extensions()["versionsSeen"] == ["v1beta3"]
        assert "v1beta3" in error.message and "v1beta2, v1beta1" in error.message
        with pytest.raises(ApiVersionUnsupported):
            await source.workloads_by_model(["lora-b"])
        # Pods need Workloads only to follow links: answered, marked degraded.
        pods = await source.list_pods(model_id="lora-a")
        assert [p.name for p in pods.items] == ["lora-a-trainer-0"] and pods.degraded
        assert paths(fake_kube, "workloads") == set()


async def test_unknown_versions_refuse_direct_reads_too(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.served[KUEUE] = ("v2",)
    cluster(fake_kube)
    async with unstarted_source(fake_kube, tmp_path) as source:
        with pytest.raises(ApiVersionUnsupported, match="v2"):
            await source.get_workloads([PENDING])
        assert (await source.get_pods([ObjectKey("openrl", "lora-a-trainer-0")]))[0] is not None


async def test_kueue_dropping_v1beta1_while_running_is_followed(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    """Kueue upgraded under a running inspector: v1beta1 stops being served; the next
    watch finds its collection gone and the informer relists at v1beta2."""
    fake_kube.served[KUEUE] = ("v1beta1",)
    cluster(fake_kube)
    async with synced_source(fake_kube, tmp_path) as source:
        assert source.kind_status("workloads").version == "v1beta1"
        fake_kube.served[KUEUE] = ("v1beta2",)
        fake_kube.end_watches()

        def moved() -> bool:
            status = source.kind_status("workloads")
            return status.version == "v1beta2" and status.objects == 2

        await eventually(moved, what="workloads relisted at v1beta2")
        assert f"/apis/{KUEUE}/v1beta2/workloads" in paths(fake_kube, "workloads")
        assert len((await source.list_workloads()).items) == 2


@pytest.mark.parametrize(
    ("served", "read_at"),
    [
        (("v1", "v1beta2", "v1beta1"), "v1"),
        (("v1beta2", "v1beta1"), "v1beta2"),
        (("v1beta1",), "v1beta1"),
    ],
)
async def test_dra_is_read_at_the_newest_version_served(
    fake_kube: FakeKube, tmp_path: Path, served: tuple[str, ...], read_at: str
) -> None:
    """Slices and claims stored at v1 or v1beta1 alike, converted to the version read."""
    fake_kube.served[DRA] = served
    fake_kube.only_versions["devicetaintrules"] = ()
    others = [o for o in kube_objects.cluster() if not o["apiVersion"].startswith(f"{DRA}/")]
    fake_kube.put(
        *others,
        kube_objects.h100_slice(version="v1beta1"),
        kube_objects.h200_slice(),
        kube_objects.allocated_claim(version="v1beta1"),
    )
    async with synced_source(fake_kube, tmp_path) as source:
        assert source.kind_status("resourceslices").version == read_at
        assert source.kind_status("resourceclaims").version == read_at
        assert paths(fake_kube, "resourceslices") == {f"/apis/{DRA}/{read_at}/resourceslices"}
        h100 = await source.list_gpus(node_name="gpu-h100-1")
        assert [g.minor for g in h100.items] == list(range(8))
        assert {g.memory_bytes for g in h100.items} == {80 * 2**30}
        h200 = await source.list_gpus(node_name="gpu-h200-1")
        assert {g.product_name for g in h200.items} == {kube_objects.H200}
        (claims,) = await source.claims_for_pods([ObjectKey("openrl", "lora-a-trainer-0")])
        request = claims.items[0].requests[0]
        assert (request.count, request.device_class) == (8, "gpu.nvidia.com")
        rules = source.kind_status("devicetaintrules")
        assert not rules.served and not rules.unsupported


async def test_dra_absent_and_dra_at_an_unknown_version(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    """No DRA: GPUs not served, read as none. Slices only at v1alpha3 (1.31's shape,
    not read): refused, while the rules v1alpha3 serves are read."""
    others = [o for o in kube_objects.cluster() if not o["apiVersion"].startswith(f"{DRA}/")]
    fake_kube.put(*others)
    del fake_kube.served[DRA]
    async with synced_source(fake_kube, tmp_path) as source:
        assert not source.kind_status("resourceslices").served
        assert (await source.list_gpus()).items == ()
    fake_kube.served[DRA] = ("v1alpha3",)
    async with synced_source(fake_kube, tmp_path) as source:
        slices = source.kind_status("resourceslices")
        assert slices.unsupported and slices.unsupported_versions == ("v1alpha3",)
        assert source.kind_status("devicetaintrules").version == "v1alpha3"
        with pytest.raises(ApiVersionUnsupported) as caught:
            await source.list_gpus()
        assert caught.value.extensions()["group"] == DRA
        assert caught.value.extensions()["resource"] == "resourceslices"


async def test_leases_need_coordination_v1(tmp_path: Path) -> None:
    with fake_leases() as server:
        config = write_kubeconfig(tmp_path / "kubeconfig", server.url)
        settings = KubernetesSettings(kubeconfig=str(config), request_timeout_s=2)
        async with open_leases(settings) as leases:
            assert await leases.get("openrl", "tracker") is None
            assert server.discoveries == 2  # /apis, then coordination.k8s.io/v1
            await leases.get("openrl", "tracker")
            assert server.discoveries == 2  # checked once
        server.served = ("v2",)
        async with open_leases(settings) as leases:
            with pytest.raises(ApiVersionUnsupported, match=r"coordination\.k8s\.io"):
                await leases.get("openrl", "tracker")
        server.served = ()
        async with open_leases(settings) as leases:
            with pytest.raises(NotDiscovered):
                await leases.get("openrl", "tracker")
        assert [path for _, path in server.requests] == [
            "/apis/coordination.k8s.io/v1/namespaces/openrl/leases/tracker"
        ] * 2

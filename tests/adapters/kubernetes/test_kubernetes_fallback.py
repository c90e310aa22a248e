"""Direct reads before the cache syncs, error translation, and cluster variations
(DRA only at v1beta1, no Kueue), through the official client at ``FakeKube``."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest
from openrl_inspect.adapters.kubernetes import ObjectKey, load_settings, open_kubernetes
from openrl_inspect.core.errors import BackendTimeout, BackendUnavailable, SettingsError
from support import kube_objects
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import kube_settings, synced_source, unstarted_source

__all__ = ["fake_kube"]  # the fixture, used by name below

TRAINER = ObjectKey("openrl", "lora-a-trainer-0")


def last_query(fake: FakeKube, plural: str) -> dict[str, str]:
    return next(q for verb, path, q in reversed(fake.requests) if path.endswith(plural))


@pytest.mark.anyio
async def test_unsynced_kinds_are_read_directly_and_marked_degraded(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with unstarted_source(fake_kube, tmp_path) as source:
        status = await source.status()
        assert not status.ready and status.degraded

        listing = await source.list_pods(model_id="lora-b")
        assert listing.degraded and [p.name for p in listing.items] == ["lora-b-trainer-0"]
        assert last_query(fake_kube, "pods")["labelSelector"] == "openrl.ai/model-id in (lora-b)"

        (trainer,) = await source.get_pods([TRAINER])
        assert trainer is not None and trainer.node_name == "gpu-h100-1"
        query = last_query(fake_kube, "pods")
        assert query["fieldSelector"] == "metadata.name=lora-a-trainer-0"
        assert fake_kube.requests[-1][1] == "/api/v1/namespaces/openrl/pods"

        by_model = await source.pods_by_model(["lora-a", "no such,model", "lora-b"])
        assert [len(m.items) for m in by_model] == [1, 0, 1] and all(m.degraded for m in by_model)
        assert last_query(fake_kube, "pods")["labelSelector"] == (
            "openrl.ai/model-id in (lora-a,lora-b)"
        )

        (claims,) = await source.claims_for_pods([TRAINER])
        assert claims.degraded and claims.items[0].reserved_pods[0].name == TRAINER.name
        gpus = await source.list_gpus(node_name="gpu-h200-1")
        assert len(gpus.items) == 8 and gpus.degraded
        assert (
            last_query(fake_kube, "resourceslices")["fieldSelector"] == "spec.nodeName=gpu-h200-1"
        )
        (pending,) = await source.workloads_by_model(["lora-b"])
        assert pending.items[0].condition("QuotaReserved") is not None
        # Workloads by model read the model's pods too: they link unlabelled Workloads.
        assert source.direct_reads["pods"] == 5
        assert source.direct_reads["jobs"] > 0 and source.direct_reads["jobsets"] > 0

        await source.start()
        assert await source.wait_synced(10)
        lists = fake_kube.count("list", "pods")
        listing = await source.list_pods(model_id="lora-b")
        assert not listing.degraded and len(listing.items) == 1
        assert fake_kube.count("list", "pods") == lists and source.direct_reads["pods"] == 5


@pytest.mark.anyio
async def test_direct_reads_are_bounded(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with unstarted_source(fake_kube, tmp_path, max_direct_read=2) as source:
        nodes = await source.list_nodes(limit=10)
        assert nodes.truncated and nodes.degraded and len(nodes.items) == 2
        assert last_query(fake_kube, "nodes")["limit"] == "2"
        field = await source.list_pods(node_name="gpu-h100-1", limit=10)
        assert not field.truncated and [p.key for p in field.items] == [TRAINER]


@pytest.mark.anyio
async def test_field_selector_values_are_escaped(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with unstarted_source(fake_kube, tmp_path) as source:
        (missing,) = await source.get_nodes(["gpu-h100-1,metadata.name!=x"])
        assert missing is None
        assert unquote(last_query(fake_kube, "nodes")["fieldSelector"]) == (
            "metadata.name=gpu-h100-1\\,metadata.name!\\=x"
        )


@pytest.mark.anyio
async def test_server_down_is_backend_unavailable(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.stop()
    async with unstarted_source(fake_kube, tmp_path) as source:
        with pytest.raises(BackendUnavailable) as caught:
            await source.list_pods()
    assert caught.value.backend == "kubernetes" and caught.value.code == "BACKEND_UNAVAILABLE"
    assert "127.0.0.1" not in str(caught.value) and str(fake_kube.port) not in str(caught.value)

    async with open_kubernetes(kube_settings(fake_kube, tmp_path)) as source:
        assert not await source.wait_synced(0.3)
        status = await source.status()
        assert not status.ready and status.degraded
        assert all(k.last_error for k in status.kinds)


@pytest.mark.anyio
async def test_slow_server_is_backend_timeout(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.put(*kube_objects.cluster())
    fake_kube.delay_s = 2.0
    async with unstarted_source(fake_kube, tmp_path, request_timeout_s=0.2) as source:
        with pytest.raises(BackendTimeout) as caught:
            await source.get_nodes(["gpu-h100-1"])
    assert caught.value.backend == "kubernetes" and "list nodes" in caught.value.message


@pytest.mark.anyio
@pytest.mark.parametrize(("code", "words"), [(403, "access denied"), (503, "HTTP 503")])
async def test_refusals_are_backend_unavailable(
    fake_kube: FakeKube, tmp_path: Path, code: int, words: str
) -> None:
    fake_kube.put(*kube_objects.cluster())
    fake_kube.failures["pods"] = code
    async with unstarted_source(fake_kube, tmp_path) as source:
        with pytest.raises(BackendUnavailable, match=words):
            await source.list_pods()
        assert (await source.get_nodes(["cpu-1"]))[0] is not None


@pytest.mark.anyio
async def test_dra_served_only_at_v1beta1(fake_kube: FakeKube, tmp_path: Path) -> None:
    fake_kube.served["resource.k8s.io"] = ("v1beta1",)
    fake_kube.put(
        *[o for o in kube_objects.cluster() if not o["apiVersion"].startswith("resource.k8s.io/")],
        kube_objects.h100_slice(version="v1beta1"),
        kube_objects.h200_slice(version="v1beta1"),
        kube_objects.allocated_claim(version="v1beta1"),
    )
    async with synced_source(fake_kube, tmp_path) as source:
        gpus = await source.list_gpus(node_name="gpu-h100-1")
        assert [g.index for g in gpus.items] == list(range(8))
        assert {g.product_name for g in gpus.items} == {kube_objects.H100}
        assert {g.memory_bytes for g in gpus.items} == {80 * 2**30}
        (claims,) = await source.claims_for_pods([TRAINER])
        assert claims.items[0].requests[0].count == 8
        dra_paths = {p for _, p, _ in fake_kube.requests if "resource.k8s.io" in p}
        assert dra_paths == {
            "/apis/resource.k8s.io/v1beta1/resourceslices",
            "/apis/resource.k8s.io/v1beta1/resourceclaims",
        }


@pytest.mark.anyio
async def test_cluster_without_kueue(fake_kube: FakeKube, tmp_path: Path) -> None:
    del fake_kube.served["kueue.x-k8s.io"]
    fake_kube.put(*[o for o in kube_objects.cluster() if o["kind"] != "Workload"])
    async with synced_source(fake_kube, tmp_path) as source:
        status = await source.status()
        workloads = status.kind("workloads")
        assert workloads is not None and not workloads.served
        assert status.ready and not status.degraded
        listing = await source.list_workloads()
        assert listing.items == () and not listing.degraded
        assert len((await source.list_pods()).items) == 2


def test_settings_from_the_environment() -> None:
    settings = load_settings(
        {
            "OPENRL_INSPECT_KUBERNETES_NAMESPACES": "openrl, research",
            "OPENRL_INSPECT_KUBERNETES_REQUEST_TIMEOUT_S": "3.5",
            "OPENRL_INSPECT_KUBERNETES_IN_CLUSTER": "true",
        },
        {"context": "prod", "max_direct_read": None},
    )
    assert settings.namespaces == ("openrl", "research") and settings.request_timeout_s == 3.5
    assert settings.in_cluster and settings.context == "prod" and settings.max_direct_read == 500
    with pytest.raises(SettingsError):
        load_settings({"OPENRL_INSPECT_KUBERNETES_LIST_PAGE_SIZE": "0"})
    with pytest.raises(SettingsError):
        load_settings({"OPENRL_INSPECT_KUBERNETES_WATCH_TIMEOUT_S": "0"})


@pytest.mark.anyio
async def test_unloadable_kubeconfig_is_backend_unavailable(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text("not: [a kubeconfig")
    with pytest.raises(BackendUnavailable, match="configuration"):
        async with open_kubernetes(load_settings({}, {"kubeconfig": str(tmp_path / "kubeconfig")})):
            pass

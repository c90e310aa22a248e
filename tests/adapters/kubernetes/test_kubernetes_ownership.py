"""Workloads without model labels: found by ownership, as Kueue, Job and JobSet link them.

The objects (``support.kube_owned``) carry no model label on any Workload, the JobSet's
Job and pod carry none either: only the JobSet and the suspended Job are labelled. Read
through the official client from ``FakeKube`` and through the parsers into the twin.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from openrl_inspect.adapters.kubernetes import KubernetesSource, ObjectKey
from openrl_inspect.adapters.kubernetes._pods import parse_pod
from openrl_inspect.adapters.kubernetes._workloads import parse_job, parse_workload
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from support import kube_owned as owned
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import synced_source

__all__ = ["fake_kube"]

pytestmark = pytest.mark.anyio

POD_C = ObjectKey("openrl", owned.POD_C)
WORKLOAD_C = ObjectKey("openrl", owned.WORKLOAD_C)
WORKLOAD_D = ObjectKey("openrl", owned.WORKLOAD_D)


def twin() -> MemoryKubernetesSource:
    source = MemoryKubernetesSource()
    source.put(
        parse_job(owned.jobset_c(), "JobSet"),  # type: ignore[arg-type]
        parse_job(owned.child_job_c(), "Job"),  # type: ignore[arg-type]
        parse_job(owned.job_d(), "Job"),  # type: ignore[arg-type]
        parse_pod(owned.pod_c()),  # type: ignore[arg-type]
        parse_workload(owned.workload_c()),  # type: ignore[arg-type]
        parse_workload(owned.workload_d()),  # type: ignore[arg-type]
    )
    return source


def test_parsers_keep_the_links() -> None:
    w = parse_workload(owned.workload_c())
    assert w is not None and w.model_id is None
    assert w.job_uids == (owned.JOBSET_UID,) and w.owners[0].kind == "JobSet"
    pod = parse_pod(owned.pod_c())
    assert pod is not None and pod.model_id is None
    assert pod.job_uids == (owned.CHILD_JOB_UID, owned.JOBSET_UID)
    child = parse_job(owned.child_job_c(), "Job")
    assert child is not None and child.owner_uids == (owned.JOBSET_UID,)
    job = parse_job(owned.job_d(), "Job")
    assert job is not None and job.suspended and job.model_id == "lora-d"


async def check_links(source: KubernetesSource) -> None:
    c, d, none = await source.workloads_by_model(["lora-c", "lora-d", "lora-x"])
    assert [w.key for w in c.items] == [WORKLOAD_C] and c.items[0].model_id == "lora-c"
    assert [w.key for w in d.items] == [WORKLOAD_D] and d.items[0].model_id == "lora-d"
    assert none.items == ()
    (pods_c,) = await source.pods_by_model(["lora-c"])
    assert [p.key for p in pods_c.items] == [POD_C] and pods_c.items[0].model_id == "lora-c"
    listing = await source.list_pods(model_id="lora-c")
    assert [p.key for p in listing.items] == [POD_C]
    everything = await source.list_workloads()
    assert {w.name: w.model_id for w in everything.items} == {
        owned.WORKLOAD_C: "lora-c",
        owned.WORKLOAD_D: "lora-d",
    }
    of_c, of_d = await source.pods_for_workloads([WORKLOAD_C, WORKLOAD_D])
    assert [p.key for p in of_c.items] == [POD_C] and of_d.items == ()
    got_c, missing = await source.get_workloads([WORKLOAD_C, ObjectKey("openrl", "nope")])
    assert got_c is not None and got_c.model_id == "lora-c" and missing is None
    (pod,) = await source.get_pods([POD_C])
    assert pod is not None and pod.model_id == "lora-c"


async def test_ownership_links_in_the_twin() -> None:
    await check_links(twin())


async def test_ownership_links_through_the_official_client(
    fake_kube: FakeKube, tmp_path: Path
) -> None:
    fake_kube.put(*owned.owned_cluster())
    async with synced_source(fake_kube, tmp_path) as source:
        await check_links(source)


async def test_a_label_wins_over_ownership() -> None:
    """A pod labelled with another model is not pulled in by its job."""
    source = twin()
    stray = owned.pod_c()
    stray["metadata"]["name"] = "stray"
    stray["metadata"]["labels"]["openrl.ai/model-id"] = "lora-z"
    source.put(parse_pod(stray))  # type: ignore[arg-type]
    (pods_c,) = await source.pods_by_model(["lora-c"])
    assert [p.name for p in pods_c.items] == [owned.POD_C]
    (pods_z,) = await source.pods_by_model(["lora-z"])
    assert [p.name for p in pods_z.items] == ["stray"]


async def test_owner_labels_naming_each_other_do_not_loop() -> None:
    """Labels are set by anyone: two Jobs naming each other as owners end the walk."""
    source = twin()
    for name, other in (("a", "b"), ("b", "a")):
        job = owned.job_d()
        job["metadata"].update(name=f"loop-{name}", uid=f"uid-loop-{name}",
                               labels={"jobset.sigs.k8s.io/jobset-uid": f"uid-loop-{other}"})  # fmt: skip
        source.put(parse_job(job, "Job"))  # type: ignore[arg-type]
    pod = owned.pod_c()
    pod["metadata"].update(name="loop-pod", uid="uid-loop-pod",
                           labels={"batch.kubernetes.io/controller-uid": "uid-loop-a"})  # fmt: skip
    pod["metadata"]["ownerReferences"] = []
    source.put(parse_pod(pod))  # type: ignore[arg-type]
    (found,) = await source.get_pods([ObjectKey("openrl", "loop-pod")])
    assert found is not None and found.model_id is None
    (pods_c,) = await source.pods_by_model(["lora-c"])
    assert [p.name for p in pods_c.items] == [owned.POD_C]


async def test_links_never_leave_their_namespace() -> None:
    """A pod elsewhere carrying the model's job UID label is not the model's."""
    source = twin()
    spoof = owned.pod_c()
    spoof["metadata"].update(namespace="evil", name="spoof", uid="uid-spoof")
    source.put(parse_pod(spoof))  # type: ignore[arg-type]
    (pods_c,) = await source.pods_by_model(["lora-c"])
    assert [p.key for p in pods_c.items] == [POD_C]
    (found,) = await source.get_pods([ObjectKey("evil", "spoof")])
    assert found is not None and found.model_id is None


async def test_a_plain_pod_workload_links_to_its_pod() -> None:
    """Kueue's pod integration: the Workload is owned by the pod itself."""
    source = MemoryKubernetesSource()
    pod = owned.pod_c()
    pod["metadata"].update(name="solo", uid="uid-solo", labels={"openrl.ai/model-id": "lora-p"})
    pod["metadata"]["ownerReferences"] = []
    wl = owned.workload_d()
    wl["metadata"].update(name="pod-solo-1a2b3", labels={"kueue.x-k8s.io/job-uid": "uid-solo"},
                          ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "solo",
                                            "uid": "uid-solo", "controller": True}])  # fmt: skip
    source.put(parse_pod(pod), parse_workload(wl))  # type: ignore[arg-type]
    (wls,) = await source.workloads_by_model(["lora-p"])
    assert [w.name for w in wls.items] == ["pod-solo-1a2b3"] and wls.items[0].model_id == "lora-p"
    (pods,) = await source.pods_for_workloads([ObjectKey("openrl", "pod-solo-1a2b3")])
    assert [p.name for p in pods.items] == ["solo"]

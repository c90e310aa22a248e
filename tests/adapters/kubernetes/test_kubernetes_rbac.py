"""``deploy/base/inspector/rbac.yaml`` grants exactly what the Kubernetes adapter reads, and nothing else.

The expected grants come from the adapter's own ``WATCHED_RESOURCES`` (get/list/watch),
plus ``pods/log`` (get only) for the logs feature; a second check records the requests a
real sync makes against ``FakeKube`` and finds each one granted. Adding a resource to the
adapter without the manifest (or the reverse) fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from openrl_inspect.adapters.kubernetes import READ_VERBS, WATCHED_RESOURCES
from support import kube_objects
from support.fake_kube import FakeKube, fake_kube
from support.kube_harness import synced_source
from support.tree import ROOT

__all__ = ["fake_kube"]  # the fixture, used by name below

MANIFEST = ROOT / "deploy" / "base" / "inspector" / "rbac.yaml"
# Granted for features outside the watch cache: the pod-logs reader.
OTHER_READS = {("", "pods/log"): {"get"}}


def documents() -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs) == 3, "one ServiceAccount, ClusterRole, ClusterRoleBinding"
    return by_kind


def granted() -> dict[tuple[str, str], set[str]]:
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in documents()["ClusterRole"]["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, f"unexpected keys in {rule}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                grants.setdefault((group, resource), set()).update(rule["verbs"])
    return grants


def expected() -> dict[tuple[str, str], set[str]]:
    wanted = {(r.group, r.resource): set(READ_VERBS) for r in WATCHED_RESOURCES}
    wanted.update(OTHER_READS)
    return wanted


def test_cluster_role_grants_exactly_the_adapters_reads() -> None:
    assert set(READ_VERBS) == {"get", "list", "watch"}
    assert granted() == expected()


def test_nothing_is_writable_or_wildcarded() -> None:
    text = MANIFEST.read_text()
    assert "*" not in text
    for verbs in granted().values():
        assert verbs <= {"get", "list", "watch"}


def test_binding_ties_the_role_to_the_service_account() -> None:
    docs = documents()
    account, role, binding = docs["ServiceAccount"], docs["ClusterRole"], docs["ClusterRoleBinding"]
    assert account["metadata"]["name"] == "openrl-inspect"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": account["metadata"]["name"],
            "namespace": account["metadata"]["namespace"],
        }
    ]


def _resource_of(path: str) -> tuple[str, str]:
    """(group, resource) of a collection path such as /apis/g/v/namespaces/ns/plural."""
    parts = [p for p in path.split("/") if p]
    group = "" if parts[0] == "api" else parts[1]
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest and rest[0] == "namespaces":
        rest = rest[2:]
    return group, rest[0]


@pytest.mark.anyio
@pytest.mark.parametrize("namespaces", [(), ("openrl",)])
async def test_every_request_of_a_sync_is_granted(
    fake_kube: FakeKube, tmp_path: Path, namespaces: tuple[str, ...]
) -> None:
    fake_kube.put(*kube_objects.cluster())
    async with synced_source(fake_kube, tmp_path, namespaces=namespaces) as source:
        await source.list_pods()
    grants = granted()
    used = {(verb, _resource_of(path)) for verb, path, _ in fake_kube.requests}
    assert {resource for _, resource in used} == {(r.group, r.resource) for r in WATCHED_RESOURCES}
    for verb, resource in used:
        assert verb in grants.get(resource, set()), f"{verb} {resource} is not granted"

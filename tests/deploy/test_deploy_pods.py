"""What the rendered overlay runs: every container probed and bounded, the inspector
and tracker locked down (non-root, read-only root filesystem, no capabilities, seccomp),
replicated and spread, and started with arguments and settings the code knows."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from openrl_inspect.adapters.cloud_logging import CloudLoggingSettings
from openrl_inspect.adapters.prometheus import PrometheusSettings
from openrl_inspect.adapters.redis import RedisSettings
from openrl_inspect.auth import AuthSettings
from openrl_inspect.cli import main as cli
from openrl_inspect.core.settings import Bounds, Switches, Thresholds
from openrl_inspect.telemetry import MetricsSettings
from openrl_inspect.tracker.leader import ElectionSettings
from openrl_inspect.tracker.run import TrackerSettings
from support.deploy_manifests import (
    BASE,
    GKE,
    INSPECTOR,
    TRACKER,
    find,
    only_container,
    pod_spec,
    rendered,
    workloads,
)
from support.kustomize import containers
from support.tree import ROOT

RENDERINGS = [BASE, GKE]
OURS = (INSPECTOR, TRACKER)
# Every OPENRL_INSPECT_* variable a manifest sets must name a field of one of these.
SETTINGS: dict[str, type[Any]] = {
    "OPENRL_INSPECT_REDIS_": RedisSettings,
    "OPENRL_INSPECT_AUTH_": AuthSettings,
    "OPENRL_INSPECT_LIMITS_": Bounds,
    "OPENRL_INSPECT_JUDGEMENT_": Thresholds,
    "OPENRL_INSPECT_METRICS_": MetricsSettings,
    "OPENRL_INSPECT_TRACKER_": TrackerSettings,
    "OPENRL_INSPECT_LEADER_": ElectionSettings,
    "OPENRL_INSPECT_PROMETHEUS_": PrometheusSettings,
    "OPENRL_INSPECT_CLOUD_LOGGING_": CloudLoggingSettings,
    # Last: the shortest prefix, taken only when no other matches.
    "OPENRL_INSPECT_": Switches,
}


@pytest.mark.parametrize("where", RENDERINGS, ids=lambda p: p.name)
def test_every_container_has_probes_and_limits(where: Any) -> None:
    for doc in workloads(rendered(where)):
        for c in containers(doc):
            name = f"{doc['metadata']['name']}/{c['name']}"
            assert "livenessProbe" in c and "readinessProbe" in c, name
            resources = c["resources"]
            assert resources["requests"]["cpu"] and resources["requests"]["memory"], name
            assert resources["limits"]["memory"], name


@pytest.mark.parametrize("where", RENDERINGS, ids=lambda p: p.name)
@pytest.mark.parametrize("name", OURS)
def test_our_pods_are_restricted(where: Any, name: str) -> None:
    doc = find(rendered(where), "Deployment", name)
    pod = pod_spec(doc)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID")
    assert not any("hostPath" in v for v in pod.get("volumes", []))
    c = only_container(doc)
    assert c["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    # The root filesystem is read-only: /tmp is the one writable place.
    writable = [m for m in c["volumeMounts"] if not m.get("readOnly")]
    assert [m["mountPath"] for m in writable] == ["/tmp"]
    assert pod["serviceAccountName"] == name


def test_the_exporter_is_the_one_privileged_pod_and_says_why() -> None:
    docs = rendered(GKE)
    exporter = find(docs, "DaemonSet", "dcgm-exporter")
    assert exporter["metadata"]["namespace"] == "dcgm-exporter"
    context = only_container(exporter)["securityContext"]
    assert context["capabilities"] == {"add": ["SYS_ADMIN"]}
    assert context["allowPrivilegeEscalation"] is False
    privileged = [
        d["metadata"]["name"]
        for d in workloads(docs)
        if any(
            c.get("securityContext", {}).get("capabilities", {}).get("add") for c in containers(d)
        )
    ]
    assert privileged == ["dcgm-exporter"]


def test_the_exporter_runs_on_every_gpu_node_pool() -> None:
    pod = pod_spec(find(rendered(GKE), "DaemonSet", "dcgm-exporter"))
    # GKE taints GPU nodes nvidia.com/gpu=present:NoSchedule and labels them with the
    # accelerator type (any type: the term asks only that the label exists).
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {"key": "cloud.google.com/gke-accelerator", "operator": "Exists"} in [
        e for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"]
    ]


def test_the_inspector_is_replicated_spread_and_protected() -> None:
    docs = rendered(GKE)
    deployment = find(docs, "Deployment", INSPECTOR)
    assert deployment["spec"]["replicas"] >= 2
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    spread = pod_spec(deployment)["topologySpreadConstraints"]
    assert {s["topologyKey"] for s in spread} == {
        "topology.kubernetes.io/zone",
        "kubernetes.io/hostname",
    }
    assert all(s["labelSelector"]["matchLabels"].items() <= labels.items() for s in spread)
    budget = find(docs, "PodDisruptionBudget", INSPECTOR)
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert 1 <= budget["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_probes_point_at_the_apps_own_paths() -> None:
    from openrl_inspect.web.app import PREFIX

    c = only_container(find(rendered(GKE), "Deployment", INSPECTOR))
    assert c["readinessProbe"]["httpGet"]["path"] == f"{PREFIX}/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == f"{PREFIX}/healthz"
    ports = {p["name"] for p in c["ports"]}
    assert c["readinessProbe"]["httpGet"]["port"] in ports


def test_the_tracker_campaigns_and_its_probe_reads_its_heartbeat() -> None:
    doc = find(rendered(GKE), "Deployment", TRACKER)
    assert doc["spec"]["replicas"] >= 2
    c = only_container(doc)
    assert "--leader-elect" in c["args"]
    env = {e["name"]: e for e in c["env"]}
    beat = env["OPENRL_INSPECT_TRACKER_HEARTBEAT_FILE"]["value"]
    assert beat in c["livenessProbe"]["exec"]["command"][-1]
    assert (
        env["OPENRL_INSPECT_LEADER_IDENTITY"]["valueFrom"]["fieldRef"]["fieldPath"]
        == "metadata.name"
    )


@pytest.mark.parametrize("where", RENDERINGS, ids=lambda p: p.name)
@pytest.mark.parametrize("name", OURS)
def test_arguments_and_settings_are_ones_the_code_knows(where: Any, name: str) -> None:
    c = only_container(find(rendered(where), "Deployment", name))
    cli.parser().parse_args(c["args"])  # exits (SystemExit) on an unknown flag
    for var in c["env"]:
        if not var["name"].startswith("OPENRL_INSPECT_"):
            continue
        prefix = next((p for p in SETTINGS if var["name"].startswith(p)), None)
        assert prefix is not None, var["name"]
        fields = {f.name for f in dataclasses.fields(SETTINGS[prefix])}
        assert var["name"].removeprefix(prefix).lower() in fields, var["name"]


def test_images_are_set_by_the_overlay() -> None:
    for doc in workloads(rendered(GKE)):
        for c in containers(doc):
            assert ":" in c["image"].rsplit("/", 1)[-1] or "@sha256:" in c["image"], c["image"]
    inspector = only_container(find(rendered(GKE), "Deployment", INSPECTOR))
    assert inspector["image"].startswith("us-docker.pkg.dev/")


CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}


@pytest.mark.parametrize("where", RENDERINGS, ids=lambda p: p.name)
def test_every_namespaced_object_names_its_namespace(where: Any) -> None:
    """No namespace transformer is used: an object without one would land in the
    namespace of whoever applies it."""
    docs = rendered(where)
    declared = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    for doc in docs:
        namespace = doc["metadata"].get("namespace")
        if doc["kind"] in CLUSTER_SCOPED:
            assert namespace is None, doc["metadata"]
        else:
            assert namespace in declared, (doc["kind"], doc["metadata"]["name"], namespace)


def test_every_config_map_is_in_the_overlay_and_every_secret_documented() -> None:
    docs = rendered(GKE)
    maps = {
        (d["metadata"]["namespace"], d["metadata"]["name"])
        for d in docs
        if d["kind"] == "ConfigMap"
    }
    guide = (ROOT / "docs" / "deploy.md").read_text()
    for doc in workloads(docs):
        namespace = doc["metadata"]["namespace"]
        for volume in pod_spec(doc).get("volumes", []):
            if "configMap" in volume:
                assert (namespace, volume["configMap"]["name"]) in maps, volume
            if "secret" in volume:
                # Created by the operator (never kept here): docs/deploy.md says how.
                assert f"create secret generic {volume['secret']['secretName']} " in guide, volume
    policy = find(docs, "GCPBackendPolicy", INSPECTOR)
    assert (
        f"create secret generic {policy['spec']['default']['iap']['oauth2ClientSecret']['name']} "
        in guide
    )

"""The DCGM exporter manifests and scrape config agree with what the GPU layer reads."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from openrl_inspect.adapters.prometheus import _gpu
from support.prometheus_server import PROMTOOL, require_prometheus
from support.tree import ROOT

DEPLOY = ROOT / "deploy"


# Where each file lives under deploy/ (the exporter is part of the kustomize base).
PATHS = {
    "dcgm-exporter.yaml": DEPLOY / "base" / "dcgm-exporter" / "dcgm-exporter.yaml",
    "prometheus-scrape.yaml": DEPLOY / "prometheus-scrape.yaml",
}


def _docs(name: str) -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(PATHS[name].read_text()) if d]
    return {d["kind"]: d for d in docs}


def test_exporter_exports_every_metric_the_layer_reads() -> None:
    docs = _docs("dcgm-exporter.yaml")
    assert set(docs) == {"Namespace", "ConfigMap", "DaemonSet", "Service", "PodMonitoring"}
    csv = docs["ConfigMap"]["data"]["counters.csv"]
    fields = {
        line.split(",")[0].strip()
        for line in csv.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }
    used = {m for m in _gpu.CHART_METRICS | _gpu.LATEST_METRICS if m != _gpu.DUTY}
    assert used <= fields, used - fields
    for line in csv.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            assert line.split(",")[1].strip() in {"gauge", "counter"}


def test_daemonset_runs_on_gpu_nodes_with_node_hostname() -> None:
    docs = _docs("dcgm-exporter.yaml")
    pod = docs["DaemonSet"]["spec"]["template"]["spec"]
    assert any(t["key"] == "nvidia.com/gpu" for t in pod["tolerations"])
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    keys = {e["key"] for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"]}
    assert {"cloud.google.com/gke-accelerator", "nvidia.com/gpu.present"} <= keys
    [container] = pod["containers"]
    assert container["image"].startswith("nvcr.io/nvidia/k8s/dcgm-exporter:")
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert 'hostname "$NODE_NAME"' in container["args"][0]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/etc/dcgm-exporter/counters.csv" in mounts
    assert "--collectors /etc/dcgm-exporter/counters.csv" in container["args"][0]
    assert "SYS_ADMIN" in container["securityContext"]["capabilities"]["add"]


def test_scrapers_select_the_exporter() -> None:
    docs = _docs("dcgm-exporter.yaml")
    pod_labels = docs["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
    ports = {
        p["name"] for p in docs["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]["ports"]
    }
    pm = docs["PodMonitoring"]
    assert pm["apiVersion"] == "monitoring.googleapis.com/v1"
    assert pm["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert {e["port"] for e in pm["spec"]["endpoints"]} <= ports
    svc = docs["Service"]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    scrape = yaml.safe_load(PATHS["prometheus-scrape.yaml"].read_text())
    jobs = {j["job_name"]: j for j in scrape["scrape_configs"]}
    assert jobs["dcgm-exporter"]["honor_labels"] is True
    assert jobs["dcgm-exporter"]["kubernetes_sd_configs"][0]["namespaces"]["names"] == [
        svc["metadata"]["namespace"]
    ]


@pytest.mark.prometheus
def test_scrape_config_passes_promtool(tmp_path: Path) -> None:
    """promtool checks everything but Kubernetes discovery, which Debian's build
    leaves out; it is swapped for a static target here."""
    require_prometheus()
    scrape = yaml.safe_load(PATHS["prometheus-scrape.yaml"].read_text())
    for job in scrape["scrape_configs"]:
        assert job.pop("kubernetes_sd_configs")
        job["static_configs"] = [{"targets": ["127.0.0.1:9400"]}]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(scrape))
    out = subprocess.run(
        [PROMTOOL, "check", "config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("name", ["dcgm-exporter.yaml", "prometheus-scrape.yaml"])
def test_manifests_are_plain_yaml(name: str) -> None:
    text = PATHS[name].read_text()
    assert "\t" not in text
    assert list(yaml.safe_load_all(text))

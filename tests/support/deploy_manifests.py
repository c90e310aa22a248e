"""The manifests under deploy/, loaded once for the deploy tests."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import yaml

from support.kustomize import Doc, containers, documents, render
from support.tree import ROOT

DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "base"
GKE = DEPLOY / "overlays" / "gke"
EXAMPLES = DEPLOY / "examples"
SCHEMAS = DEPLOY / "schemas"
KUBERNETES_VERSION = "1.33"
INSPECTOR, TRACKER, NAMESPACE = "openrl-inspect", "openrl-inspect-tracker", "openrl-inspect"


@functools.cache
def rendered(directory: Path) -> tuple[Doc, ...]:
    return tuple(render(directory))


def patch_files() -> set[Path]:
    """The strategic-merge patches the kustomizations name (partial objects)."""
    found: set[Path] = set()
    for kustomization in DEPLOY.rglob("kustomization.yaml"):
        spec = yaml.safe_load(kustomization.read_text())
        found.update((kustomization.parent / p["path"]).resolve() for p in spec.get("patches", []))
    return found


def manifest_files() -> list[Path]:
    """Every whole Kubernetes manifest kept in deploy/ (not kustomizations, patches,
    schemas or the plain Prometheus configuration)."""
    patches = patch_files()
    return sorted(
        p
        for p in DEPLOY.rglob("*.yaml")
        if p.name not in ("kustomization.yaml", "prometheus-scrape.yaml")
        and p.resolve() not in patches
    )


def every_document() -> list[tuple[str, Doc]]:
    """(where, document) for each file's documents and each rendering's output."""
    out = [(str(p.relative_to(DEPLOY)), d) for p in manifest_files() for d in documents(p)]
    for kustomization in (BASE, GKE):
        name = f"kustomize {kustomization.relative_to(DEPLOY)}"
        out.extend((name, d) for d in rendered(kustomization))
    return out


def find(docs: tuple[Doc, ...] | list[Doc], kind: str, name: str) -> Doc:
    [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def pod_spec(doc: Doc) -> Doc:
    spec: Doc = doc["spec"]["template"]["spec"]
    return spec


def workloads(docs: tuple[Doc, ...]) -> list[Doc]:
    return [d for d in docs if d["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job")]


def only_container(doc: Doc) -> Doc:
    [container] = containers(doc)
    return container


# -- custom resources against the CRDs' published schemas ----------------------------


def _strict(schema: Any) -> Any:
    """The CRD schema as `kubectl apply` (field validation Strict) holds objects to it:
    a field the schema does not name is an error, not silently pruned."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            out.get("type") == "object"
            and "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@functools.cache
def crd_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    group, _, version = api_version.rpartition("/")
    path = SCHEMAS / f"{group}_{version}_{kind.lower()}.json"
    if not path.exists():
        return None
    schema: dict[str, Any] = _strict(json.loads(path.read_text()))
    return copy.deepcopy(schema)

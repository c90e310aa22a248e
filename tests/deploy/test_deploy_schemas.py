"""Every manifest, and what each kustomization renders, is valid offline: built-in kinds
against Kubernetes 1.33's OpenAPI schemas (``kubernetes-validate``, strict: an unknown
field fails), custom resources against their CRDs' published schemas kept in
deploy/schemas/ (PodMonitoring, Gateway, HTTPRoute, GCPBackendPolicy, HealthCheckPolicy)."""

from __future__ import annotations

from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from support.deploy_manifests import (
    KUBERNETES_VERSION,
    SCHEMAS,
    crd_schema,
    every_document,
    manifest_files,
)
from support.kustomize import Unsupported, documents, render

DOCUMENTS = every_document()


@pytest.mark.parametrize(
    ("where", "doc"),
    DOCUMENTS,
    ids=[f"{w}:{d['kind']}/{d['metadata']['name']}" for w, d in DOCUMENTS],
)
def test_document_is_valid(where: str, doc: dict[str, Any]) -> None:
    schema = crd_schema(doc["apiVersion"], doc["kind"])
    if schema is not None:
        jsonschema.Draft202012Validator(schema).validate(doc)
        return
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        pytest.fail(f"{where}: {doc['apiVersion']} {doc['kind']} has no schema, built in or kept")


def test_the_kept_schemas_are_exactly_the_custom_kinds_used() -> None:
    used = {(d["apiVersion"], d["kind"]) for _, d in DOCUMENTS}
    custom = {k for k in used if crd_schema(*k) is not None}
    kept = {p.stem for p in SCHEMAS.glob("*.json")}
    assert kept == {f"{a.rpartition('/')[0]}_{a.rpartition('/')[2]}_{k.lower()}" for a, k in custom}
    assert {k for _, k in custom} == {
        "PodMonitoring",
        "Gateway",
        "HTTPRoute",
        "GCPBackendPolicy",
        "HealthCheckPolicy",
    }


def test_validation_can_fail() -> None:
    """The validators reject what the API server would: a misspelt field in a built-in
    kind and in a custom resource, a wrong type."""
    deployment = next(d for _, d in DOCUMENTS if d["kind"] == "Deployment")
    bad = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSION, strict=True)
    monitor = next(d for _, d in DOCUMENTS if d["kind"] == "PodMonitoring")
    schema = crd_schema(monitor["apiVersion"], monitor["kind"])
    assert schema is not None
    endpoint = {**monitor["spec"]["endpoints"][0], "intervall": "30s"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {**monitor, "spec": {**monitor["spec"], "endpoints": [endpoint]}}, schema
        )
    policy = next(d for _, d in DOCUMENTS if d["kind"] == "GCPBackendPolicy")
    schema = crd_schema(policy["apiVersion"], policy["kind"])
    assert schema is not None
    wrong = {**policy, "spec": {**policy["spec"], "default": {"iap": {"enabled": "yes"}}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, schema)


def test_manifests_are_plain_yaml_files() -> None:
    assert manifest_files()
    for path in manifest_files():
        assert "\t" not in path.read_text(), path
        assert documents(path), path


def test_the_loader_refuses_what_it_does_not_render(tmp_path: Any) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\nconfigMapGenerator: []\n")
    with pytest.raises(Unsupported):
        render(tmp_path)

"""Who may do what: each process its own ServiceAccount with exactly the verbs its code
uses (derived from the code, so code and RBAC cannot drift), nothing writable that is
not needed, and one path in from outside (the load balancer, through IAP) that leaves
the metrics out."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from openrl_inspect.adapters.kubernetes import LEASE_VERBS, LOG_READS, READ_VERBS, WATCHED_RESOURCES
from openrl_inspect.tracker.leader import ElectionSettings
from openrl_inspect.web.app import PREFIX
from support.deploy_manifests import (
    EXAMPLES,
    GKE,
    INSPECTOR,
    NAMESPACE,
    TRACKER,
    find,
    pod_spec,
    rendered,
)
from support.kustomize import documents

Grants = dict[tuple[str, str, str | None], set[str]]
WATCHED: Grants = {(r.group, r.resource, None): set(READ_VERBS) for r in WATCHED_RESOURCES}
WRITE_VERBS = {
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "escalate",
    "bind",
    "impersonate",
}
# Google front ends: where a container-native load balancer's requests and health
# checks come from.
GFE = {ipaddress.ip_network("35.191.0.0/16"), ipaddress.ip_network("130.211.0.0/22")}


def grants(role: dict[str, Any]) -> Grants:
    out: Grants = {}
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs", "resourceNames"}, rule
        names = rule.get("resourceNames") or [None]
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for name in names:
                    out.setdefault((group, resource, name), set()).update(rule["verbs"])
    return out


def bound_roles(docs: tuple[dict[str, Any], ...], account: str) -> list[dict[str, Any]]:
    """The roles bound to ``account`` (any namespace's binding, or cluster-wide)."""
    roles = []
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        subjects = binding["subjects"]
        if not any(s["kind"] == "ServiceAccount" and s["name"] == account for s in subjects):
            continue
        ref = binding["roleRef"]
        roles.append(find(docs, ref["kind"], ref["name"]))
    return roles


def everything_granted(account: str) -> Grants:
    total: Grants = {}
    for role in bound_roles(rendered(GKE), account):
        for key, verbs in grants(role).items():
            total.setdefault(key, set()).update(verbs)
    return total


def test_the_inspector_reads_exactly_what_its_code_reads() -> None:
    wanted = dict(WATCHED)
    wanted.update({(g, r, None): set(v) for g, r, v in LOG_READS})
    assert everything_granted(INSPECTOR) == wanted


def test_the_tracker_reads_its_kinds_and_writes_only_its_lease() -> None:
    lease = ElectionSettings(identity="x").lease_name
    [(group, resource, verbs)] = LEASE_VERBS
    wanted = dict(WATCHED)
    # create cannot be limited by name (the object does not exist yet); the rest can.
    wanted[group, resource, None] = {"create"}
    wanted[group, resource, lease] = set(verbs) - {"create"}
    assert everything_granted(TRACKER) == wanted
    role = next(r for r in bound_roles(rendered(GKE), TRACKER) if r["kind"] == "Role")
    assert role["metadata"]["namespace"] == NAMESPACE == ElectionSettings(identity="x").namespace


def test_each_process_has_its_own_account() -> None:
    docs = rendered(GKE)
    accounts = {
        pod_spec(find(docs, "Deployment", n))["serviceAccountName"] for n in (INSPECTOR, TRACKER)
    }
    assert accounts == {INSPECTOR, TRACKER}
    for account in accounts:
        find(docs, "ServiceAccount", account)
    examples = [
        d
        for d in documents(EXAMPLES / "openrl-service-accounts.yaml")
        if d["kind"] == "ServiceAccount"
    ]
    assert {d["metadata"]["name"] for d in examples} == {"openrl-api", "openrl-scheduler"}


@pytest.mark.parametrize("source", ["gke", "examples"])
def test_nothing_writable_that_is_not_needed(source: str) -> None:
    docs = (
        list(rendered(GKE))
        if source == "gke"
        else documents(EXAMPLES / "openrl-service-accounts.yaml")
    )
    roles = [d for d in docs if d["kind"] in ("Role", "ClusterRole")]
    assert roles
    for role in roles:
        for (group, resource, name), verbs in grants(role).items():
            assert "*" not in (group, resource, name) and "*" not in verbs, role["metadata"]["name"]
            assert resource not in ("secrets", "pods/exec", "pods/attach", "serviceaccounts/token")
            written = verbs & WRITE_VERBS
            if not written:
                continue
            allowed = {
                ("coordination.k8s.io", "leases"),  # the tracker's Lease
                ("batch", "jobs"),  # OpenRL's scheduler runs its workers
                ("jobset.x-k8s.io", "jobsets"),
            }
            assert (group, resource) in allowed, (role["metadata"]["name"], resource, written)
            assert role["kind"] == "Role", "writes stay inside one namespace"
    # The API server needs no Kubernetes access: its token is not mounted.
    api = find(docs, "ServiceAccount", "openrl-api") if source == "examples" else None
    assert api is None or api["automountServiceAccountToken"] is False


def test_every_binding_names_an_existing_account_and_role() -> None:
    docs = rendered(GKE)
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        find(docs, binding["roleRef"]["kind"], binding["roleRef"]["name"])
        for subject in binding["subjects"]:
            account = find(docs, "ServiceAccount", subject["name"])
            assert account["metadata"]["namespace"] == subject["namespace"]


# -- the one way in ---------------------------------------------------------------


def _matches(match: dict[str, Any], path: str) -> bool:
    """Gateway API path matching: Exact, or PathPrefix by whole path elements."""
    kind: str = match["path"]["type"]
    value: str = match["path"]["value"]
    if kind == "Exact":
        return path == value
    assert kind == "PathPrefix"
    return value == "/" or path == value or path.startswith(value.rstrip("/") + "/")


def _routed(path: str) -> bool:
    route = find(rendered(GKE), "HTTPRoute", INSPECTOR)
    return any(_matches(m, path) for rule in route["spec"]["rules"] for m in rule["matches"])


def test_the_route_serves_the_api_but_not_its_metrics() -> None:
    for path in (
        "/",
        f"{PREFIX}/graphql",
        f"{PREFIX}/ui/",
        f"{PREFIX}/ui/app.js",
        f"{PREFIX}/static/x.css",
        f"{PREFIX}/readyz",
    ):
        assert _routed(path), path
    for path in (f"{PREFIX}/metrics", f"{PREFIX}/metrics/", f"{PREFIX}/graphqlx", "/metrics"):
        assert not _routed(path), path


def test_iap_and_the_health_check_sit_on_the_inspectors_service() -> None:
    docs = rendered(GKE)
    service = find(docs, "Service", INSPECTOR)
    route = find(docs, "HTTPRoute", INSPECTOR)
    assert {b["name"] for r in route["spec"]["rules"] for b in r["backendRefs"]} == {INSPECTOR}
    gateway = find(docs, "Gateway", route["spec"]["parentRefs"][0]["name"])
    assert {listener["protocol"] for listener in gateway["spec"]["listeners"]} == {"HTTPS"}
    policy = find(docs, "GCPBackendPolicy", INSPECTOR)
    assert policy["spec"]["default"]["iap"]["enabled"] is True
    check = find(docs, "HealthCheckPolicy", INSPECTOR)
    for doc in (policy, check):
        assert doc["spec"]["targetRef"] == {
            "group": "",
            "kind": "Service",
            "name": service["metadata"]["name"],
        }
    probe = find(docs, "Deployment", INSPECTOR)["spec"]["template"]["spec"]["containers"][0][
        "readinessProbe"
    ]
    assert (
        check["spec"]["default"]["config"]["httpHealthCheck"]["requestPath"]
        == probe["httpGet"]["path"]
    )
    assert policy["spec"]["default"]["timeoutSec"] > 30  # above the request deadline


def test_the_network_policy_admits_only_the_load_balancer_and_the_collector() -> None:
    docs = rendered(GKE)
    policy = find(docs, "NetworkPolicy", INSPECTOR)
    labels = find(docs, "Deployment", INSPECTOR)["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    blocks, namespaces = set(), set()
    for rule in policy["spec"]["ingress"]:
        assert [p["port"] for p in rule["ports"]] == ["http"]
        for peer in rule["from"]:
            assert set(peer) <= {"ipBlock", "namespaceSelector"}, peer
            if "ipBlock" in peer:
                assert "except" not in peer["ipBlock"]
                blocks.add(ipaddress.ip_network(peer["ipBlock"]["cidr"]))
            else:
                namespaces.add(
                    peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                )
    assert blocks == GFE and namespaces == {"gmp-system"}
    tracker = find(docs, "NetworkPolicy", TRACKER)
    assert tracker["spec"]["policyTypes"] == ["Ingress"] and not tracker["spec"].get("ingress")


def test_the_inspectors_metrics_are_scraped() -> None:
    docs = rendered(GKE)
    monitor = find(docs, "PodMonitoring", INSPECTOR)
    deployment = find(docs, "Deployment", INSPECTOR)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["path"] == f"{PREFIX}/metrics"
    ports = {p["name"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert endpoint["port"] in ports
    env = {
        e["name"]: e.get("value")
        for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    # The collector carries no credential: the path is open to it (and to nobody the
    # network policy and the route do not admit).
    assert env["OPENRL_INSPECT_METRICS_ACCESS"] == "open"
    assert find(docs, "PodMonitoring", "dcgm-exporter")["metadata"]["namespace"] == "dcgm-exporter"

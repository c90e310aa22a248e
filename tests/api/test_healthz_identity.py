"""``/healthz`` says what is answering: service, version, instance, mode, and where each
backend is with every credential removed; the endpoints only to an operator."""

from __future__ import annotations

from pathlib import Path

import pytest
from openrl_inspect.adapters.cloud_logging import CloudLoggingSettings
from openrl_inspect.adapters.kubernetes import KubernetesSettings
from openrl_inspect.adapters.prometheus import PrometheusSettings
from openrl_inspect.adapters.redis import RedisSettings
from openrl_inspect.auth import TokenAuthenticator
from openrl_inspect.cli.demo import for_demo
from openrl_inspect.cli.serve import BackendSettings, for_serve
from openrl_inspect.web.app import PREFIX
from openrl_inspect.web.identity import (
    API,
    Identity,
    clean_url,
    is_inspector,
    package_version,
)
from support.auth_harness import auth_client, new_token, token_line, write_lines

pytestmark = pytest.mark.anyio

SECRET = "s3cret-PLANTED-91b2"
# As ``kubectl config view --raw`` writes one: the user's token sits beside the server.
KUBECONFIG = f"""apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: gke_proj_us-central1_rl
  cluster:
    certificate-authority-data: LS0tLS1CRUdJTi==
    server: https://admin:{SECRET}@34.118.22.7:443
- name: other
  cluster:
    server: https://10.0.0.1
contexts:
- name: prod
  context:
    cluster: gke_proj_us-central1_rl
    user: rl-reader
- name: staging
  context:
    cluster: other
    user: rl-reader
users:
- name: rl-reader
  user:
    token: {SECRET}
"""


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        (f"redis://:{SECRET}@redis.rl.svc:6379/2", "redis://redis.rl.svc:6379/2"),
        (
            f"rediss://default:{SECRET}@10.0.0.5:6380/0?ssl_cert_reqs=none",
            "rediss://10.0.0.5:6380/0",
        ),
        (f"redis://10.0.0.5/0?password={SECRET}", "redis://10.0.0.5/0"),
        (f"https://u:{SECRET}@prom.example:9090/api#x", "https://prom.example:9090/api"),
        ("http://[::1]:9090", "http://[::1]:9090"),
        ("not a url", "(unparsable URL)"),
        ("redis://host:99999999/0", "(unparsable URL)"),
    ],
)
def test_urls_lose_userinfo_query_and_fragment(url: str, clean: str) -> None:
    assert clean_url(url) == clean


def serve_settings(kubeconfig: Path, context: str | None = None) -> BackendSettings:
    return BackendSettings(
        redis=RedisSettings(url=f"redis://:{SECRET}@redis.rl.svc:6379/2", cluster=True),
        kubernetes=KubernetesSettings(kubeconfig=str(kubeconfig), context=context),
        prometheus=PrometheusSettings(url=f"https://u:{SECRET}@prom.example/api?x={SECRET}"),
        cloud_logging=CloudLoggingSettings(project="openrl-prod-1"),
    )


def test_serve_identity_names_each_backend_without_credentials(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG)
    who = for_serve(serve_settings(kubeconfig), {})
    assert who.mode == "serve" and who.version == package_version() != "0+unknown"
    assert {b.name: b.endpoint for b in who.backends} == {
        "redis": "redis://redis.rl.svc:6379/2 (cluster)",
        "kubernetes": "https://34.118.22.7:443",
        "prometheus": "https://prom.example/api",
        "cloud_logging": "project openrl-prod-1",
    }
    assert SECRET not in repr(who)
    staging = for_serve(serve_settings(kubeconfig, "staging"), {})
    assert staging.backends[1].endpoint == "https://10.0.0.1"


def test_kubernetes_identity_in_cluster_and_unreadable(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "34.118.224.1", "KUBERNETES_SERVICE_PORT": "443"}
    inside = BackendSettings(kubernetes=KubernetesSettings(in_cluster=True))
    assert for_serve(inside, env).backends[1].endpoint == "https://34.118.224.1:443"
    (tmp_path / "bad").write_text("clusters: [\n")
    broken = BackendSettings(kubernetes=KubernetesSettings(kubeconfig=str(tmp_path / "bad")))
    assert for_serve(broken, {}).backends[1].endpoint == "kubeconfig (server unknown)"


def test_instances_differ_and_the_answer_is_recognised() -> None:
    one, two = for_demo(None), for_demo(f"redis://:{SECRET}@127.0.0.1:6379/0")
    assert one.instance != two.instance and len(one.instance) == 32
    assert two.backends[0].endpoint == "redis://127.0.0.1:6379/0"
    body = one.answer(endpoints=False)
    assert is_inspector(body) and body["api"] == API and body["mode"] == "demo"
    assert body["backends"][0] == {"name": "redis"}
    assert not is_inspector({**body, "service": "something-else"})
    assert not is_inspector({**body, "api": "openrl-inspect/v0"}) and not is_inspector([body])


async def test_healthz_shows_endpoints_to_an_operator_only(tmp_path: Path) -> None:
    viewer, operator = new_token(), new_token()
    tokens = tmp_path / "tokens.jsonl"
    write_lines(tokens, token_line(viewer, "alice"), token_line(operator, "ops", "operator"))
    auth = TokenAuthenticator(str(tokens), interval_s=0)
    auth.start()
    who = Identity("serve", for_demo(f"redis://:{SECRET}@10.9.8.7:6379/0").backends)
    async with auth_client(auth, identity=who) as client:
        anyone = (await client.get(f"{PREFIX}/healthz")).json()
        as_viewer = await client.get(
            f"{PREFIX}/healthz", headers={"authorization": f"Bearer {viewer}"}
        )
        as_operator = await client.get(
            f"{PREFIX}/healthz", headers={"authorization": f"Bearer {operator}"}
        )
    assert anyone == {**who.answer(endpoints=False)}
    assert set(anyone) == {
        "ok",
        "service",
        "api",
        "version",
        "instance",
        "mode",
        "freshForSeconds",
        "backends",
    }
    assert anyone["instance"] == who.instance and anyone["mode"] == "serve"
    assert as_viewer.json() == anyone
    assert as_operator.json()["backends"][0] == {
        "name": "redis",
        "endpoint": "redis://10.9.8.7:6379/0",
    }
    assert "10.9.8.7" not in str(anyone)


async def test_without_authentication_everyone_is_the_operator() -> None:
    async with auth_client(None, identity=for_demo(None)) as client:
        body = (await client.get(f"{PREFIX}/healthz")).json()
        again = (await client.get(f"{PREFIX}/healthz")).json()
    assert body["mode"] == "demo" and body["instance"] == again["instance"]
    assert body["backends"][0] == {"name": "redis", "endpoint": "in-process fakeredis"}

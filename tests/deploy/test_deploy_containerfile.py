"""The image recipe: multi-stage, a pinned base, only the built environment in the
final stage, no pip cache, an unprivileged user matching the manifests, and a build
context without tests, benchmarks or secrets."""

from __future__ import annotations

import re
import tomllib

from support.deploy_manifests import (
    BASE,
    GKE,
    INSPECTOR,
    TRACKER,
    find,
    only_container,
    pod_spec,
    rendered,
)
from support.kustomize import documents
from support.tree import ROOT

CONTAINERFILE = ROOT / "Containerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", CONTAINERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for word, rest in instructions():
        if word == "FROM":
            found.append([])
        if found:
            found[-1].append((word, rest))
    return found


def test_two_stages_on_a_pinned_slim_base() -> None:
    args = dict(
        rest.split("=", 1) for word, rest in instructions() if word == "ARG" and "=" in rest
    )
    base = args["PYTHON_IMAGE"]
    assert re.fullmatch(
        r"docker\.io/library/python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base
    ), base
    froms = [s[0][1] for s in stages()]
    assert len(froms) == 2
    assert all(f.startswith("${PYTHON_IMAGE} AS ") for f in froms), froms


def test_the_final_stage_holds_only_the_environment_and_runs_unprivileged() -> None:
    final = stages()[-1]
    copies = [rest for word, rest in final if word in ("COPY", "ADD")]
    assert copies == ["--from=build /opt/venv /opt/venv"]
    [user] = [rest for word, rest in final if word == "USER"]
    uid, gid = (int(x) for x in user.split(":"))
    assert uid > 0 and gid > 0
    # The manifests run the same UID and GID.
    for name in (INSPECTOR, TRACKER):
        context = pod_spec(find(rendered(GKE), "Deployment", name))["securityContext"]
        assert (context["runAsUser"], context["runAsGroup"]) == (uid, gid)
    assert final[-1] == ("CMD", '["serve", "--host=0.0.0.0", "--port=8080"]')
    assert ("ENTRYPOINT", '["openrl-inspect"]') in final
    [port] = [rest for word, rest in final if word == "EXPOSE"]
    ports = only_container(find(rendered(GKE), "Deployment", INSPECTOR))["ports"]
    assert [p["containerPort"] for p in ports] == [int(port)]


def test_no_pip_cache_and_no_build_tools_left() -> None:
    runs = [rest for word, rest in instructions() if word == "RUN"]
    for run in runs:
        if "pip install" in run:
            assert "--no-cache-dir" in run, run
    assert any("pip uninstall --yes pip" in r for r in runs)
    assert not any(re.search(r"apt-get install|gcc|build-essential", r) for r in runs)


def test_the_build_context_leaves_out_tests_and_secrets() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {"tests", "bench", ".git", ".venv", "deploy", "docs", "scripts"} <= ignored


def test_the_image_tag_is_the_package_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    spec = documents(BASE / "kustomization.yaml")[0]
    assert spec["images"] == [{"name": "openrl-inspect", "newTag": version}]
    overlay = documents(GKE / "kustomization.yaml")[0]
    assert overlay["images"][0]["newTag"] == version

"""Rendering a kustomization offline, for the subset of kustomize deploy/ uses.

kustomize is not installed where the tests run, so this follows ``kustomization.yaml``
as ``kubectl apply -k`` would for these fields only, and refuses any other field (a
kustomization that starts using one fails here rather than being rendered wrong):

- ``resources``: files (every YAML document) and directories holding a kustomization;
- ``patches`` with ``path``: strategic-merge patches, matched by kind, name and
  namespace; maps merge, lists of containers, env, volumes, volumeMounts and ports merge
  by their key (``$patch: delete`` removes an item), other lists are replaced, as for
  the built-in types (NetworkPolicy ingress has no merge key: replaced);
- ``images``: ``newName``, ``newTag``, ``digest`` for containers of that image name;
- ``labels`` with ``pairs``: added to every resource's ``metadata.labels`` (not to
  selectors or templates: kustomize's defaults).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

Doc = dict[str, Any]
_KNOWN = {"apiVersion", "kind", "resources", "patches", "images", "labels"}
# (list field name) -> the key its items merge on, as in the types' patchMergeKey.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
}


class Unsupported(Exception):
    """The kustomization uses something this loader does not do."""


def documents(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def render(directory: Path) -> list[Doc]:
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(spec) - _KNOWN
    if unknown:
        raise Unsupported(f"{directory}: {sorted(unknown)}")
    docs: list[Doc] = []
    for entry in spec.get("resources", []):
        target = (directory / entry).resolve()
        docs.extend(render(target) if target.is_dir() else documents(target))
    for patch in spec.get("patches", []):
        if set(patch) != {"path"}:
            raise Unsupported(f"{directory}: patch {patch}")
        for p in documents(directory / patch["path"]):
            _apply(docs, p)
    for image in spec.get("images", []):
        _set_image(docs, image)
    for label in spec.get("labels", []):
        if set(label) != {"pairs"}:
            raise Unsupported(f"{directory}: labels {label}")
        for doc in docs:
            doc.setdefault("metadata", {}).setdefault("labels", {}).update(label["pairs"])
    seen = [_identity(d) for d in docs]
    if len(set(seen)) != len(seen):
        # kustomize refuses two resources with one id, as would the API server.
        raise Unsupported(f"{directory}: {sorted({i for i in seen if seen.count(i) > 1})}")
    return docs


def _identity(doc: Doc) -> tuple[str, str, str]:
    meta = doc.get("metadata", {})
    return doc["kind"], meta["name"], meta.get("namespace") or ""


def _apply(docs: list[Doc], patch: Doc) -> None:
    targets = [d for d in docs if _identity(d) == _identity(patch)]
    if len(targets) != 1:
        raise Unsupported(f"patch {_identity(patch)} matches {len(targets)} resources")
    merged = merge(targets[0], patch)
    docs[docs.index(targets[0])] = merged


def merge(base: Any, patch: Any, field: str = "") -> Any:
    """Strategic merge of ``patch`` into ``base`` (both left unchanged)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for key, value in patch.items():
            out[key] = merge(base[key], value, key) if key in base else copy.deepcopy(value)
        return out
    if isinstance(base, list) and isinstance(patch, list) and field in _MERGE_KEYS:
        key = _MERGE_KEYS[field]
        out_list = copy.deepcopy(base)
        for item in patch:
            index = next((i for i, b in enumerate(out_list) if b.get(key) == item.get(key)), None)
            if item.get("$patch") == "delete":
                if index is None:
                    raise Unsupported(f"$patch: delete of a missing {field} item {item}")
                del out_list[index]
            elif index is None:
                out_list.append(copy.deepcopy(item))
            else:
                out_list[index] = merge(out_list[index], item, field)
        return out_list
    return copy.deepcopy(patch)


def containers(doc: Doc) -> list[Doc]:
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def _set_image(docs: list[Doc], image: Doc) -> None:
    if not set(image) <= {"name", "newName", "newTag", "digest"}:
        raise Unsupported(f"images {image}")
    for doc in docs:
        for c in containers(doc):
            name = c["image"].split("@")[0]
            repo, _, _ = name.rpartition(":") if ":" in name.split("/")[-1] else (name, "", "")
            if repo != image["name"]:
                continue
            new = image.get("newName", repo)
            if "digest" in image:
                c["image"] = f"{new}@{image['digest']}"
            elif "newTag" in image:
                c["image"] = f"{new}:{image['newTag']}"
            else:
                c["image"] = new

"""The layout holds: layers in one direction, backends apart, private modules private.

``.importlinter`` states the contracts (run here through import-linter's own command);
the rest is checked over the source with ``ast``: a module or name with a leading
underscore is used only inside the package that owns it, and every top-level module is
placed in a layer, so a new one cannot slip past the contract.
"""

from __future__ import annotations

import ast
import configparser
import re
import subprocess
import sys
from pathlib import Path

from support.tree import ROOT, production_modules


def test_import_linter_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), "--config", str(ROOT / ".importlinter")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_top_level_module_is_in_a_layer() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = config["importlinter:contract:layers"]["layers"]
    placed = {name.strip() for line in layers.splitlines() for name in re.split("[:|]", line)}
    top = {".".join(m.split(".")[:2]) for m in production_modules() if m != "openrl_inspect"}
    assert top - placed == set(), "place these modules in a layer of .importlinter"


def _owner(module: str) -> str:
    """The package that owns a private module: the part before its first ``_`` segment."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return module


def _private_uses(name: str, tree: ast.AST) -> list[str]:
    uses: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            if not target.startswith("openrl_inspect."):
                continue
            owner = _owner(target)
            if owner != target and not (name == owner or name.startswith(owner + ".")):
                uses.append(f"{name} uses {target} (private to {owner})")
    return uses


def test_private_modules_and_names_stay_in_their_package() -> None:
    uses: list[str] = []
    for name, path in production_modules().items():
        uses += _private_uses(name, ast.parse(path.read_text(encoding="utf-8")))
    assert uses == []


def test_the_private_rule_would_catch_a_leak() -> None:
    leak = ast.parse("from openrl_inspect.adapters.kubernetes._records import PodRecord")
    inside = ast.parse("from openrl_inspect.adapters.kubernetes._records import PodRecord")
    assert _private_uses("openrl_inspect.resolvers.cluster.reads", leak)
    assert not _private_uses("openrl_inspect.adapters.kubernetes._source", inside)

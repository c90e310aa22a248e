"""The wheel ships every module of the tree, found by setuptools' own discovery.

An editable install and the tests see the source tree, so a subpackage left out of the
wheel would pass them all; this builds the wheel and looks inside.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.tree import ROOT, production_modules

pytestmark = pytest.mark.slow

PIP_WHEEL = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]


def test_the_wheel_holds_every_module_and_the_static_assets(tmp_path: Path) -> None:
    src = tmp_path / "src"
    # A copy without build leftovers, so the build cannot pick up stale files.
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "tests"
        ),
    )
    out = tmp_path / "dist"
    subprocess.run(
        [*PIP_WHEEL, "-w", str(out), str(src)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    (wheel,) = out.glob("openrl_inspect-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = set()
    for name in names:
        if name.endswith(".py"):
            dotted = name.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
            shipped.add(dotted)
    assert set(production_modules()) - shipped == set()
    assert not any(n.startswith(("openrl_inspect/tests/", "openrl_inspect/bench/")) for n in names)
    assert "openrl_inspect/schema.graphql" in names
    assert "openrl_inspect/static/graphiql.html" in names
    assert "openrl_inspect/py.typed" in names
    # The REST routes' and MCP tools' documents, read at run time.
    assert "openrl_inspect/agents/documents/model_summary.graphql" in names

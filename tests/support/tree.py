"""The repository tree as the tests see it: its root and its shipped modules."""

from __future__ import annotations

from pathlib import Path

# tests/support/tree.py -> the repository root, which is the package openrl_inspect.
ROOT = Path(__file__).resolve().parents[2]
NOT_PRODUCTION = {"tests", "bench", "scripts", "static", "deploy", "docs", ".venv", "build"}


def production_modules() -> dict[str, Path]:
    """Dotted name (``openrl_inspect.x.y``) -> file, for every shipped module."""
    found: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in NOT_PRODUCTION or rel.parts[0].startswith("."):
            continue
        if rel.as_posix() == "setup.py":
            continue
        parts = ["openrl_inspect", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found

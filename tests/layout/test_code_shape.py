"""The house limits on code size: no production module over 400 lines, no function over 60.

A module or function may pass its limit only with a reason where a reader sees it: a
comment containing ``size:`` on the module's first line, or on the line just above the
``def`` (above its first decorator also counts), e.g. ``# size: one table of ...``.
Production code is every ``.py`` file under the repository root except the
directories below; the root is found from this file, wherever the checkout lives.
"""

from __future__ import annotations

import ast
import os
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

from support.tree import ROOT

NOT_PRODUCTION = {"tests", "bench", "scripts", "static", "deploy", "docs", ".venv"}
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
_REASON = re.compile(r"#.*\bsize:\s*\S")


def production_modules(root: Path = ROOT) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        # Pruned in place so os.walk never descends into them (.venv is large).
        dirs[:] = sorted(
            d for d in dirs if not (here == root and d in NOT_PRODUCTION) and not d.startswith(".")
        )
        yield from (here / f for f in sorted(files) if f.endswith(".py"))


def _excused(lines: list[str], lineno: int) -> bool:
    """Whether 1-based line ``lineno`` exists and is a ``size:`` comment with a reason."""
    return 1 <= lineno <= len(lines) and bool(_REASON.search(lines[lineno - 1]))


def violations(source: str, name: str) -> list[str]:
    """What in ``source`` passes a limit without a ``size:`` reason."""
    lines = source.splitlines()
    found: list[str] = []
    if len(lines) > MAX_MODULE_LINES and not _excused(lines, 1):
        found.append(f"{name}: module of {len(lines)} lines (limit {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(source, filename=name)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        top = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if length > MAX_FUNCTION_LINES and not (
            _excused(lines, node.lineno - 1) or _excused(lines, top - 1)
        ):
            found.append(
                f"{name}:{node.lineno} {node.name}: {length} lines (limit {MAX_FUNCTION_LINES})"
            )
    return found


def test_production_code_keeps_its_size_limits() -> None:
    found = [
        problem
        for path in production_modules()
        for problem in violations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not found, (
        "split along a concept (see STYLE.md, rule 8), or give the reason in a "
        "`# size: ...` comment:\n" + "\n".join(found)
    )


def test_the_walk_covers_production_code_and_nothing_else() -> None:
    seen = {path.relative_to(ROOT).as_posix() for path in production_modules()}
    assert {"web/app.py", "schema/metrics/types.py", "adapters/kubernetes/_pod_logs.py"} <= seen
    assert not any(p.split("/")[0] in NOT_PRODUCTION for p in seen)
    assert Path(__file__).resolve().relative_to(ROOT).as_posix() not in seen


def _function(lines: int, above: str = "", decorated: bool = False) -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
    return above + ("@staticmethod\n" if decorated else "") + "def f():\n" + body


def test_a_long_function_fails_unless_a_reason_is_given() -> None:
    assert violations(_function(60), "m.py") == []
    assert violations(_function(61), "m.py") == ["m.py:1 f: 61 lines (limit 60)"]
    assert violations(_function(61, "# size: one flat table\n"), "m.py") == []
    assert violations(_function(61, "# size: one flat table\n", decorated=True), "m.py") == []
    # A comment naming no reason, or the word elsewhere, does not excuse it.
    assert violations(_function(61, "# size:\n"), "m.py") != []
    assert violations(_function(61, "# sizes differ\n"), "m.py") != []
    nested = "def outer():\n" + textwrap.indent(_function(61), "    ")
    assert violations(nested, "m.py") == [
        "m.py:1 outer: 62 lines (limit 60)",
        "m.py:2 f: 61 lines (limit 60)",
    ]


def test_a_long_module_fails_unless_its_first_line_gives_a_reason() -> None:
    long_module = '"""Doc."""\n' + "x = 1\n" * 400
    assert violations(long_module, "m.py") == ["m.py: module of 401 lines (limit 400)"]
    assert violations("# size: generated table\n" + long_module, "m.py") == []
    assert violations('"""Doc."""\n' + "x = 1\n" * 399, "m.py") == []

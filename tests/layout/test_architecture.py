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

import grimp
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


def test_the_root_holds_only_the_package_marker_and_setup() -> None:
    loose = sorted(p.name for p in ROOT.glob("*.py"))
    assert loose == ["__init__.py", "setup.py"], "put these modules in a package: " + str(loose)


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of two or more
    modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_through_others() -> None:
    # Imports made only for type checking do not run: a cycle among them is no cycle.
    graph = grimp.build_graph("openrl_inspect", exclude_type_checking_imports=True, cache_dir=None)
    assert _cycles(graph) == []


def test_the_cycle_check_would_catch_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph) == [["p.a", "p.b"]]


_LAZY = re.compile(r"#\s*lazy:\s*\S")


def _unexplained_imports(source: str, name: str) -> list[str]:
    """Imports inside functions without a ``# lazy: <reason>`` comment in the comment
    lines just above the import or above the function (or its first decorator)."""
    lines = source.splitlines()

    def explained(lineno: int) -> bool:
        above = lineno - 2
        while 0 <= above < len(lines) and lines[above].lstrip().startswith("#"):
            if _LAZY.search(lines[above]):
                return True
            above -= 1
        return False

    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        top = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        for node in ast.walk(fn):
            if isinstance(node, ast.Import | ast.ImportFrom) and not (
                explained(node.lineno) or explained(top)
            ):
                found.append(f"{name}:{node.lineno} in {fn.name}")
    return found


def test_imports_inside_functions_are_lazy_loads_with_their_reason() -> None:
    found = [
        problem
        for name, path in production_modules().items()
        for problem in _unexplained_imports(path.read_text(encoding="utf-8"), name)
    ]
    assert found == [], "import at the top, or say why it loads late in a `# lazy:` comment"


def test_the_lazy_rule_would_catch_an_unexplained_import() -> None:
    plain = "def f():\n    import json\n"
    assert _unexplained_imports(plain, "m") == ["m:2 in f"]
    assert _unexplained_imports("# lazy: the SDK takes a second\n" + plain, "m") == []
    inline = "def f():\n    # lazy: only the demo needs it\n    import fakeredis\n"
    assert _unexplained_imports(inline, "m") == []
    assert _unexplained_imports("def f():\n    # lazy:\n    import json\n", "m") != []
    two = "# lazy: the SDK takes\n# a second\ndef f():\n    import json\n"
    assert _unexplained_imports(two, "m") == []

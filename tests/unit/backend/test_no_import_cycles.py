"""No module of k8s_backend takes part in an import cycle, not even through an import inside a function.

The layer contracts (.importlinter, run by ``tox -e lint``) order the packages; this test covers the
modules inside one package too, which those contracts do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import k8s_backend

ROOT = Path(k8s_backend.__file__).parent
PACKAGE = "k8s_backend"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The k8s_backend modules that ``path`` imports, anywhere in the file (TYPE_CHECKING ones aside)."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        # `if TYPE_CHECKING:` imports never run: they cannot make a cycle.
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            skipped.update(id(inner) for inner in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module in modules and node.level == 0:
            # `from pkg import submodule` depends on the submodule; `from pkg import name`, on pkg.
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycle() -> None:
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(paths)
    # A package's own __init__ is run by importing any of its modules: not an edge of its own.
    graph = {name: imports_of(path, modules) - {name} for name, path in paths.items()}
    assert cycles(graph) == []


def test_the_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]

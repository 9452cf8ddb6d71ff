"""The package's import graph has no circle, counting imports inside functions as well.

Every module of ``codeworld/`` is read with `ast` (never imported): each ``import`` and ``from ...
import`` anywhere in it, at module level or inside a function, is an edge to the codeworld
module it loads. ``from package import name`` is an edge to ``package.name`` when that is a
module, else to ``package``; importing ``a.b.c`` from outside ``a.b`` also runs ``a.b``'s
``__init__``, so it is an edge to ``a.b`` too. Imports under ``if TYPE_CHECKING:`` never run and
are left out, as are names given to ``importlib`` at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "codeworld"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

# Circles known and owned by other work, each as its sorted modules. Empty this when they go.
KNOWN_CYCLES: set[tuple[str, ...]] = {
}


def _module_names() -> dict[str, Path]:
    modules = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool):
    """(imported module, imported names) for every import statement that can run."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            yield base, [alias.name for alias in node.names]
        stack.extend(ast.iter_child_nodes(node))


def import_graph() -> dict[str, set[str]]:
    """codeworld module -> the codeworld modules it imports."""
    modules = _module_names()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target, names in _imports(tree, name, path.name == "__init__.py"):
            if target != PACKAGE and not target.startswith(PACKAGE + "."):
                continue
            loaded = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
            if len(loaded) < len(names) or not names:
                loaded.append(target)
            for item in loaded:
                parts = item.split(".")
                # the module itself and each package above it that the importer is not inside
                for k in range(len(parts), 0, -1):
                    ancestor = ".".join(parts[:k])
                    if ancestor in modules and not (name == ancestor or name.startswith(ancestor + ".")):
                        graph[name].add(ancestor)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[tuple[str, ...]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1 or node in graph[node]:
                components.append(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_graph_sees_function_level_and_package_imports():
    graph = import_graph()
    # a lazy import inside a function counts
    assert "codeworld._model_worker" in graph["codeworld.scoring._scorer"]
    # `from codeworld.sandbox import _guards` is an edge to the submodule
    assert "codeworld.sandbox._guards" in graph["codeworld.sandbox._worker"]
    # the TYPE_CHECKING block of the package's __init__ never runs
    assert "codeworld.synthesis" not in graph["codeworld"]


def test_cycle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [("a", "b", "c")]


def test_no_import_cycle_in_the_package():
    cycles = [c for c in import_cycles(import_graph()) if c not in KNOWN_CYCLES]
    assert not cycles, "import circles: " + "; ".join(" <-> ".join(c) for c in cycles)

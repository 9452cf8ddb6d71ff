"""Worlds have one home, read from the source with `ast` (never imported).

* The synthesis core knows no world: no module of ``codeworld.synthesis`` imports
  ``codeworld.worlds`` (anywhere in it, under ``TYPE_CHECKING`` too).
* No world is assembled inline: a ``World(...)`` is built only inside ``codeworld/worlds/`` (each
  kind's factory, reached through `codeworld.worlds.make_world`), never by a caller in the package
  or in a benchmark script.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "codeworld"


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def world_imports_in_synthesis(root: Path = ROOT) -> list[str]:
    """``module:line target`` for each import of ``codeworld.worlds`` in ``codeworld.synthesis``."""
    found = []
    for path in sorted((root / "synthesis").rglob("*.py")):
        module = _module(path, root)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = module.split(".")[: len(module.split(".")) - node.level
                                                 + (path.name == "__init__.py")]
                    base = ".".join(package + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            found.extend(f"{module}:{node.lineno} {t}" for t in targets
                         if t == "codeworld.worlds" or t.startswith("codeworld.worlds."))
    return sorted(set(found))


def inline_worlds(root: Path = ROOT, scripts=()) -> list[str]:
    """``file:line`` for each ``World(...)`` call outside ``codeworld/worlds/``."""
    found = []
    paths = [p for p in root.rglob("*.py") if "worlds" not in p.relative_to(root).parts[:1]]
    for path in sorted([*paths, *scripts]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (
                    (isinstance(node.func, ast.Name) and node.func.id == "World")
                    or (isinstance(node.func, ast.Attribute) and node.func.attr == "World")):
                found.append(f"{path.relative_to(root.parent).as_posix()}:{node.lineno}")
    return found


def test_the_synthesis_core_imports_no_world():
    assert world_imports_in_synthesis() == []


def test_every_world_is_built_by_its_factory_in_codeworld_worlds():
    assert inline_worlds(scripts=sorted((REPO / "benchmarks").glob("*.py"))) == []


def test_the_checks_see_what_they_forbid(tmp_path):
    package = tmp_path / "codeworld"
    for folder in ("synthesis", "worlds", "agent"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "synthesis" / "run.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from codeworld.worlds import cwmb\n"
        "def f():\n    from ..worlds.registry import make_world\n")
    (package / "worlds" / "cwmb.py").write_text(
        "from codeworld.synthesis.types import World\ndef make():\n    return World(1, 2)\n")
    (package / "agent" / "loop.py").write_text(
        "from codeworld.synthesis import types\ndef rewrite():\n    return types.World(1, 2)\n")
    script = tmp_path / "bench.py"
    script.write_text("from codeworld.synthesis.types import World\nw = World(1, 2)\n")
    assert world_imports_in_synthesis(package) == [
        "codeworld.synthesis.run:3 codeworld.worlds", "codeworld.synthesis.run:3 codeworld.worlds.cwmb",
        "codeworld.synthesis.run:5 codeworld.worlds.registry",
        "codeworld.synthesis.run:5 codeworld.worlds.registry.make_world"]
    assert sorted(inline_worlds(package, [script])) == ["bench.py:2", "codeworld/agent/loop.py:3"]

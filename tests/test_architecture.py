"""The package's layering, read from its source with `ast` (never imported).

* The sandbox is generic: ``codeworld.sandbox`` imports nothing of ``codeworld`` outside itself
  (inside functions too), so what runs in it, and its limits, live with their owners.
* Nothing below the package's facade imports it: ``import codeworld`` or ``from codeworld import
  name`` (a name that is not a module) runs ``codeworld/__init__.py`` for one of its re-exports,
  which only its front doors (the facade itself, ``__main__``, the CLI) may do.
* An op travels to a worker as a function, never by name: no call site passes a string where the
  sandbox takes an op, and the sandbox refuses one.
* Command modules are the top layer: only the CLI (and the commands themselves) import
  ``codeworld.commands``; no library module and no benchmark script does; none is over 150 lines.
* One registry type: a name-to-thing table that grows at run time is a ``codeworld.registry.Registry``;
  no other module keeps a dict that a ``register*`` function adds to, or computes close matches
  (``difflib``).
* Domain values are typed: in ``synthesis``, ``worlds`` and ``experiments`` no parameter or class
  attribute named like a config, search, scorer, run directory, world... is annotated ``Any``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = "codeworld"
REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / PACKAGE
# The modules that may import the facade: the facade itself and the package's front doors.
FRONT_DOORS = {"codeworld", "codeworld.__main__", "codeworld.cli"}
# The command-line layer, and the modules that may import it besides its own.
COMMANDS = f"{PACKAGE}.commands"
COMMAND_IMPORTERS = {"codeworld.cli"}
# A command module parses, calls and formats: this many lines at most.
COMMAND_MAX_LINES = 150
# The one home of registries and of close matches.
REGISTRY_MODULE = f"{PACKAGE}.registry"
# The sandbox's methods that take an op first.
OP_METHODS = {"call", "begin"}


def _modules(root: Path = ROOT) -> dict[str, Path]:
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path, module: str):
    """(line, imported module, imported names or None) for every import in `path` that can run,
    at module level or inside a function; relative imports resolved."""
    is_package = path.name == "__init__.py"
    stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"), filename=str(path))]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            yield node.lineno, base, [alias.name for alias in node.names]
        stack.extend(ast.iter_child_nodes(node))


def _is_submodule(root: Path, name: str) -> bool:
    """Whether ``codeworld.<name>`` is a module or package (a compiled one included)."""
    return ((root / name).is_dir() or (root / f"{name}.py").exists() or (root / f"{name}.pyi").exists()
            or any(root.glob(f"{name}.*.so")))


def sandbox_leaks(root: Path = ROOT) -> list[str]:
    """``module:line imported`` for each import in ``codeworld.sandbox`` of codeworld outside it."""
    inside = f"{PACKAGE}.sandbox"
    leaks = []
    for module, path in _modules(root).items():
        if module != inside and not module.startswith(inside + "."):
            continue
        for line, target, _ in _imports(path, module):
            if (target == PACKAGE or target.startswith(PACKAGE + ".")) and not (
                    target == inside or target.startswith(inside + ".")):
                leaks.append(f"{module}:{line} {target}")
    return leaks


def facade_imports(root: Path = ROOT) -> list[str]:
    """``module:line ...`` for each import of the facade by a module that is not a front door."""
    found = []
    for module, path in _modules(root).items():
        if module in FRONT_DOORS:
            continue
        for line, target, names in _imports(path, module):
            if target != PACKAGE:
                continue
            if names is None:
                found.append(f"{module}:{line} import {PACKAGE}")
            else:
                found.extend(f"{module}:{line} from {PACKAGE} import {name}" for name in names
                             if not _is_submodule(root, name))
    return found


def command_imports(root: Path = ROOT, scripts=()) -> list[str]:
    """``module:line target`` for each import of ``codeworld.commands`` by a module of the package
    outside it (the CLI excepted) or by one of the `scripts` (files outside the package)."""
    found = []
    sources = [(module, path) for module, path in _modules(root).items()
               if module not in COMMAND_IMPORTERS and module != COMMANDS and not module.startswith(COMMANDS + ".")]
    sources += [(path.stem, path) for path in scripts]
    for module, path in sources:
        for line, target, names in _imports(path, module):
            if target == COMMANDS or target.startswith(COMMANDS + ".") or (
                    target == PACKAGE and names is not None and "commands" in names):
                found.append(f"{module}:{line} {target}")
    return found


def _is_dict(value: ast.expr | None, annotation: ast.expr | None = None) -> bool:
    """Whether a module-level binding makes a dict: a literal, a comprehension, ``dict(...)``, or
    an annotation ``dict[...]``."""
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in {
            "dict", "OrderedDict", "defaultdict"}:
        return True
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    return isinstance(annotation, ast.Name) and annotation.id in {"dict", "Dict"}


def registry_bodies(root: Path = ROOT) -> list[str]:
    """``module:line what`` for each registry written by hand outside ``codeworld.registry``: a
    module-level dict that a ``register*`` function of its module adds to (``TABLE[name] = entry``,
    ``TABLE.update(...)``, ``TABLE.setdefault(...)``), or an import of ``difflib`` (the close
    matches of an unknown name are the registry's). A cache the module fills elsewhere is no
    registry."""
    found = []
    for module, path in _modules(root).items():
        if module == REGISTRY_MODULE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        tables = set()
        for node in tree.body:
            if isinstance(node, ast.Assign) and _is_dict(node.value):
                tables |= {target.id for target in node.targets if isinstance(target, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and _is_dict(
                    node.value, node.annotation):
                tables.add(node.target.id)
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not (
                    function.name.lstrip("_").startswith("register")):
                continue
            for node in ast.walk(function):
                targets = node.targets if isinstance(node, ast.Assign) else []
                found.extend(f"{module}:{node.lineno} {target.value.id}[...] =" for target in targets
                             if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                             and target.value.id in tables)
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in {"update", "setdefault"} and isinstance(node.func.value, ast.Name)
                        and node.func.value.id in tables):
                    found.append(f"{module}:{node.lineno} {node.func.value.id}.{node.func.attr}(...)")
        found.extend(f"{module}:{line} {target}" for line, target, _ in _imports(path, module)
                     if target == "difflib")
    return sorted(set(found))


def ops_by_name(paths, base: Path = REPO) -> list[str]:
    """``file:line`` for each ``x.call("...")`` / ``x.begin("...")`` in `paths`: an op passed as a
    string."""
    found = []
    for path in sorted(paths):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in OP_METHODS and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.append(f"{path.relative_to(base).as_posix()}:{node.lineno}")
    return found


def test_the_sandbox_imports_nothing_of_codeworld_outside_itself():
    assert sandbox_leaks() == []


def test_no_module_below_the_facade_imports_it():
    assert facade_imports() == []


def test_no_call_site_names_an_op_by_a_string():
    # the package and the benchmark scripts (not the data they read; tests pass names on purpose)
    paths = [*ROOT.rglob("*.py"), *(REPO / "benchmarks").glob("*.py")]
    assert ops_by_name(paths) == []


def test_a_command_module_only_parses_calls_and_formats():
    # what a command does beyond that lives in the library (training/, reports/, experiments/...)
    long = {path.name: lines for path in sorted((ROOT / "commands").glob("*.py"))
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > COMMAND_MAX_LINES}
    assert long == {}


def test_only_the_cli_imports_the_command_modules():
    # library modules (codeworld.agent._ppo among them) and benchmark scripts call the library
    assert command_imports(scripts=sorted((REPO / "benchmarks").glob("*.py"))) == []


def test_every_registry_is_a_registry():
    # planners, synthesis methods, LLM backends, environments, agent families, algorithms, executors
    assert registry_bodies() == []


def test_the_sandbox_refuses_an_op_given_by_name():
    from codeworld.sandbox import Sandbox

    with pytest.raises(TypeError, match="not by name"):
        Sandbox().call("op_predict")


def test_the_checks_see_what_they_forbid(tmp_path):
    # A package laid out like codeworld, with one of each forbidden import, found at any depth.
    package = tmp_path / PACKAGE
    (package / "sandbox").mkdir(parents=True)
    (package / "scoring").mkdir()
    (package / "__init__.py").write_text("import codeworld.scoring\n")
    (package / "model.py").write_text("")
    (package / "sandbox" / "__init__.py").write_text("from .ops import run\n")
    (package / "sandbox" / "ops.py").write_text("def run(ctx):\n    from ..model import load\n")
    (package / "scoring" / "__init__.py").write_text(
        "from codeworld import model\n"
        "def version():\n    from codeworld import __version__\n    return __version__\n")
    (package / "scoring" / "worker.py").write_text(
        "import codeworld\n"
        "def predict(box):\n    return box.call('predict', states=[])\n")
    assert sandbox_leaks(package) == ["codeworld.sandbox.ops:2 codeworld.model"]
    assert sorted(facade_imports(package)) == ["codeworld.scoring.worker:1 import codeworld",
                                               "codeworld.scoring:3 from codeworld import __version__"]
    assert ops_by_name(package.rglob("*.py"), tmp_path) == ["codeworld/scoring/worker.py:3"]


def test_the_command_check_sees_a_library_module_or_script_that_imports_a_command(tmp_path):
    package = tmp_path / PACKAGE
    (package / "commands").mkdir(parents=True)
    (package / "agent").mkdir()
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text("import codeworld.commands.train\n")
    (package / "commands" / "__init__.py").write_text("")
    (package / "commands" / "train.py").write_text("from codeworld.commands import spec_and_model\n")
    (package / "agent" / "__init__.py").write_text("")
    (package / "agent" / "ppo.py").write_text(
        "def train():\n    from codeworld.commands.train import sb3_agent\n")
    (package / "agent" / "loop.py").write_text("from codeworld import commands\n")
    script = tmp_path / "bench.py"
    script.write_text("from codeworld.commands.report_page import line_plot\n")
    assert sorted(command_imports(package, [script])) == [
        "bench:1 codeworld.commands.report_page", "codeworld.agent.loop:1 codeworld",
        "codeworld.agent.ppo:2 codeworld.commands.train"]


def test_the_registry_check_sees_a_second_registry_body(tmp_path):
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "registry.py").write_text(  # the one home: left alone
        "import difflib\n_ENTRIES = {}\ndef register(name, entry):\n    _ENTRIES[name] = entry\n")
    (package / "planners.py").write_text(
        "PLANNERS: dict[str, type] = {}\n"
        "def register_planner(name, cls):\n    PLANNERS[name] = cls\n"
        "def get_planner(name):\n    import difflib\n    return PLANNERS[name]\n")
    (package / "tables.py").write_text(  # constant tables, local dicts and caches are no registries
        "MOVES = {0: (0, 1)}\nFAMILIES = dict(a=1)\n_CACHE = {}\n"
        "def moves(key):\n    out = {}\n    out[0] = _CACHE[key] = MOVES[0]\n    return out\n"
        "def register_family(name):\n    FAMILIES.update({name: 2})\n")
    assert registry_bodies(package) == ["codeworld.planners:3 PLANNERS[...] =", "codeworld.planners:5 difflib",
                                        "codeworld.tables:9 FAMILIES.update(...)"]


# --- A public surface a user can hold in mind (issue 39, part 4) ------------------------------------
# Unlike the checks above these import the package (a name's docstring is read as the API page
# reads it, with griffe, from the docs extra). The public names are every package's `__all__`
# and the facade's own names (`codeworld.__all__` less the sub-packages' re-exported names);
# docs/api.md renders each one: in its package's ``::: PACKAGE`` block's members, or (a name its
# package's module of the same name hides from griffe) a block of its own at its defining path.

API_PAGE = REPO / "docs" / "api.md"
PUBLIC_NAMES_AT_MOST = 100
# Packages with no public Python names: the command line, documented on docs/cli.md.
NOT_PUBLIC_PACKAGES = {COMMANDS}


def _packages() -> list[str]:
    return sorted(name for name, path in _modules().items()
                  if path.name == "__init__.py" and name != PACKAGE and name not in NOT_PUBLIC_PACKAGES
                  and not name.startswith(COMMANDS + "."))


def api_page_blocks(text: str) -> dict[str, list[str] | None]:
    """``::: TARGET`` -> its ``members: [...]`` list (None when it has none) on an API page."""
    blocks: dict[str, list[str] | None] = {}
    for match in re.finditer(r"^::: ([\w.]+)\n((?:[ \t]+.*\n?)*)", text, re.M):
        members = re.search(r"members:\s*\[([^\]]*)\]", match.group(2))
        blocks[match.group(1)] = re.findall(r"\w+", members.group(1)) if members else None
    return blocks


def _defining_path(value) -> str | None:
    if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")):
        return f"{value.__module__}.{value.__qualname__}"
    return None


def public_surface() -> dict[str, object]:
    """``PACKAGE.name`` -> the object, for every public name."""
    import importlib

    surface: dict[str, object] = {}
    for package in _packages():
        module = importlib.import_module(package)
        assert hasattr(module, "__all__"), f"{package} has no __all__"
        for name in module.__all__:
            assert hasattr(module, name), f"{package}.__all__ names {name}, which it lacks"
            surface[f"{package}.{name}"] = getattr(module, name)
    facade = importlib.import_module(PACKAGE)
    exported = {id(value) for value in surface.values()}
    for name in facade.__all__:
        value = getattr(facade, name)
        if not name.startswith("__") and id(value) not in exported:
            surface[f"{PACKAGE}.{name}"] = value
    return surface


def missing_from_page(surface: dict[str, object], blocks: dict[str, list[str] | None]) -> list[str]:
    """The public names the page's blocks do not render, then the names they list beyond them."""
    missing = []
    for path, value in surface.items():
        package, name = path.rsplit(".", 1)
        if name not in (blocks.get(package) or []) and _defining_path(value) not in blocks:
            missing.append(path)
    extra = [f"{target}.{name}" for target, members in blocks.items() for name in members or []
             if f"{target}.{name}" not in surface]
    return missing + extra


def test_every_public_name_exists_and_is_on_the_api_page():
    assert missing_from_page(public_surface(), api_page_blocks(API_PAGE.read_text(encoding="utf-8"))) == []


def test_every_public_name_has_a_docstring():
    griffe = pytest.importorskip("griffe", reason="griffe comes with mkdocstrings, in the docs and dev extras")
    loaded = griffe.load(PACKAGE, search_paths=[str(REPO)], docstring_parser="google")
    undocumented = []
    for path, value in public_surface().items():
        target = _defining_path(value) or path
        found = loaded[target.removeprefix(PACKAGE + ".")]
        if not (found.docstring and found.docstring.value.strip()):
            undocumented.append(target)
    assert undocumented == []


def test_the_public_names_are_few():
    names = {path.rsplit(".", 1)[1] for path in public_surface()}
    assert len(names) <= PUBLIC_NAMES_AT_MOST, sorted(names)


def test_the_api_page_check_sees_a_missing_and_an_extra_name():
    class Documented:
        """Here."""

    surface = {"codeworld.envs.make_env": Documented, "codeworld.envs.EnvSpec": Documented,
               "codeworld.planning.evaluate": test_the_public_names_are_few}
    page = ("::: codeworld.envs\n    options:\n      members: [make_env,\n                gone]\n\n"
            f"::: {__name__}.test_the_public_names_are_few\n")
    assert missing_from_page(surface, api_page_blocks(page)) == ["codeworld.envs.EnvSpec", "codeworld.envs.gone"]


# --- Domain parameters are typed (issue 39, part 3) -------------------------------------------------
# A parameter or class attribute that holds a config, a search, a scorer, a run directory, a world...
# is annotated with its real type (under ``if TYPE_CHECKING:`` where importing it would make a
# circle), never ``Any``: ``Any`` is left for values that really are any JSON value or object.

TYPED_PACKAGES = ("synthesis", "worlds", "experiments")
DOMAIN_NAMES = {
    "config", "search", "scorer", "evaluator", "result", "spec", "run", "run_dir", "world", "llm",
    "scaffold", "buffer", "method", "prompts", "sandbox", "assist", "split", "heldout", "worker",
    "regression", "context", "env", "lock", "predictions", "finish", "fit",
}


def _is_any(annotation: ast.expr | None) -> bool:
    """``Any``, ``typing.Any``, ``"Any"``, or a union with one of them (``Any | None``, ``Optional[Any]``)."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(annotation, ast.Name):
        return annotation.id == "Any"
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "Any"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _is_any(annotation.left) or _is_any(annotation.right)
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) and \
            annotation.value.id in ("Optional", "Union"):
        items = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        return any(_is_any(item) for item in items)
    return False


def untyped_domain_names(root: Path = ROOT, packages=TYPED_PACKAGES) -> list[str]:
    """``module:line name`` for every parameter or class-level attribute with a domain name
    annotated ``Any`` in ``packages``."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                named: list[tuple[str, ast.expr | None, int]] = []
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    a = node.args
                    named = [(arg.arg, arg.annotation, arg.lineno)
                             for arg in a.posonlyargs + a.args + a.kwonlyargs]
                elif isinstance(node, ast.ClassDef):
                    named = [(item.target.id, item.annotation, item.lineno) for item in node.body
                             if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)]
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
                    named = [(node.target.attr, node.annotation, node.lineno)]
                found += [f"{module}:{line} {name}" for name, annotation, line in named
                          if name in DOMAIN_NAMES and _is_any(annotation)]
    return sorted(found)


def test_no_domain_parameter_or_field_is_typed_any():
    assert untyped_domain_names() == []


def test_the_typing_check_sees_an_any_parameter_and_field(tmp_path):
    package = tmp_path / PACKAGE / "synthesis"
    package.mkdir(parents=True)
    (package / "run.py").write_text(
        "from __future__ import annotations\n"
        "import typing\n"
        "from dataclasses import dataclass\n"
        "from typing import Any, Optional\n"
        "@dataclass\n"
        "class Result:\n"
        "    search: Any\n"
        "    state: Any = None\n"                                   # any object: allowed
        "    def __init__(self, config: Any | None = None, *, scorer: 'Any' = None, **kw: Any):\n"
        "        self.run_dir: typing.Any = None\n"
        "def go(world: Optional[Any], data: dict[str, Any], spec: dict[str, Any]) -> Any:\n"
        "    return data\n")
    assert untyped_domain_names(tmp_path / PACKAGE, ("synthesis",)) == [
        "codeworld.synthesis.run:10 run_dir", "codeworld.synthesis.run:11 world",
        "codeworld.synthesis.run:7 search", "codeworld.synthesis.run:9 config",
        "codeworld.synthesis.run:9 scorer"]

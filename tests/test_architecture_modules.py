"""Internal modules carry a leading underscore (issue 39): a module under ``codeworld/`` keeps its
plain name only if it is a package's ``__init__``/``__main__``, the CLI, or listed in
`PUBLIC_MODULES` (an extension point that ``docs/extending.md`` or ``CONTRIBUTING.md`` names by
module path, or a module ``docs/api.md`` documents by its path). Read from the source tree, never
imported."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "codeworld"

# The one list of public module paths: keep each one's reason beside it.
PUBLIC_MODULES = (
    "codeworld.registry",  # the Registry type of every registry (extending.md, CONTRIBUTING.md)
    "codeworld.envs.registry",  # extension point: a shipped environment's spec line
    "codeworld.envs.derive",  # extension point: the environment registry (register_env)
    "codeworld.llm.backends",  # extension point: the LLM backend registry
    "codeworld.llm.types",  # extension point: the Backend protocol a backend implements
    "codeworld.planning.registry",  # extension point: the planner registry
    "codeworld.planning.planners",  # extension point: Planner and ModelAccess, used by a planner
    "codeworld.planning.evaluate",  # documented by its path on docs/api.md
    "codeworld.synthesis.registry",  # extension point: the method registry
    "codeworld.synthesis.types",  # extension point: Search and World, implemented by extensions
    "codeworld.synthesis.config",  # extension point: SamplingConfig, AssistConfig of a method
    "codeworld.synthesis.run",  # extension point: the Run that drives a method
    "codeworld.synthesis.fakes",  # extension point: the fakes a method's test uses
    "codeworld.worlds.registry",  # extension point: the world registry
    "codeworld.agent.envs",  # extension point: the agent's level-family registry
)
# The console script's module keeps its name too (``__init__``, ``__main__`` begin with "_").
FRONT_DOORS = ("codeworld.cli",)


def package_modules(root: Path = ROOT) -> list[str]:
    """The dotted names of the modules of the package at `root` (files in folders that are
    packages all the way up; package files themselves left out)."""
    modules = []
    for path in sorted(root.rglob("*.py")):
        folders = path.relative_to(root).parent.parts
        if not all((root.joinpath(*folders[:i]) / "__init__.py").is_file()
                   for i in range(len(folders) + 1)):
            continue  # data, not code
        modules.append(".".join((root.name, *path.relative_to(root).with_suffix("").parts)))
    return modules


def unmarked_internal_modules(root: Path = ROOT, public=PUBLIC_MODULES) -> list[str]:
    """The modules that are neither public nor named with a leading underscore."""
    return [name for name in package_modules(root)
            if not name.rsplit(".", 1)[-1].startswith("_") and name not in (*public, *FRONT_DOORS)]


def test_every_module_off_the_public_list_has_a_leading_underscore():
    assert unmarked_internal_modules() == [], (
        "an internal module is named `_name.py`; a public one is listed in PUBLIC_MODULES")


def test_every_public_module_exists_and_is_plainly_named():
    modules = set(package_modules())
    assert [name for name in PUBLIC_MODULES if name not in modules] == []
    assert [name for name in PUBLIC_MODULES if name.rsplit(".", 1)[-1].startswith("_")] == []
    assert len(set(PUBLIC_MODULES)) == len(PUBLIC_MODULES)


def test_the_check_reads_a_new_module_by_the_rule(tmp_path):
    package = tmp_path / "codeworld"
    (package / "planning").mkdir(parents=True)
    (package / "data").mkdir()
    for name in ("__init__.py", "__main__.py", "cli.py", "planning/__init__.py",
                 "planning/registry.py", "planning/_mcts.py", "planning/greedy.py", "data/table.py"):
        (package / name).write_text("")
    assert unmarked_internal_modules(package, ("codeworld.planning.registry",)) == [
        "codeworld.planning.greedy"]

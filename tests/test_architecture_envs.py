"""An environment is resolved once: a name becomes an `EnvSpec` where a user gives it (a command, a
job, a public function) and the spec travels from there; nothing below looks the name up again.

The first two tests read the source (every module under ``codeworld/``); the others count the
lookups one user call makes.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

import codeworld
from codeworld.envs import get_spec, registry

PACKAGE = Path(codeworld.__file__).parent

# The module that calls `get_spec`: the registry (`resolve_env` and `resolve_env_id` look ids up
# there); everything else resolves through `resolve_env` at an edge.
GET_SPEC_MODULES = {"envs/registry.py"}
MAX_GET_SPEC_MODULES = 3

# Where `resolve_env` may be called: anywhere in the command line's and the jobs' packages (edges
# by nature), and elsewhere only in the public entry points a user calls with an id, named here.
EDGE_PACKAGES = ("commands/", "experiments/")
PUBLIC_ENTRY_POINTS = {
    "envs/registry.py": {"make_env", "encode_obs", "encode_action", "decode_action",
                         "set_state_from_obs", "step_from_obs"},
    "envs/derive.py": {"env_spec"},
    "envs/_buffer_format.py": {"make_buffer", "load_buffer"},
    "envs/_buffers.py": {"buffer_path", "cached_buffer_path", "default_buffer", "paper_buffer_path",
                        "resolve_buffer"},
    "envs/_collection.py": {"collect_buffer"},
    "envs/_descriptions.py": {"describe", "description_path", "write_descriptions"},
    "scoring/_scorer.py": {"Scorer.__init__"},
    "planning/evaluate.py": {"evaluate"},
    "planning/_oracle.py": {"OracleModel.__init__"},
    "planning/_gym_env.py": {"CodeWorldEnv.__init__", "CodeWorldVectorEnv.__init__"},
    "training/_train.py": {"train_policy"},
}


class _Calls(ast.NodeVisitor):
    """The calls of one function name in a module, as (qualified name of the enclosing function or
    class, line); a name imported under another (``import get_spec as lookup``) counts too."""

    def __init__(self, name: str):
        self.names = {name}
        self.scope: list[str] = []
        self.found: list[tuple[str, int]] = []

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name in self.names and alias.asname:
                self.names.add(alias.asname)

    def _scoped(self, node) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if called in self.names:
            self.found.append((".".join(self.scope) or "<module>", node.lineno))
        self.generic_visit(node)


def call_sites(name: str) -> dict[str, list[tuple[str, int]]]:
    """module (relative to the package) -> the calls of `name` in it."""
    sites = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        visitor = _Calls(name)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if visitor.found:
            sites[path.relative_to(PACKAGE).as_posix()] = visitor.found
    return sites


def test_get_spec_is_called_in_at_most_three_modules():
    sites = call_sites("get_spec")
    assert "envs/registry.py" in sites  # the walk sees the calls that are there
    assert set(sites) <= GET_SPEC_MODULES, {m: s for m, s in sites.items() if m not in GET_SPEC_MODULES}
    assert len(sites) <= MAX_GET_SPEC_MODULES


def test_resolve_env_is_called_only_at_public_edges():
    sites = call_sites("resolve_env")
    stray = [(module, scope, line) for module, calls in sites.items() for scope, line in calls
             if not module.startswith(EDGE_PACKAGES) and scope not in PUBLIC_ENTRY_POINTS.get(module, ())]
    assert not stray, f"resolve_env called below the edges: {stray}"
    assert {"scoring/_scorer.py", "planning/evaluate.py"} <= set(sites)


@pytest.fixture
def lookups(monkeypatch):
    """The ids `get_spec` is asked about while the test runs (every lookup goes through it)."""
    asked: list[str] = []

    def counting(env_id):
        asked.append(env_id)
        return get_spec(env_id)

    monkeypatch.setattr(registry, "get_spec", counting)
    return asked


def test_a_user_call_looks_its_environment_up_once(lookups):
    from codeworld.envs._buffers import buffer_path, load_buffer
    from codeworld.envs._collection import CollectionConfig, collect_buffer
    from codeworld.envs._descriptions import describe
    from codeworld.planning import evaluate
    from codeworld.scoring import Scorer

    scorer = Scorer("CartPole-v1", references=False)  # resolves, finds, loads and checks a buffer
    assert lookups == ["CartPole-v1"]
    spec = scorer.spec

    lookups.clear()
    load_buffer(buffer_path(spec))  # the environment read from the sidecar
    assert lookups == ["CartPole-v1"]

    lookups.clear()
    evaluation = evaluate("Taxi-v3", policies=("random",), episodes=1, max_steps=3, use_cache=False)
    assert lookups == ["Taxi-v3"] and evaluation.env_id == "Taxi-v4"

    lookups.clear()
    buffer = collect_buffer("CartPole-v1", CollectionConfig(episodes=1, max_steps=3, random_episodes=1))
    assert lookups == ["CartPole-v1"] and len(buffer) == 3

    lookups.clear()
    assert describe("CartPole-v1").startswith("# CartPole-v1\n")
    assert lookups == ["CartPole-v1"]


def test_a_spec_passed_in_is_never_looked_up(lookups):
    from codeworld.envs._buffers import load_buffer, resolve_buffer
    from codeworld.planning import evaluate
    from codeworld.scoring import Scorer

    spec = get_spec("CartPole-v1")
    scorer = Scorer(spec, references=False)
    load_buffer(resolve_buffer(spec, None), spec)
    evaluate(spec, policies=("random",), episodes=1, max_steps=3, use_cache=False)
    assert scorer.spec is spec and lookups == []


def test_a_command_looks_its_environment_up_once(lookups, capsys):
    from codeworld.commands import _describe as describe_command

    parser = argparse.ArgumentParser()
    describe_command.register(parser.add_subparsers())
    args = parser.parse_args(["describe", "FrozenLake-v1", "--env-kwargs", "is_slippery=false", "--no-contract"])
    assert args.func(args) == 0
    assert capsys.readouterr().out.startswith("# FrozenLake-v1,is_slippery=false\n")
    assert lookups == ["FrozenLake-v1,is_slippery=false"]

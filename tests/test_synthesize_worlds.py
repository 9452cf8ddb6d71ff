"""`codeworld synthesize --world KIND TARGET` runs any registered kind of world from the command
line: an object level, an APPS problem, and a kind added in three files (its module, one
registry line, its test), with the run's kind and target in ``run.json`` for ``--resume`` and
``show``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codeworld.agent._reference import REFERENCE_MODELS
from codeworld.cli import main
from codeworld.worlds import register_world
from codeworld.worlds.registry import WORLDS

APPS_PROBLEM = Path(__file__).resolve().parents[1] / "benchmarks" / "apps_problems" / "0000"

# The new kind's module, as a contributor writes it: a world whose target is a number, in which
# a program scores 1 when it assigns that number to a name (no code runs).
NUMBER_WORLD = '''
"""A world whose target is a number: a program is right when it assigns that number."""

import ast

from codeworld.llm import extract_code
from codeworld.synthesis.types import Evaluator, ProgramEvaluation, World


class NumberPrompts:
    def __init__(self, number):
        self.number = number

    def messages(self, request):
        return [{"role": "user", "content": f"Assign {self.number} to `answer`."}]

    def program(self, request, completion_text):
        return extract_code(completion_text)


class NumberEvaluator(Evaluator):
    def __init__(self, number):
        self.number = number

    def evaluate(self, program):
        values = [n.value.value for n in ast.walk(ast.parse(program))
                  if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)]
        right = self.number in values
        return ProgramEvaluation(1.0 if right else 0.0, False, "" if right else "wrong number")


def make_number_world(target, assists, split, *, run=None, heldout_fraction=None):
    return World(NumberPrompts(int(target)), NumberEvaluator(int(target)))
'''


def write_script(path: Path, programs: list[str]) -> str:
    path.write_text(json.dumps([f"```python\n{p}```\n" for p in programs]))
    return f"scripted:{path}"


@pytest.fixture
def number_kind(tmp_path, monkeypatch):
    """The kind ``number``, registered lazily from its module, written to a temporary folder."""
    folder = tmp_path / "contrib"
    folder.mkdir()
    (folder / "number_world.py").write_text(NUMBER_WORLD)
    monkeypatch.syspath_prepend(str(folder))
    register_world("number", "number_world:make_number_world")
    yield
    WORLDS.unregister("number")
    sys.modules.pop("number_world", None)


def test_a_kind_added_in_three_files_is_synthesized_from_the_command_line(tmp_path, number_kind,
                                                                          capsys):
    script = write_script(tmp_path / "s.json", ["answer = 41\n", "answer = 42\n"])
    out = tmp_path / "run"
    assert main(["synthesize", "--world", "number", "42", "--llm", script, "--budget", "2",
                 "--out", str(out)]) == 0
    assert "best program: call 2, score 1.0000" in capsys.readouterr().out
    assert (out / "best_model.py").read_text().strip() == "answer = 42"
    assert json.loads((out / "best_report.json").read_text())["score"] == 1.0
    meta = json.loads((out / "run.json").read_text())
    assert (meta["world"], meta["target"], meta["status"]) == ("number", "42", "finished")
    assert main(["show", str(out)]) == 0
    assert "gif-mcts on 42" in capsys.readouterr().out
    # the resume rebuilds the same world from run.json, with no kind or target given
    assert main(["synthesize", "--resume", "--out", str(out), "--budget", "3"]) == 0
    assert "score 1.0000" in capsys.readouterr().out
    assert main(["synthesize", "--resume", "--out", str(out), "--world", "apps"]) == 2
    assert capsys.readouterr().err == (f"codeworld synthesize: {out} is a run on a world of kind "
                                       "number, not apps\n")


def test_an_unknown_kind_is_refused_in_one_line_naming_the_close_match(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["synthesize", "--world", "app", str(APPS_PROBLEM), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown world 'app'" in err and "apps" in err
    assert not out.exists()


def test_an_apps_problem_is_synthesized_and_resumed_from_the_command_line(tmp_path, capsys,
                                                                          monkeypatch):
    right = "n = int(input())\na = list(map(int, input().split()))\nprint(max(a) - min(a))\n"
    wrong = right.replace("max(a) - min(a)", "max(a)")
    script = write_script(tmp_path / "s.json", [wrong, right])
    monkeypatch.chdir(APPS_PROBLEM.parent)  # the target as a relative path, recorded whole
    out = tmp_path / "run"
    assert main(["synthesize", "--world", "apps", APPS_PROBLEM.name, "--method", "worldcoder",
                 "--llm", script, "--budget", "2", "--out", str(out)]) == 0
    assert (out / "best_model.py").read_text() == right
    assert json.loads((out / "best_report.json").read_text())["score"] == 1.0
    meta = json.loads((out / "run.json").read_text())
    assert (meta["world"], meta["target"]) == ("apps", str(APPS_PROBLEM))
    assert not {"env_id", "mode", "buffer", "timeout_s"} & set(meta)  # a replay buffer's, CWMB's
    monkeypatch.chdir(tmp_path)
    assert main(["synthesize", "--resume", "--out", str(out), "--budget", "3"]) == 0
    assert "score 1.0000" in capsys.readouterr().out
    assert main(["synthesize", "--world", "apps", "nowhere", "--llm", script,
                 "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err == "codeworld synthesize: no APPS problems at nowhere\n"


STAYS = ("def transition(state, action):\n    return dict(state)\n\n\n"
         "def reward(state, action, next_state, mission):\n    return 0.0, False\n")


def test_an_object_level_is_synthesized_on_its_recorded_episodes(tmp_path, capsys):
    script = write_script(tmp_path / "s.json", [STAYS])
    out = tmp_path / "run"
    assert main(["synthesize", "--world", "objects", "sokoban:corridor", "--method",
                 "worldcoder", "--llm", script, "--budget", "1", "--out", str(out)]) == 0
    assert "best program: call 1, score 0." in capsys.readouterr().out  # some moves change the state
    messages = json.loads((out / "calls" / "0000.json").read_text())["messages"]
    prompt = "\n".join(m["content"] for m in messages)
    assert "action 3 (right)" in prompt  # the data section of the recorded transitions
    # the resume records the same episodes (the run's seed): the saved call's prompt is sent
    # again unchanged, and the next call is scored on the same data
    rest = write_script(tmp_path / "b.json", [REFERENCE_MODELS["sokoban"]])
    assert main(["synthesize", "--resume", "--out", str(out), "--budget", "2", "--llm", rest,
                 "--switch-llm"]) == 0
    assert "best program: call 2, score 1.0000" in capsys.readouterr().out
    assert (out / "best_model.py").read_text().strip() == REFERENCE_MODELS["sokoban"].strip()
    assert main(["synthesize", "--world", "objects", "sokoban:nowhere", "--llm", script,
                 "--out", str(tmp_path / "x")]) == 2
    assert "unknown Sokoban level 'nowhere'" in capsys.readouterr().err

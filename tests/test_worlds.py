"""Every kind of world is built by one factory (`codeworld.worlds.make_world`) and gives the search
the same five assists (`codeworld.synthesis.types.Assists`), each the one its prompts and its
evaluator use."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeworld.sandbox import Sandbox
from codeworld.synthesis.types import GENERATE, Evaluator, ProgramEvaluation, Request, World
from codeworld.worlds import make_world, register_world, world_kinds
from codeworld.worlds.objects._world import ObjectLevel, ObjectSettings

PROBLEMS = Path(__file__).resolve().parents[1] / "benchmarks" / "apps_problems"
ASSISTS = ("skeleton", "data_section", "data_model", "static_problems", "compose")


def _text(messages: list[dict]) -> str:
    return "\n".join(m["content"] for m in messages)


def _level() -> ObjectLevel:
    def step(x, action, nx, reward=0.0, done=False):
        return {"state": {"agent": [x, 1], "held": None}, "action": action,
                "next_state": {"agent": [nx, 1], "held": None}, "reward": reward, "done": done,
                "mission": "reach the end"}

    data = [step(0, 1, 1), step(1, 1, 2), step(2, 0, 2), step(2, 1, 3, 1.0, True)]
    return ObjectLevel("A corridor.", ("stay", "forward"), 2, data,
                       [{"state": {"agent": [0, 1], "held": None}, "mission": "reach the end"}],
                       "The current mission: \"reach the end\".")


SETTINGS = ObjectSettings(optimism=False, max_nodes=100, max_depth=5, timeout_s=10.0)


def test_the_registry_holds_the_three_kinds_and_names_close_matches_for_a_typo():
    assert world_kinds()[:3] == ["cwmb", "objects", "apps"]
    with pytest.raises(KeyError, match="cwmb"):
        make_world("cwbm", "CartPole-v1")


def test_a_cwmb_world_shows_its_assists_in_its_prompts_and_checks_with_them():
    from codeworld.synthesis.config import AssistConfig

    world = make_world("cwmb", "CartPole-v1")
    assert isinstance(world, World) and all(callable(getattr(world.assists, a)) for a in ASSISTS)
    prompt = _text(world.prompts.messages(Request(0, GENERATE, -1)))
    assert world.assists.data_section() and world.assists.data_section().strip() in prompt
    assert world.assists.skeleton() == world.evaluator.skeleton
    assert "def step" in world.assists.skeleton()
    wrong = "def step(state, action):\n    x, v = state\n    return [x, v], reward, False\n"
    problems = world.assists.static_problems(wrong)
    evaluation = world.evaluator.evaluate(wrong)
    assert problems and evaluation.buggy
    assert [p.to_json() for p in problems] == evaluation.report["problems"]
    assert world.assists.static_problems(world.assists.skeleton()) == []
    off = make_world("cwmb", "CartPole-v1", AssistConfig(relations=False, checks=False))
    assert off.assists.data_section() == ""
    assert off.assists.static_problems(wrong) == []


def test_an_object_world_reads_its_assists_off_the_recorded_data():
    with Sandbox() as sandbox:
        world = make_world("objects", _level(), None, None, sandbox=sandbox, settings=SETTINGS)
        assert all(callable(getattr(world.assists, a)) for a in ASSISTS)
        prompt = _text(world.prompts.messages(Request(0, GENERATE, -1)))
        assert "action 1 (forward), 3 times:" in world.assists.data_section()
        assert world.assists.data_section() in prompt
        assert world.assists.skeleton() == world.evaluator.skeleton
        assert world.assists.skeleton().rstrip() in prompt and world.evaluator.detect_copies
        assert world.assists.static_problems(world.assists.skeleton()) == []
        wrong = ("def transition(state, action):\n    return state['position']\n"
                 "def reward(state, action, next_state, mission):\n    return 0.0, False\n")
        assert [p.kind for p in world.assists.static_problems(wrong)] == ["state_key"]
        assert world.evaluator.check(wrong).status == "invalid"
        assert world.assists.data_model() is None
        bare = make_world("objects", _level(), False, None, sandbox=sandbox, settings=SETTINGS)
        assert bare.assists.skeleton() is None and bare.assists.data_section() == ""
        assert bare.evaluator.schema is None and not bare.evaluator.detect_copies
        with pytest.raises(ValueError, match="no split"):
            make_world("objects", _level(), None, [0], sandbox=sandbox, settings=SETTINGS)


MOVES = ("def transition(state, action):\n    s = dict(state)\n    if action == 1:\n"
         "        s['agent'] = [state['agent'][0] + 1, 1]\n    return s\n")
STAYS = "def transition(state, action):\n    return dict(state)\n"
NEVER = "def reward(state, action, next_state, mission):\n    return 0.0, False\n"
AT_3 = ("def reward(state, action, next_state, mission):\n"
        "    return (1.0, True) if state['agent'][0] == 2 and action == 1 else (0.0, False)\n")


def test_an_object_world_composes_the_best_transition_with_the_best_reward():
    with Sandbox() as sandbox:
        world = make_world("objects", _level(), None, None, sandbox=sandbox, settings=SETTINGS)
        composed = world.assists.compose([(0, MOVES + NEVER), (1, STAYS + AT_3)])
        assert composed is not None and "action == 1" in composed and "== 2" in composed
        assert world.evaluator.check(composed).correct == len(_level().data)


def test_an_apps_world_searches_on_its_split_of_the_tests():
    from codeworld.worlds.apps._apps import load_problems, search_tests

    problem = load_problems(PROBLEMS)[0]
    world = make_world("apps", problem)
    assert world.evaluator.tests == search_tests(problem)
    assert make_world("apps", problem, None, [0]).evaluator.tests == [0]
    assert world.assists.skeleton() is None and world.assists.data_section() == ""
    assert world.assists.compose([(0, "print(1)\n")]) is None
    undefined = "print(answer)\n"
    assert [p.kind for p in world.assists.static_problems(undefined)] == \
        [p["kind"] for p in world.evaluator.evaluate(undefined).report["problems"]]


class _Prompts:
    def __init__(self, question: str):
        self.question = question

    def messages(self, request):
        return [{"role": "user", "content": self.question}]

    def program(self, request, completion_text):
        from codeworld.llm import extract_code

        return extract_code(completion_text)


class _Checker(Evaluator):
    """Scores a program by what its text assigns to ``answer`` (no code runs)."""

    def __init__(self, answer: int):
        self.answer = answer

    def evaluate(self, program):
        import ast

        values = [n.value.value for n in ast.walk(ast.parse(program))
                  if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)]
        right = self.answer in values
        return ProgramEvaluation(1.0 if right else 0.0, False, "" if right else "wrong answer")


def make_question_world(target, assists, split, **options):
    return World(_Prompts(target), _Checker(options["answer"]))


def test_a_registered_kind_is_built_and_searched_like_the_others(tmp_path):
    from codeworld.synthesis.fakes import ScriptedLLM
    from codeworld.synthesis.run import Run
    from codeworld.worlds.registry import WORLDS

    register_world("question-test", make_question_world)
    try:
        assert "question-test" in world_kinds()
        world = make_world("question-test", "What is six times seven?", None, None, answer=42)
        run = Run.start(tmp_path / "run", "zero-shot", budget=2)
        result = run.execute(world, ScriptedLLM(["```python\nanswer = 41\n```",
                                                 "```python\nanswer = 42\n```"]))
        assert result.best_program.strip() == "answer = 42" and result.best_evaluation.score == 1.0
    finally:
        WORLDS.unregister("question-test")

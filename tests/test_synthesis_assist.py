"""What every search method adds around the LLM: scaffold, checks and repairs, error summaries."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from codeworld.cli import main
from codeworld.envs.registry import EnvSpec
from codeworld.synthesis import AssistConfig, GifMcts, Rex, RunDir, RunSpec, synthesize
from codeworld.worlds.cwmb._checks import static_problems
from codeworld.worlds.cwmb._cwmb import CwmbPrompts, make_cwmb_world
from codeworld.synthesis.fakes import ScriptedLLM
from codeworld.worlds.cwmb._feedback import summarize_errors
from codeworld.synthesis._repairs import repair
from codeworld.worlds.cwmb._scaffold import build_scaffold
from codeworld.synthesis.types import FIX, GENERATE, IMPROVE, Request

MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"

# An environment codeworld has never seen: a spec made here, a description written here.
GREENHOUSE = EnvSpec(
    env_id="Greenhouse-v0", paper_id="Greenhouse-v0", gym_id="Greenhouse-v0", family="custom",
    action_kind="continuous", n_actions=0, action_low=(-1.0, 0.0), action_high=(1.0, 2.0),
    obs_dim=3, action_dim=2, planner="cem", state_atol=1e-6, state_rtol=1e-6, reward_atol=1e-6,
    reward_rtol=1e-6, paper_exact=False, max_episode_steps=50)
GREENHOUSE_TEXT = """# A greenhouse

## Action Space

| Num | Action      | Min | Max |
|-----|-------------|-----|-----|
| 0   | Heater      | -1  | 1   |
| 1   | Water valve | 0   | 2   |

## Observation Space

| Num | Observation            | Unit |
|-----|------------------------|------|
| 0   | Air temperature        | C    |
| 1   | Soil `moisture`        | %    |
| 2   | Hours of the day       | h    |
"""

TILES = EnvSpec(
    env_id="Tiles-v0", paper_id="Tiles-v0", gym_id="Tiles-v0", family="custom",
    action_kind="discrete", n_actions=4, action_low=(), action_high=(), obs_dim=1, action_dim=1,
    planner="mcts", state_atol=0.0, state_rtol=0.0, reward_atol=0.0, reward_rtol=0.0,
    paper_exact=True, max_episode_steps=None)


def fence(program: str) -> str:
    return f"Here is the program:\n```python\n{program}```\n"


# ------------------------------------------------------------------------------ scaffold


def test_scaffold_of_an_unseen_env_names_the_state_from_its_description():
    scaffold = build_scaffold(GREENHOUSE, GREENHOUSE_TEXT)
    assert scaffold.names == ("air_temperature", "soil_moisture", "hours_day")  # not the actions
    assert scaffold.named_from == "table" and not scaffold.integer
    text = scaffold.prompt_text()
    assert "exactly 3 numbers" in text and "- state[1]: soil_moisture" in text
    assert "1-D float64 numpy array of 2 values in [-1, 2]" in text
    skeleton = scaffold.skeleton()
    tree = ast.parse(skeleton)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == ["step"]
    assert "    soil_moisture = float(state[1])" in skeleton
    assert skeleton.rstrip().endswith("return next_state, float(reward), bool(done)")
    assert "np.array([air_temperature, soil_moisture, hours_day], dtype=np.float64)" in skeleton


def test_scaffold_without_a_table_numbers_the_components_and_reads_whole_numbers():
    single = build_scaffold(TILES, "A tile game. The observation is one int.")
    assert single.names == ("observation",) and single.integer
    assert "    observation = int(state[0])\n    action = int(action)\n" in single.head()
    assert "nothing else to unpack" in single.state_text()
    assert "an int in 0..3" in single.action_text()
    numbered = build_scaffold(GREENHOUSE, "No table here.")
    assert numbered.names == ("s0", "s1", "s2") and numbered.named_from == "numbered"


def test_the_parts_a_code_formula_packs_into_one_number_are_decoded_into_names():
    text = ("A tile game on a 6 by 3 board with a colour.\n\nThe observation is "
            "`(row * 3 + column) * 2 + colour`; an example: `2 * 3 + 1` is not one.\n")
    scaffold = build_scaffold(TILES, text)
    assert scaffold.packed == (("row", 6, None), ("column", 2, 3), ("colour", 1, 2))
    head = scaffold.head()
    assert ("    row = observation // 6\n    column = observation // 2 % 3\n"
            "    colour = observation % 2\n") in head
    step = {}
    exec(head + "    return row, column, colour\n", step)
    assert step["step"](np.array([(4 * 3 + 2) * 2 + 1.0]), 0) == (4, 2, 1)
    # a state of several numbers, a real number, or no formula: nothing is decoded
    assert build_scaffold(GREENHOUSE, GREENHOUSE_TEXT + text).packed == ()
    assert build_scaffold(TILES, "The observation is one int.").packed == ()


def test_the_skeleton_starts_the_reward_at_the_most_frequent_recorded_one():
    # and says it is a default, not the rule (a line that reads as an answer gets copied)
    assert "    reward = 0.0  # the most frequent recorded reward: write the description's reward rule\n" \
        in build_scaffold(GREENHOUSE, GREENHOUSE_TEXT, states=np.zeros((1, 3))).skeleton()
    assert "    reward = 0.0\n" in build_scaffold(GREENHOUSE, GREENHOUSE_TEXT).skeleton()
    rewards = np.array([1.0, 1.0, -0.5, 1.0, 0.0], dtype=np.float32)
    scaffold = build_scaffold(GREENHOUSE, GREENHOUSE_TEXT, rewards=rewards)
    assert scaffold.reward_default == 1.0 and "    reward = 1.0\n" in scaffold.skeleton()


def test_a_component_whose_recorded_values_are_whole_numbers_is_read_as_an_int():
    # floats by the env's dtype and tolerances, but the third component only ever holds 0..23
    states = np.array([[20.5, 30.5, 0.0], [21.25, 31.0, 1.0], [19.0, 29.75, 23.0]])
    scaffold = build_scaffold(GREENHOUSE, GREENHOUSE_TEXT, states=states)
    assert scaffold.whole == (False, False, True)
    head = scaffold.head()
    assert "    air_temperature = float(state[0])\n" in head
    assert "    hours_day = int(state[2])\n" in head  # usable as an index: no TypeError
    assert "- state[2]: hours_day  [int]" in scaffold.state_text()
    assert "[int]" not in build_scaffold(GREENHOUSE, GREENHOUSE_TEXT).state_text()
    ast.parse(scaffold.skeleton())


def test_prompts_show_the_scaffold_and_start_each_answer_as_code():
    scaffold = build_scaffold(GREENHOUSE, GREENHOUSE_TEXT)
    prompts = CwmbPrompts(GREENHOUSE_TEXT, scaffold)
    zero = prompts.messages(Request(call=0, action=GENERATE, parent=-1))
    assert "soil_moisture" in zero[1]["content"]
    assert zero[-1] == {"role": "assistant", "content": "```python\n" + scaffold.head()}
    # GIF-MCTS generate: a partial program that is the head's beginning gets the whole head;
    # one that goes past it is continued as it is.
    short = prompts.messages(Request(call=1, action=GENERATE, parent=1, prefix="import math\n"))
    assert short[-1]["content"] == "```python\n" + scaffold.head()
    longer = scaffold.head() + "    heat = action[0]\n"
    assert prompts.messages(Request(call=1, action=GENERATE, parent=1, prefix=longer))[-1][
        "content"] == "```python\n" + longer
    for action, feedback in ((FIX, "line 3: NameError"), (IMPROVE, "Over all 10 recorded ...")):
        messages = prompts.messages(Request(call=2, action=action, parent=0, program="P = 1\n",
                                            feedback=feedback))
        assert messages[-1]["role"] == "assistant"
        assert messages[-1]["content"].startswith("```python\n")  # prefill: no call spent on prose
        user = messages[1]["content"]
        # Invariant parts first (description, scaffold), the variable ones (program, feedback) last.
        assert user.index("A greenhouse") < user.index("soil_moisture") < user.index("P = 1") < user.index(feedback)
    # A program taken from a completion continues the prefill.
    program = prompts.program(Request(call=0, action=GENERATE, parent=-1),
                              "    reward = 0.0\n    done = False\n"
                              "    return np.array([air_temperature, soil_moisture, hours_day]), reward, done\n```")
    assert program.startswith("import math") and "soil_moisture = float(state[1])" in program
    without = CwmbPrompts(GREENHOUSE_TEXT, None).messages(Request(call=0, action=GENERATE, parent=-1))
    assert "soil_moisture" not in without[1]["content"] and without[-1]["content"] == "```python\n"


# ------------------------------------------------------------------------------ checks and repairs


def test_static_checks_find_the_mistakes_of_form():
    program = ("import numpy as np\n"
               "def step(state, action):\n"
               "    row, col, passenger, goal = state\n"
               "    x = int(state[2])\n"
               "    y = speed + 1\n"
               "    a = action[0]\n"
               "    return np.array([row]), 1.0, False\n")
    problems = static_problems(program, state_dim=1, discrete=True, n_actions=4)
    kinds = [(p.line, p.kind) for p in problems]
    assert kinds == [(3, "state_unpacking"), (4, "state_index"), (5, "undefined_name"),
                     (6, "action_form")]
    assert "unpacks the state into 4 names, but the state holds exactly 1 number" in problems[0].message
    assert static_problems("x = 1\n", state_dim=1, discrete=True)[0].kind == "no_model"
    assert static_problems(MODEL.read_text(), state_dim=4, discrete=True) == []
    continuous = "def step(state, action):\n    a, b, c = action\n    return state, 0.0, False\n"
    assert [p.kind for p in static_problems(continuous, state_dim=2, discrete=False, action_dim=2)] == ["action_form"]


def test_static_checks_refuse_random_numbers_in_a_world_model():
    program = ("import random\n"
               "import numpy as np\n"
               "def step(state, action):\n"
               "    nxt = state + np.random.choice([-1, 1], p=[0.5, 0.5])\n"
               "    noise = random.random()\n"
               "    return nxt, 0.0, False\n")
    problems = static_problems(program, state_dim=1, discrete=True, n_actions=2)
    assert [(p.line, p.kind) for p in problems] == [(1, "random"), (4, "random")]
    assert "must be deterministic" in problems[1].message
    assert static_problems("from numpy.random import default_rng\ndef step(state, action):\n"
                           "    return state, 0.0, False\n", state_dim=1, discrete=True)[0].kind == "random"
    # a name that only looks alike is not randomness
    assert static_problems("import numpy as np\ndef step(state, action):\n    random = 1\n"
                           "    return np.array(state) + random, 0.0, False\n",
                           state_dim=1, discrete=True) == []


def test_repairs_fix_form_without_changing_other_lines():
    program = ("def step(state, action):\n"
               "    nxt = np.zeros(2, dtype=int)\n"
               "    nxt[0] = state[0] + math.sin(0.5)\n"
               "    if action == 1:\n"
               "        return [state[0], state[1]], 1, 0\n"
               "    return nxt, 0, False\n")
    repaired, repairs = repair(program)
    assert sorted(r.kind for r in repairs) == ["done_as_bool", "float_state_dtype", "missing_import",
                                               "missing_import", "reward_as_float", "reward_as_float",
                                               "state_as_array"]
    assert repaired.startswith("import math\nimport numpy as np\n")
    assert "np.zeros(2, dtype=np.float64)" in repaired
    assert "return np.array([state[0], state[1]], dtype=np.float64), 1.0, False" in repaired
    assert "    nxt[0] = state[0] + math.sin(0.5)\n" in repaired
    assert repair(MODEL.read_text()) == (MODEL.read_text(), [])


def test_a_repair_is_recorded_in_the_run_dir_and_is_not_an_llm_call(tmp_path):
    good = MODEL.read_text()
    missing_math = good.replace("import math\n", "")
    assert missing_math != good
    world = make_cwmb_world("CartPole-v1")
    prompts, evaluator = world.prompts, world.evaluator
    llm = ScriptedLLM([fence(missing_math)])
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec("worldcoder"))
    result = synthesize(Rex(seed=0), llm=llm, prompts=prompts, evaluator=evaluator, budget=1,
                        run_dir=run_dir)
    assert llm.calls == [0] and result.accounting.calls == 1 and result.accounting.repairs == 1
    assert not result.best_evaluation.buggy and result.best_evaluation.score == 1.0
    record = json.loads((tmp_path / "run" / "repairs" / "0000.json").read_text())
    assert [r["kind"] for r in record["repairs"]] == ["missing_import"]
    assert record["original"] == missing_math and "import math" in record["program"]
    assert (tmp_path / "run" / "programs" / "0000.py").read_text() == record["program"]
    accounting = json.loads((tmp_path / "run" / "accounting.json").read_text())
    assert accounting["calls"] == 1 and accounting["repairs"] == 1


def test_a_fix_answer_with_only_the_missing_piece_is_put_into_the_program_it_fixes(tmp_path):
    good = MODEL.read_text()
    no_tau = good.replace("TAU = 0.02\n", "")
    assert no_tau != good
    piece = "# the missing constant; the rest of the program stays as it was\nTAU = 0.02\n"
    world = make_cwmb_world("CartPole-v1")
    prompts, evaluator = world.prompts, world.evaluator
    llm = ScriptedLLM([fence(no_tau), fence(piece)])
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec("worldcoder"))
    result = synthesize(Rex(seed=0), llm=llm, prompts=prompts, evaluator=evaluator, budget=2,
                        run_dir=run_dir)
    first = json.loads((tmp_path / "run" / "programs" / "0000.json").read_text())
    assert first["buggy"] and "TAU" in first["feedback"]
    assert json.loads((tmp_path / "run" / "calls" / "0001.json").read_text())["request"]["action"] == "fix"
    record = json.loads((tmp_path / "run" / "repairs" / "0001.json").read_text())
    assert [r["kind"] for r in record["repairs"]] == ["merged_into_parent"]
    assert record["original"].strip() == piece.strip()
    assert "TAU = 0.02" in record["program"] and "def step(state, action):" in record["program"]
    assert result.best_call == 1 and result.best_evaluation.score == 1.0
    assert result.accounting.calls == 2


def test_merging_a_partial_answer_replaces_same_named_pieces_and_leaves_whole_programs_alone():
    from codeworld.synthesis._repairs import merge_into_parent

    parent = ("import numpy as np\n\nLIMIT = 1.0\n\n\ndef clip(x):\n    return x\n\n\n"
              "def step(state, action):\n    return np.array([clip(state[0])]), 0.0, state[0] > LIMIT\n")
    answer = "import math\n\n\ndef clip(x):\n    return max(-LIMIT, min(LIMIT, x))\n\n\nSCALE = 2.0\n"
    merged, repairs = merge_into_parent(answer, parent)
    assert [r.kind for r in repairs] == ["merged_into_parent"]
    assert merged.startswith("import math\nimport numpy as np\n")
    assert merged.count("def clip") == 1 and "max(-LIMIT, min(LIMIT, x))" in merged
    assert merged.index("SCALE = 2.0") < merged.index("def step") and "LIMIT = 1.0" in merged
    namespace: dict = {}
    exec(compile(merged, "<test>", "exec"), namespace)  # the test's own program, not an LLM's
    assert namespace["step"](np.array([3.0]), 0)[0].tolist() == [1.0]
    whole = parent.replace("0.0, state", "1.0, state")
    assert merge_into_parent(whole, parent) == (whole, [])  # an answer with its own step
    assert merge_into_parent("# nothing here\n", parent) == ("# nothing here\n", [])


def test_static_check_messages_reach_fix_without_running_the_program(tmp_path):
    wrong_form = MODEL.read_text().replace(
        "x, x_dot, theta, theta_dot = state[0], state[1], state[2], state[3]",
        "x, x_dot, theta, theta_dot, extra = state")
    world = make_cwmb_world("CartPole-v1")
    prompts, evaluator = world.prompts, world.evaluator
    llm = ScriptedLLM([fence(wrong_form), fence(MODEL.read_text())])
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec("gif-mcts"))
    result = synthesize(GifMcts(seed=0), llm=llm, prompts=prompts, evaluator=evaluator, budget=2,
                        run_dir=run_dir)
    first = json.loads((tmp_path / "run" / "programs" / "0000.json").read_text())
    assert first["buggy"] and first["report"]["stage"] == "static_check"
    assert first["report"]["n_predicted"] == 0
    fix = json.loads((tmp_path / "run" / "calls" / "0001.json").read_text())
    assert fix["request"]["action"] == "fix"
    assert "unpacks the state into 5 names, but the state holds exactly 4 numbers" in fix["messages"][1]["content"]
    assert result.best_evaluation.score == 1.0


def test_smoke_run_in_the_sandbox_stops_a_failing_program_before_the_full_pass():
    crashing = MODEL.read_text().replace("cos_t = math.cos(theta)", "cos_t = math.cos(theta) / 0.0 ** 1")
    world = make_cwmb_world("CartPole-v1")
    evaluator = world.evaluator
    evaluation = evaluator.evaluate(crashing)
    assert evaluation.buggy and evaluation.report["stage"] == "smoke"
    assert "ZeroDivisionError" in evaluation.feedback and "first recorded transition" in evaluation.feedback
    assert evaluation.report["n_predicted"] == 0


def test_checks_switched_off_change_nothing():
    missing_math = MODEL.read_text().replace("import math\n", "")
    world = make_cwmb_world("CartPole-v1", assist=AssistConfig(checks=False))
    evaluator = world.evaluator
    assert evaluator.prepare(missing_math) == (missing_math, [])
    evaluation = evaluator.evaluate(missing_math)
    assert evaluation.buggy and "stage" not in evaluation.report and "math" in evaluation.feedback


# ------------------------------------------------------------------------------ error summary


def test_error_summary_carries_the_data_of_a_known_wrong_model():
    n = 20
    states = np.stack([np.arange(n, dtype=float), np.zeros(n), np.ones(n)], axis=1)
    truth = states + np.array([1.0, 0.5, 0.0])
    pred = truth.copy()
    pred[:, 0] += 2.0           # air temperature always 2 too high
    pred[:10, 1] = states[:10, 1]  # soil moisture left unchanged in half of them
    rewards = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    pred_rewards = np.ones(n)   # -1 predicted as 1 ten times
    dones = np.zeros(n, bool)
    dones[[4, 9]] = True
    pred_dones = np.zeros(n, bool)
    text = summarize_errors(
        states=states, actions=np.zeros((n, 1)), next_states=truth, rewards=rewards, dones=dones,
        predicted_states=pred, predicted_rewards=pred_rewards, predicted_dones=pred_dones,
        names=("air_temperature", "soil_moisture", "hours_day"), state_atol=1e-6, state_rtol=0.0,
        reward_atol=1e-6, reward_rtol=0.0, discrete=True, max_tokens=700, max_examples=3)
    assert text.startswith("Over all 20 recorded transitions, the program is wrong on 20 (100%).")
    assert "- air_temperature (state[0]): wrong in 100%, typical error +2 (predicted minus true)" in text
    assert "- soil_moisture (state[1]): wrong in 50%, typical error -0.5" in text
    assert "mostly left unchanged where it should change" in text
    assert "- always right: hours_day" in text
    assert "Reward: wrong in 50% (true -1 predicted 1: 10x)." in text
    assert "Done: missed 2 of 2 terminations." in text
    examples = [block for block in text.split("\n\n") if block.startswith("Example")]
    assert 2 <= len(examples) <= 3
    assert len({block.splitlines()[0] for block in examples}) == len(examples)  # different groups
    short = summarize_errors(
        states=states, actions=np.zeros((n, 1)), next_states=truth, rewards=rewards, dones=dones,
        predicted_states=pred, predicted_rewards=pred_rewards, predicted_dones=pred_dones,
        names=("a", "b", "c"), state_atol=1e-6, state_rtol=0.0, reward_atol=1e-6,
        reward_rtol=0.0, discrete=True, max_tokens=60, max_examples=3)
    assert len(short) <= 60 * 4 and "Example" not in short


def test_improve_prompt_shows_the_error_summary_with_component_names(tmp_path):
    good = MODEL.read_text()
    wrong = good.replace("TAU = 0.02", "TAU = 0.03")
    # no constant fit: it would correct TAU before any improve call
    world = make_cwmb_world("CartPole-v1", assist=AssistConfig(fit_constants=False))
    prompts, evaluator = world.prompts, world.evaluator
    llm = ScriptedLLM([fence(wrong), fence(good)])
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec("worldcoder"))
    synthesize(Rex(seed=0), llm=llm, prompts=prompts, evaluator=evaluator, budget=2, run_dir=run_dir)
    first = json.loads((tmp_path / "run" / "programs" / "0000.json").read_text())
    assert not first["buggy"] and first["feedback"].startswith(f"Over all {len(evaluator.scorer.buffer)} recorded transitions")
    improve = json.loads((tmp_path / "run" / "calls" / "0001.json").read_text())
    assert improve["request"]["action"] == "improve"
    user = improve["messages"][1]["content"]
    assert "Fix one thing: new " in user and "its largest errors (state, action" in user
    assert improve["messages"][-1]["content"].startswith("```python\n")
    world = make_cwmb_world("CartPole-v1", assist=AssistConfig(error_summary=False))
    off_prompts, off_evaluator = world.prompts, world.evaluator
    off = off_evaluator.evaluate(wrong)
    assert off.feedback.startswith("transition ")
    message = off_prompts.messages(Request(call=1, action=IMPROVE, parent=0, program=wrong,
                                           feedback=off.feedback, mispredicted=off.mispredicted))
    assert "A transition it mispredicts:" in message[1]["content"]


# ------------------------------------------------------------------------------ config and old runs


def test_switches_are_config_fields_and_older_run_dirs_still_load(tmp_path, capsys):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([fence(MODEL.read_text())]))
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", f"scripted:{script}", "--budget", "1",
                 "--out", str(out), "--set", "assist.scaffold=off"]) == 0
    meta = json.loads((out / "run.json").read_text())
    assert meta["config"]["assist"] == {**AssistConfig().__dict__, "scaffold": False}
    call = json.loads((out / "calls" / "0000.json").read_text())
    assert "The form of the program" not in call["messages"][1]["content"]
    # A run directory written before these switches existed: no assist config, no repairs count.
    del meta["config"]["assist"]
    (out / "run.json").write_text(json.dumps(meta))
    accounting = json.loads((out / "accounting.json").read_text())
    del accounting["repairs"]
    (out / "accounting.json").write_text(json.dumps(accounting))
    capsys.readouterr()
    assert main(["show", str(out)]) == 0
    assert "best score 1.0000" in capsys.readouterr().out
    from codeworld.synthesis import GifMctsConfig
    from codeworld.synthesis.registry import config_from_json

    assert config_from_json(GifMctsConfig, meta["config"]).assist == AssistConfig()


@pytest.mark.parametrize("field", ["smoke_transitions", "summary_tokens"])
def test_assist_config_rejects_nonsense(field):
    with pytest.raises(ValueError):
        AssistConfig(**{field: 0})


def test_a_reward_or_done_set_in_some_branches_only_gets_a_default():
    from codeworld.synthesis._repairs import repair

    program = ("import numpy as np\n\n\ndef step(state, action):\n    x = float(state[0])\n"
               "    if x > 1.0:\n        done = True\n    if action == 1:\n        reward = 1.0\n"
               "    return np.array([x + 1.0]), float(reward), bool(done)\n")
    fixed, repairs = repair(program)
    assert [r.kind for r in repairs] == ["result_default", "result_default"]
    assert "    reward = 0.0\n    done = False\n    x = float(state[0])" in fixed
    namespace: dict = {}
    exec(compile(fixed, "<test>", "exec"), namespace)  # the test's own program, not an LLM's
    assert namespace["step"](np.array([0.0]), 0)[1:] == (0.0, False)
    # set on every path at the top: nothing to do
    assert repair(fixed) == (fixed, [])


def test_a_next_state_built_in_some_branches_only_is_built_from_the_named_state_on_the_others():
    from codeworld.synthesis._repairs import repair

    program = ("import numpy as np\n\n\ndef step(state, action):\n    reward = 0.0\n    done = False\n"
               "    total = int(state[0])\n    shown = int(state[1])\n    if action == 0:\n"
               "        next_state = np.array([total, shown], dtype=np.float64)\n        done = True\n"
               "    else:\n        total += 1\n        if total > 21:\n"
               "            next_state = np.array([total, shown], dtype=np.float64)\n"
               "            reward = -1.0\n"
               "    return next_state, float(reward), bool(done)\n")
    fixed, repairs = repair(program)
    assert [r.kind for r in repairs] == ["next_state_default"]
    namespace: dict = {}
    exec(compile(fixed, "<test>", "exec"), namespace)  # the test's own program, not an LLM's
    step = namespace["step"]
    # the branch that built nothing returns the named values as updated there
    assert step(np.array([11.0, 10.0]), 1)[0].tolist() == [12.0, 10.0]
    assert step(np.array([21.0, 10.0]), 1)[0].tolist() == [22.0, 10.0]
    assert step(np.array([11.0, 10.0]), 0)[0].tolist() == [11.0, 10.0]
    assert repair(fixed) == (fixed, [])
    # built on every path: nothing to do
    always = program.replace("    if action == 0:\n", "    next_state = np.array([total, shown])\n    if action == 0:\n")
    assert "next_state_default" not in [r.kind for r in repair(always)[1]]


def test_a_float_state_value_used_as_an_index_is_taken_as_an_int():
    program = (
        "import numpy as np\n\nREWARDS = [0.0, -1.0, -100.0]\n\n\n"
        "def step(state, action):\n"
        "    cell = float(state[0])\n"
        "    kind = state[1]\n"
        "    nxt = cell + 1\n"
        "    reward = REWARDS[kind] + 0.0 * len(REWARDS)\n"
        "    table = [1, 2, 3, 4]\n"
        "    extra = table[cell - 1]\n"
        "    return np.array([nxt, kind]), reward, False\n")
    repaired, done = repair(program)
    assert [r.kind for r in done] == ["int_index", "int_index"]
    assert "REWARDS[int(round(kind))]" in repaired and "table[int(round(cell - 1))]" in repaired
    namespace: dict = {}
    exec(compile(repaired, "model", "exec"), namespace)  # trusted here: written by the test
    assert namespace["step"](np.array([3.0, 2.0]), 0)[1] == -100.0
    untouched = program.replace("REWARDS[kind]", "REWARDS[int(action)]").replace("table[cell - 1]", "table[0]")
    assert repair(untouched) == (untouched, [])

"""The assists of worlds whose states are JSON objects (`codeworld.worlds.objects._states`), and
the WorldCoder agent's rewrites that use them: schema, data section, skeleton, static checks,
repairs, copies."""

from __future__ import annotations

import json

from codeworld.agent import AgentConfig, WorldCoderAgent, make_object_env
from codeworld.agent._reference import SOKOBAN_MODEL
from codeworld.synthesis.fakes import FakeCompletion
from codeworld.worlds.objects._states import (effects_text, object_problems, schema_text,
                                             skeleton_program, state_schema)
from codeworld.synthesis._repairs import repair

STATES = [{"agent": [1, 1], "boxes": [[2, 1]], "walls": [[0, 0], [3, 1]], "mode": "push", "held": None},
          {"agent": [2, 1], "boxes": [[3, 1]], "walls": [[0, 0], [3, 1]], "mode": "walk", "held": "key"}]


def _transition(state, action, next_state, reward=0.0, done=False):
    return {"state": state, "action": action, "next_state": next_state, "reward": reward,
            "done": done, "mission": "reach the end"}


def test_the_schema_names_every_key_with_the_kind_and_values_it_had():
    schema = {f.key: f for f in state_schema(STATES)}
    assert set(schema) == {"agent", "boxes", "walls", "mode", "held"}
    assert schema["agent"].kinds == ("a list of 2 ints",)
    assert schema["boxes"].kinds == ("a list of [int, int] lists",)
    assert schema["mode"].values == ("push", "walk")
    assert schema["held"].kinds == ("a string", "None")
    text = schema_text(list(schema.values()), 2)
    assert "exactly these keys" in text and "- mode: a string, one of \"push\", \"walk\"" in text
    assert "`[x, y] in state[...]`" in text  # lists, not tuples


def test_the_data_section_gives_each_actions_effects_what_they_depend_on_and_the_exceptions():
    right = [_transition({"agent": [x, 1], "facing": 0, "walls": [[5, 1]]}, 1,
                         {"agent": [x + 1, 1], "facing": 0, "walls": [[5, 1]]}) for x in range(3)]
    left = [_transition({"agent": [x, 1], "facing": 1, "walls": [[5, 1]]}, 1,
                        {"agent": [x - 1, 1], "facing": 1, "walls": [[5, 1]]}) for x in range(2, 4)]
    blocked = [_transition({"agent": [4, 1], "facing": 0, "walls": [[5, 1]]}, 1,
                           {"agent": [4, 1], "facing": 0, "walls": [[5, 1]]})]
    goal = [_transition({"agent": [3, 1], "facing": 0, "walls": [[5, 1]]}, 0,
                        {"agent": [3, 1], "facing": 0, "walls": [[5, 1]]}, reward=1.0, done=True)]
    text = effects_text(right + left + blocked + goal, ("stay", "forward"))
    assert "action 1 (forward), 6 times:" in text
    # the move depends on the facing; the blocked step is shown as the exception it is
    assert "agent: +[1, 0] 3x, +[-1, 0] 2x, unchanged 1x; by facing=0: +[1, 0]; facing=1: +[-1, 0]" in text
    assert "e.g. unchanged from {\"agent\": [4, 1]" in text
    assert "action 0 (stay), 1 times:\n  nothing changed" in text
    assert "Rewards: 0 in 6, 1 in 1; episode ends (done True): 1." in text
    assert "e.g. reward 1, done True" in text and "\"agent\": [3, 1]" in text


def test_static_checks_catch_what_small_models_wrote_on_object_states():
    schema = state_schema(STATES)
    program = (
        "def transition(state, action) -> Any:\n"
        "    if state['mission'] == 'x':\n"
        "        return state, 0.0\n"
        "    return dict(state)\n\n"
        "def reward(state, action, next_state, mission):\n"
        "    return 0.0, False\n")
    kinds = {p.kind for p in object_problems(program, schema)}
    assert kinds == {"undefined_name", "state_key", "state_form"}
    assert object_problems(skeleton_program(schema), schema) == []
    missing = object_problems("def transition(state, action):\n    return state\n", schema)
    assert missing[0].kind == "no_model" and "reward" in missing[0].message


def test_repairs_add_the_typing_import_and_put_a_partial_answer_into_its_parent():
    parent = skeleton_program(state_schema(STATES))
    fixed, repairs = repair("from copy import deepcopy\n\ndef reward(state, action, next_state, mission) -> Tuple:\n"
                            "    return 1.0, True\n", parent, ("transition", "reward"))
    kinds = [r.kind for r in repairs]
    assert kinds == ["merged_into_parent", "missing_import"]
    assert "from typing import Tuple" in fixed and "return 1.0, True" in fixed
    assert "def transition(state, action):" in fixed  # kept from the parent
    assert object_problems(fixed, state_schema(STATES)) == []


class _Scripted:
    """Answers each call with the next text ("<skeleton>": the program the prompt starts from)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.prompts = []

    def complete(self, messages, **sampling):
        text = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        self.prompts.append(text)
        answer = self.answers.pop(0) if self.answers else "no code"
        if answer == "<skeleton>":
            start = text.index("```python\n", text.index("Start from this program"))
            answer = text[start:text.index("```", start + 10) + 3]
        return FakeCompletion(answer)


def test_an_agent_rewrite_gets_the_assists_and_a_copy_of_the_skeleton_is_not_scored_again(tmp_path, capsys):
    # the first answer hands back the skeleton it was given, the second has a mistake of form a
    # repair fixes (a missing import), and is the right model
    missing_import = SOKOBAN_MODEL.replace(
        "def transition", "def _cell(p) -> List:\n    return list(p)\n\n\ndef transition")
    llm = _Scripted(["<skeleton>", f"```python\n{missing_import}```"])
    config = AgentConfig(max_env_steps=40, reliable_successes=2, rewrite_calls=3, max_llm_calls=6,
                         epsilon=0.0, rule_model=False)  # the LLM writes the whole program
    with WorldCoderAgent(llm, config, run_dir=tmp_path) as agent:
        result = agent.run_level(make_object_env("sokoban:corridor"))
    prompt = llm.prompts[0]
    assert "A state is a dict with exactly these keys" in prompt and "- boxes:" in prompt
    assert "Start from this program" in prompt
    rewrite = tmp_path / "rewrites" / "0000"
    assert json.loads((rewrite / "programs" / "0000.json").read_text())["report"]["duplicate_of"] == "skeleton"
    repairs = json.loads((rewrite / "repairs" / "0001.json").read_text())["repairs"]
    assert [r["kind"] for r in repairs] == ["missing_import"]
    assert result.reliable_success is not None and result.llm_calls == 2

    # `codeworld show` reads the agent's run: a row per level, a line per rewrite
    from codeworld.cli import main

    assert main(["show", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "WorldCoder agent run, optimism True" in out and "sokoban-corridor" in out
    assert "0  sokoban-corridor      no model" in out and "2 calls, best 1.000" in out


def test_without_the_assists_the_prompts_are_the_plain_ones(tmp_path):
    llm = _Scripted([f"```python\n{SOKOBAN_MODEL}```"])
    config = AgentConfig(max_env_steps=20, reliable_successes=1, assists=False, epsilon=0.0)
    with WorldCoderAgent(llm, config, run_dir=tmp_path) as agent:
        agent.run_level(make_object_env("sokoban:corridor"))
    assert "exactly these keys" not in llm.prompts[0] and "Start from this program" not in llm.prompts[0]


def test_a_transition_that_returns_the_reward_too_is_cut_to_the_state():
    program = ("import copy\n\ndef transition(state, action):\n    new = copy.deepcopy(state)\n"
               "    def pair(x):\n        return x, 1\n"
               "    if action == 1:\n        return new, 1.0, True\n    return (new, 0.0, False)\n\n"
               "def reward(state, action, next_state, mission):\n    return 0.0, False\n")
    fixed, repairs = repair(program, "", ("transition", "reward"))
    assert [r.kind for r in repairs] == ["state_alone", "state_alone"]
    assert "return new\n" in fixed and "return x, 1" in fixed  # a nested function is its own
    assert object_problems(fixed, state_schema(STATES)) == []


def test_the_parts_of_the_state_a_mission_names_are_found_by_its_words():
    from codeworld.worlds.objects._states import mission_parts

    state = {"agent": {"x": 1, "y": 1}, "boxes": [[3, 1]], "walls": [[0, 0]],
             "objects": [{"type": "goal", "color": "green", "x": 3, "y": 3},
                         {"type": "key", "color": "red", "x": 2, "y": 2}],
             "open": {"cabinet 1": False, "fridge 1": False},
             "items": {"mug 1": {"in": "table 1"}, "apple 1": {"in": "fridge 1"}}}
    assert mission_parts("get to the green goal square", state) == [
        'state["objects"][0] = {"color": "green", "type": "goal", "x": 3, "y": 3}']
    assert mission_parts("put a mug in a cabinet", state) == [
        'state["items"]["mug 1"] = {"in": "table 1"}', 'state["open"]["cabinet 1"] = false']
    assert mission_parts("push the box", state) == ['state["boxes"] = [[3, 1]]']  # a plural
    assert mission_parts("dance", state) == []


def test_an_agent_rewrite_is_told_what_the_mission_names_and_that_nothing_was_rewarded(tmp_path):
    # a model that rewards every step: accepted before any data, contradicted at the first step
    always = SOKOBAN_MODEL.split("def reward")[0] + (
        "def reward(state, action, next_state, mission):\n    return 1.0, True\n")
    llm = _Scripted([f"```python\n{always}```", f"```python\n{SOKOBAN_MODEL}```"])
    config = AgentConfig(max_env_steps=40, reliable_successes=2, rewrite_calls=3, max_llm_calls=6,
                         epsilon=0.0, rule_model=False)  # the prompts of a whole program
    with WorldCoderAgent(llm, config, run_dir=tmp_path) as agent:
        agent.run_level(make_object_env("sokoban:corridor"))
    assert 'the mission\'s words name' in llm.prompts[0] and '- state["boxes"] = [[' in llm.prompts[0]
    assert "No recorded step has completed a mission yet" not in llm.prompts[0]  # no data yet
    later = [p for p in llm.prompts[1:] if "No recorded step has completed a mission yet" in p]
    assert later and "- state[\"targets\"]" in later[0]


def test_a_reward_that_reads_the_transitions_local_name_reads_its_next_state_parameter():
    program = ("import copy\n\ndef transition(state, action):\n    new = copy.deepcopy(state)\n"
               "    if action == 1:\n        new[\"mode\"] = \"walk\"\n    return new\n\n"
               "def reward(state, action, after, mission):\n"
               "    if new[\"mode\"] == \"walk\" and new[\"held\"] is not None:\n"
               "        return 1.0, True\n    return 0.0, False\n")
    assert any("'new'" in p.message for p in object_problems(program, state_schema(STATES)))
    fixed, repairs = repair(program, "", ("transition", "reward"))
    assert [(r.kind, r.line) for r in repairs] == [("borrowed_result", 10)]
    assert 'if after["mode"] == "walk" and after["held"] is not None:' in fixed
    assert "    new = copy.deepcopy(state)\n" in fixed and "    return new\n" in fixed
    assert object_problems(fixed, state_schema(STATES)) == []
    # a name the reward defines itself, or the CWMB contract, is left alone
    own = program.replace("def reward(state, action, after, mission):\n",
                          "def reward(state, action, after, mission):\n    new = after\n")
    assert repair(own, "", ("transition", "reward"))[1] == []
    assert all(r.kind != "borrowed_result" for r in repair(program)[1])
    # scopes as Python has them: a helper's own `new` does not define the reward's
    helper = program.replace("def reward(state, action, after, mission):\n",
                             "def reward(state, action, after, mission):\n"
                             "    def copied(x):\n        new = dict(x)\n        return new\n")
    fixed, repairs = repair(helper, "", ("transition", "reward"))
    assert [r.kind for r in repairs] == ["borrowed_result"]
    assert "        new = dict(x)\n        return new\n" in fixed and 'if after["mode"]' in fixed


def test_a_carried_program_shows_the_keys_as_the_data_has_them_now():
    from codeworld.worlds.objects._states import with_current_schema

    first = state_schema(STATES[:1])  # "held" was only ever None then
    program = skeleton_program(first).replace("    return new\n", "    # mine: kept\n    return new\n")
    assert "    # held: None, one of null\n" in program
    now = with_current_schema(program, state_schema(STATES))
    assert "    # held: a string or None, one of \"key\", null\n" in now
    assert now.replace("    # held: a string or None, one of \"key\", null\n", "") == program.replace(
        "    # held: None, one of null\n", "").replace('# mode: a string, one of "push"',
                                                    '# mode: a string, one of "push", "walk"')
    assert "    # mine: kept\n" in now  # the program's own comments stay
    assert with_current_schema("def transition(state, action):\n    return state\n",
                               state_schema(STATES)) == "def transition(state, action):\n    return state\n"

    # in the agent: the skeleton accepted before any data is shown, at the next rewrite, with the
    # keys as the recorded steps have them
    llm = _Scripted(["<skeleton>"])
    config = AgentConfig(max_env_steps=12, reliable_successes=2, rewrite_calls=1, max_llm_calls=3,
                         epsilon=0.0, optimism=False, rule_model=False)
    with WorldCoderAgent(llm, config) as agent:
        agent.run_level(make_object_env("household:place"))
    later = [p for p in llm.prompts[1:] if "The current world model:" in p]
    assert later and "    # at: None, one of null\n" in llm.prompts[0].split("Start from this program")[1]
    shown = later[0].split("The current world model:")[1]
    assert "    # at: a string or None" in shown and "    # at: None, one of null\n" not in shown

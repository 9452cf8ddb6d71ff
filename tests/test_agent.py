"""The WorldCoder agent's loop with a scripted LLM: rewrites, optimism, transfer, timeouts, records."""

import json
from pathlib import Path

import pytest

from codeworld.agent._config import AgentConfig
from codeworld.worlds.objects._evaluate import AgentEvaluator
from codeworld.agent._loop import WorldCoderAgent, nearest_missions
from codeworld.agent._minigrid_env import MiniGridEnv
from codeworld.agent._reference import MINIGRID_MODEL, SOKOBAN_MODEL
from codeworld.agent._sokoban import make_sokoban
from codeworld.synthesis.config import SamplingConfig
from codeworld.sandbox import Sandbox
from codeworld.synthesis.fakes import ScriptedLLM

GOOD = SOKOBAN_MODEL
# Left and right swapped: wrong, but it reaches the goal in its own imagination.
SWAPPED = SOKOBAN_MODEL.replace("2: (-1, 0), 3: (1, 0)", "2: (1, 0), 3: (-1, 0)")
# Right dynamics, but reward never comes: explains reward-free data, cannot reach the goal.
NEVER = SOKOBAN_MODEL.split("def reward")[0] + "def reward(state, action, next_state, mission):\n    return 0.0, False\n"
HANG = "def transition(state, action):\n    while True:\n        pass\n\n\ndef reward(state, action, next_state, mission):\n    return 0.0, False\n"


def fenced(program):
    return f"Here is the model.\n\n```python\n{program}```\n"


class Script:
    """A scripted LLM answering calls in order, whatever their index; keeps the prompts."""

    def __init__(self, programs):
        self.programs = list(programs)
        self.prompts = []
        self.llm = ScriptedLLM(self._answer)

    def _answer(self, call, messages):
        self.prompts.append(next(m["content"] for m in reversed(messages) if m["role"] == "user"))
        if not self.programs:
            raise AssertionError("the agent asked for more LLM calls than scripted")
        return fenced(self.programs.pop(0))


def config(**changes):
    # the LLM's part of the loop, call by call: the rule model and the exploration bonus, which
    # change what is asked and where the agent goes, are off here (tests/test_rules.py has them)
    base = dict(epsilon=0.0, max_env_steps=60, max_llm_calls=6, rewrite_calls=3,
                reliable_successes=2, max_episode_steps=20, eval_timeout_s=20.0,
                rule_model=False, explore_unseen=False,
                # one answer per call: the script is read call by call (a copy asked again within
                # its call is tests/test_copy_resamples.py's)
                sampling=SamplingConfig(temperature=0.7, max_tokens=1200, copy_resamples=0))
    base.update(changes)
    return AgentConfig(**base)


def test_contradicting_transition_triggers_a_rewrite():
    script = Script([SWAPPED, GOOD])
    with WorldCoderAgent(script.llm, config()) as agent:
        result = agent.run_level(make_sokoban("corridor"))
    reasons = [r["reason"] for r in result.rewrites]
    assert reasons == ["no model", "contradicted by a new transition"]
    assert result.rewrites[1]["accepted"] and result.llm_calls == 2
    assert agent.program.strip() == GOOD.strip()
    # the rewrite was asked to explain the transition the swapped model got wrong
    assert "true changes: nothing" in script.prompts[1] and "the program's changes: agent" in script.prompts[1]
    assert result.first_success is not None and result.reliable_success is not None
    assert result.reliable_success.env_steps == result.env_steps


def _reward_free_data(env, steps=6):
    state, mission = env.reset()
    data = []
    for action in [0, 1, 2, 0, 1, 2][:steps]:
        nxt, reward, done, _ = env.step(action)
        data.append({"state": state, "action": action, "next_state": nxt, "reward": reward,
                     "done": done, "mission": mission})
        state = nxt
    start, mission = env.reset()
    return data, [{"state": start, "mission": mission}]


def test_optimism_rejects_a_model_that_cannot_reach_the_goal():
    env = make_sokoban("corridor")
    data, starts = _reward_free_data(env)
    with Sandbox() as sandbox:
        def evaluator(optimism):
            return AgentEvaluator(sandbox, data, starts, env.n_actions, env.action_names,
                                  optimism=optimism, max_nodes=5000, max_depth=30, timeout_s=20)

        optimistic = evaluator(True).evaluate(NEVER)
        plain = evaluator(False).evaluate(NEVER)
        good = evaluator(True).evaluate(GOOD)
    assert not optimistic.buggy and optimistic.score == pytest.approx(0.5)
    assert not optimistic.report["accepted"] and "cannot be achieved" in optimistic.feedback
    assert plain.score == 1.0 and plain.report["accepted"]
    assert good.score == 1.0 and good.report["accepted"]


def test_optimism_in_the_loop_asks_again_and_without_it_accepts():
    script = Script([NEVER, GOOD])
    with WorldCoderAgent(script.llm, config()) as agent:
        result = agent.run_level(make_sokoban("corridor"))
    first = result.rewrites[0]
    assert first["calls"] == 2 and first["scores"] == [0.5, 1.0] and first["accepted"]
    assert "cannot be achieved" in script.prompts[1]
    assert result.reliable_success is not None

    # Without optimism the reward-free model is accepted at once; the agent then acts at random
    # (no plan reaches reward) until a real reward contradicts the model.
    script = Script([NEVER, GOOD])
    with WorldCoderAgent(script.llm, config(optimism=False)) as agent:
        result = agent.run_level(make_sokoban("corridor"))
    first = result.rewrites[0]
    assert first["calls"] == 1 and first["accepted"]
    first_reward = next(i for i, t in enumerate(agent.data) if t["reward"] > 0) + 1
    assert result.rewrites[1]["reason"] == "contradicted by a new transition"
    assert result.rewrites[1]["env_steps"] == first_reward > 3  # more than the 3 steps a plan needs


def test_transfer_starts_the_next_level_from_the_previous_program():
    script = Script([GOOD])
    with WorldCoderAgent(script.llm, config()) as agent:
        first, second = agent.run_curriculum([make_sokoban("corridor"), make_sokoban("turn")])
    assert first.llm_calls == 1 and second.llm_calls == 0
    assert second.final_program.strip() == GOOD.strip() and second.reliable_success is not None

    script = Script([GOOD, GOOD])
    with WorldCoderAgent(script.llm, config(transfer=False)) as agent:
        first, second = agent.run_curriculum([make_sokoban("corridor"), make_sokoban("turn")])
    assert first.llm_calls == 1 and second.llm_calls == 1
    assert second.rewrites[0]["reason"] == "no model"

    # Transfer stays within a family: a Sokoban model is no start for MiniGrid.
    script = Script([GOOD, MINIGRID_MODEL])
    with WorldCoderAgent(script.llm, config()) as agent:
        _, grid = agent.run_curriculum([make_sokoban("corridor"), MiniGridEnv("empty")], seeds=[0])
    assert grid.rewrites[0]["reason"] == "no model" and grid.reliable_success is not None


def test_transfer_to_a_new_mission_refines_the_previous_program():
    goal_only = MINIGRID_MODEL.split("    if mission.startswith(\"open the door\"):")[0] + "    return 0.0, False\n"
    script = Script([goal_only, MINIGRID_MODEL])
    with WorldCoderAgent(script.llm, config(max_env_steps=80, max_episode_steps=30, plan_max_nodes=1500)) as agent:
        first, second = agent.run_curriculum([MiniGridEnv("empty"), MiniGridEnv("unlock")],
                                             seeds=[0])
    assert first.reliable_success is not None and first.llm_calls == 1
    assert second.rewrites[0]["reason"] == "goal unreachable"
    prompt = script.prompts[1]
    assert "def transition(state, action):" in prompt and "cannot be achieved" in prompt
    assert "open the door" in prompt and "\"get to the green goal square\" (level minigrid-empty)" in prompt
    assert second.reliable_success is not None and agent.program.strip() == MINIGRID_MODEL.strip()


def test_a_model_that_hangs_the_planner_times_out_and_the_agent_goes_on():
    script = Script([HANG, GOOD])
    with WorldCoderAgent(script.llm, config(eval_timeout_s=1.5)) as agent:
        result = agent.run_level(make_sokoban("corridor"))
    first = result.rewrites[0]
    assert first["statuses"][0] == "timeout" and first["scores"][0] == 0.0
    assert "longer than 1.5 s" in script.prompts[1]
    assert agent.program.strip() == GOOD.strip() and result.reliable_success is not None


def test_run_directory_has_accounting_levels_and_calls(tmp_path):
    script = Script([SWAPPED, GOOD])
    with WorldCoderAgent(script.llm, config(), run_dir=tmp_path) as agent:
        agent.run_curriculum([make_sokoban("corridor")])
    summary = json.loads((tmp_path / "accounting.json").read_text())
    row = summary["levels"][0]
    assert row["level"] == "sokoban-corridor" and row["llm_calls"] == 2
    assert row["first_success"]["llm_calls"] == 2 and row["reliable_success"]["episodes"] >= 2
    level = tmp_path / "levels" / "00-sokoban-corridor"
    assert (level / "model.py").read_text().strip() == GOOD.strip()
    assert json.loads((level / "level.json").read_text())["rewrites"][1]["accepted"]
    assert (tmp_path / "rewrites" / "0001" / "calls" / "0000.json").is_file()
    spec = json.loads((tmp_path / "rewrites" / "0000" / "run.json").read_text())  # keys of before
    legacy = json.loads((Path(__file__).parent / "data" / "legacy_runs" / "agent_rewrite.run.json")
                        .read_text())
    # a rewrite is a synthesis run like any other: the keys of before, and its method's config,
    # budget, status and finish switches, so that `codeworld show` and a resume read it
    assert set(legacy) | {"created", "codeworld_version"} <= set(spec)
    assert spec["method"] == "worldcoder" and spec["status"] == "finished" and spec["config"]
    assert {k: spec[k] for k in legacy if k != "method"} == {k: v for k, v in legacy.items()
                                                              if k != "method"}
    lines = (level / "transitions.jsonl").read_text().splitlines()
    assert len(lines) == row["env_steps"]


def test_nearest_missions():
    known = ["get to the green goal square", "open the door", "pick up the purple box"]
    assert nearest_missions("pick up the blue box", known)[0] == "pick up the purple box"
    assert nearest_missions("open the door", known)[0] != "open the door"


def test_a_model_that_raises_while_planning_is_buggy_with_its_error():
    env = make_sokoban("corridor")
    state, mission = env.reset()
    bad = "def transition(state, action):\n    return state['nope']\n\n\ndef reward(state, action, next_state, mission):\n    return 0.0, False\n"
    with Sandbox() as sandbox:
        evaluation = AgentEvaluator(sandbox, [], [{"state": state, "mission": mission}], 4,
                                    env.action_names, optimism=True, max_nodes=100, max_depth=10,
                                    timeout_s=20).evaluate(bad)
    assert evaluation.buggy and evaluation.score == 0.0
    assert "KeyError" in evaluation.feedback and "line 2" in evaluation.feedback


def test_agent_models_run_in_the_sandbox_worker_not_in_this_process():
    import os

    spy = ("import os\nPID = os.getpid()\n\n\ndef transition(state, action):\n    return {'pid': PID}\n\n\n"
           "def reward(state, action, next_state, mission):\n    return 1.0, True\n")
    script = Script([spy])
    with WorldCoderAgent(script.llm, config(max_env_steps=1)) as agent:
        env = make_sokoban("corridor")
        state, mission = env.reset()
        check = agent.check(env, [{"state": state, "mission": mission}], program=spy)
    worker_pid = check.plans[0]["predicted"][0]["next_state"]["pid"]
    assert worker_pid != os.getpid()


# Right dynamics; reward on every step: the errors are all in `reward`.
ALWAYS = SOKOBAN_MODEL.split("def reward")[0] + "def reward(state, action, next_state, mission):\n    return 1.0, True\n"


def test_feedback_says_which_function_is_wrong_and_describes_a_repeated_transition_once():
    env = make_sokoban("corridor")
    data, starts = _reward_free_data(env)
    data = data + [dict(data[0])]  # the same transition recorded twice
    with Sandbox() as sandbox:
        def feedback(program):
            return AgentEvaluator(sandbox, data, starts, env.n_actions, env.action_names,
                                  optimism=False, max_nodes=5000, max_depth=30,
                                  timeout_s=20).evaluate(program).feedback

        always, swapped = feedback(ALWAYS), feedback(SWAPPED)
    assert "explains 0 of 7 recorded transitions. `transition` is right on all 7 (keep it as it " \
           "is); `reward` is wrong on 7" in always
    first = "state: " + always.split("state: ")[1].split("\n")[0]
    assert always.count(first + "\naction: 0") == 1  # data[0] and its copy: described once
    assert "`reward` is right on all 7 (keep it as it is); `transition` is wrong on" in swapped


def test_after_a_rewrite_that_found_nothing_the_next_waits_for_new_data():
    # Every answer is wrong on every step: the agent keeps being contradicted.
    script = Script([ALWAYS] * 12)
    env = make_sokoban("corridor")
    with WorldCoderAgent(script.llm, config(max_llm_calls=12, rewrite_calls=2, max_env_steps=40,
                                            rewrite_growth=1.0)) as agent:
        result = agent.run_level(env)
    sizes = [r["env_steps"] for r in result.rewrites]
    assert sizes[0] == 0 and not any(r["accepted"] for r in result.rewrites[1:])
    # each later rewrite saw at least one new transition per action and twice the data of the last
    for before, after in zip(sizes[1:], sizes[2:]):
        assert after - before >= max(env.n_actions, before)
    assert len(sizes) >= 3

    # growth 0 with one new transition per action at least: never two rewrites on the same data
    script = Script([ALWAYS] * 12)
    with WorldCoderAgent(script.llm, config(max_llm_calls=12, rewrite_calls=2, max_env_steps=40,
                                            rewrite_growth=0.0)) as agent:
        result = agent.run_level(env)
    sizes = [r["env_steps"] for r in result.rewrites]
    assert all(after - before >= env.n_actions for before, after in zip(sizes[1:], sizes[2:]))


def test_a_wrong_model_does_not_make_the_agent_repeat_a_transition_it_already_recorded():
    # ALWAYS is accepted before any data (reward at the first step of every plan); with no
    # LLM budget left it stays wrong, and its plans would step into the same wall for ever.
    script = Script([ALWAYS])
    env = make_sokoban("corridor")
    with WorldCoderAgent(script.llm, config(max_llm_calls=1, max_env_steps=30,
                                            reliable_successes=1)) as agent:
        agent.run_level(env)
    tried: dict[str, set] = {}
    for t in agent.data:
        if t["reward"] > 0:
            break
        key = json.dumps(t["state"], sort_keys=True)
        seen = tried.setdefault(key, set())
        # an action is taken again from a state only once every action has been tried there
        assert t["action"] not in seen or len(seen) == env.n_actions
        seen.add(t["action"])
    assert len(agent.data) > env.n_actions


def _with_one_answer(program, seed, **changes):
    """MiniGrid Empty with one LLM answer and no budget left after it."""
    script = Script([program])
    with WorldCoderAgent(script.llm, config(max_llm_calls=1, epsilon=0.1, seed=seed,
                                            **changes)) as agent:
        return agent.run_level(MiniGridEnv("empty"))


def test_exploring_past_a_wrong_model_reaches_the_goal_by_the_least_visited_outcomes():
    # A model with the right dynamics that predicts reward on every step, and no LLM budget to
    # fix it: every plan is wrong, so the agent explores. Untried actions first, then the action
    # whose recorded outcome is the least visited state, walks it out of the start's corner; a
    # uniformly random walk did not reach the goal of this level in 200 steps on these seeds.
    always = MINIGRID_MODEL.split("def reward")[0] + (
        "def reward(state, action, next_state, mission):\n    return 1.0, True\n")
    for seed in (1, 2):
        result = _with_one_answer(always, seed, max_env_steps=200, max_episode_steps=50,
                                  reliable_successes=1)
        assert result.first_success is not None and result.first_success.env_steps <= 150


def test_under_optimism_a_model_that_explains_the_data_outranks_one_that_only_rewards_every_step():
    env = make_sokoban("corridor")
    data, starts = _reward_free_data(env)
    # wrong on the moves left and right, never rewarded: explains part of the data, reaches nothing
    partial = SWAPPED.split("def reward")[0] + NEVER.split(SOKOBAN_MODEL.split("def reward")[0])[1]
    with Sandbox() as sandbox:
        def evaluate(program):
            return AgentEvaluator(sandbox, data, starts, env.n_actions, env.action_names,
                                  optimism=True, max_nodes=5000, max_depth=30,
                                  timeout_s=20).evaluate(program)

        always, honest = evaluate(ALWAYS), evaluate(partial)
    assert always.score == 0.0  # explains no transition, however optimistic
    assert 0.0 < honest.score < 0.5 and honest.report["check"]["reached"] == [False]


def test_a_model_shown_wrong_in_an_episode_is_not_followed_until_it_is_replaced():
    # Forward moves diagonally by the direction's number (a rule a small LLM wrote): the plans
    # keep turning towards a step the data already contradicts. With no budget to replace the
    # model, the agent explores for the rest of each episode instead of circling at the start.
    wrong = MINIGRID_MODEL.replace("DIRS = [(1, 0), (0, 1), (-1, 0), (0, -1)]",
                                   "DIRS = [(0, 0), (1, 1), (2, 2), (3, 3)]")
    assert wrong != MINIGRID_MODEL
    successes = 0
    for seed in (0, 1):
        result = _with_one_answer(wrong, seed, max_env_steps=150, max_episode_steps=40,
                                  reliable_successes=3)
        assert result.rewrites[0]["accepted"]
        successes += sum(e["success"] for e in result.episode_log)
    assert successes >= 3  # following the plans: 1 in the same 300 steps


def test_the_best_transition_and_the_best_reward_of_a_rewrite_are_joined_without_a_call():
    from codeworld.worlds.objects._states import skeleton_program, state_schema

    env = make_sokoban("corridor")
    state, mission = env.reset()
    data = []
    for action in [3, 3, 2, 0, 3, 1]:  # moves along the corridor and into its walls
        nxt, reward, done, _ = env.step(action)
        data.append({"state": state, "action": action, "next_state": nxt, "reward": reward,
                     "done": done, "mission": mission})
        state = nxt
    starts = [{"state": env.reset()[0], "mission": mission}]
    assert not any(t["reward"] for t in data)
    schema = state_schema([s["state"] for s in starts] + [t["next_state"] for t in data])
    with Sandbox() as sandbox:
        evaluator = AgentEvaluator(sandbox, data, starts, env.n_actions, env.action_names,
                                   optimism=False, max_nodes=5000, max_depth=30, timeout_s=20,
                                   schema=schema)
        evaluator.skeleton = skeleton_program(schema)
        # the LLM's answers: right moves with a reward on every step, wrong moves with none
        assert evaluator.evaluate(ALWAYS).score == 0.0
        assert evaluator.evaluate(SWAPPED).score < 1.0
        program, check = evaluator.compose()
    assert check.consistency == 1.0 and check.accepted(False)
    assert "def transition" in program and "return 1.0, True" not in program


def test_a_rewrite_takes_the_joined_program_when_it_explains_more():
    # every answer rewards every step; the skeleton's reward (never) is right on the data
    script = Script([ALWAYS] * 6)
    with WorldCoderAgent(script.llm, config(optimism=False, max_llm_calls=6)) as agent:
        result = agent.run_level(make_sokoban("corridor"))
    joined = [r for r in result.rewrites if r["composed"] is not None]
    assert joined and joined[0]["accepted"] and joined[0]["composed"] == 1.0
    assert "return 1.0, True" not in agent.program


def test_after_transfer_a_level_paces_its_rewrites_by_its_own_data():
    # Every answer is wrong. The second level starts with the first level's data (22
    # transitions) and a model that data contradicts; after its first rewrite fails, the next
    # is due once the level itself has recorded one transition per action (and then doubled
    # what it recorded), not once all the data has doubled: that would need 22 more transitions,
    # and the level's second episode starts after 20.
    script = Script([ALWAYS] * 30)
    with WorldCoderAgent(script.llm, config(max_llm_calls=30, rewrite_calls=1, max_env_steps=40,
                                            rewrite_growth=1.0)) as agent:
        first, second = agent.run_curriculum([make_sokoban("corridor"), make_sokoban("turn")])
    assert first.env_steps > 20
    n_actions = make_sokoban("turn").n_actions
    sizes = [r["env_steps"] for r in second.rewrites]
    assert sizes[0] == 0 and len(sizes) >= 2
    for before, after in zip(sizes, sizes[1:]):
        assert after - before >= max(n_actions, before)

"""The household world: its rules, levels and generator, the reference model against it in the
sandbox, and the WorldCoder agent solving each of the six kinds of task."""

import json
import random

import pytest

from codeworld.agent import AgentConfig, WorldCoderAgent, list_levels, make_object_env
from codeworld.worlds.objects._states import state_key
from codeworld.agent._household import (ACTIONS, DESCRIPTION, LEVELS, TASK_KINDS, HouseholdEnv,
                                       LayoutConfig, Task, generate_layout, make_household,
                                       make_state, step_state)
from codeworld.worlds.objects._ops import op_evaluate
from codeworld.agent._reference import HOUSEHOLD_MODEL, REFERENCE_MODELS
from codeworld.synthesis.config import SamplingConfig
from codeworld.sandbox import Sandbox, SandboxLimits
from codeworld.synthesis.fakes import ScriptedLLM

# No wall-clock limit here binds before pytest's own hang guard (``timeout = 300`` in
# pyproject.toml): a sandbox request never times out first, so what a test asserts cannot depend
# on the machine's speed or load (a hang still fails the test, as a hang).
UNTIMED_S = 3600.0
UNTIMED = SandboxLimits(timeout_s=UNTIMED_S, startup_timeout_s=UNTIMED_S)

ROOM = ["countertop 1", "desk 1", "drawer 1", "drawer 2", "fridge 1", "microwave 1", "sink 1",
        "table 1"]


def env_for(task, objects, receptacles=ROOM, max_steps=50):
    return HouseholdEnv(receptacles, objects, task, max_steps=max_steps)


def act(env, *names):
    """Take the named actions in order; the last step's ``(state, reward, terminated, truncated)``."""
    out = None
    for name in names:
        out = env.step(ACTIONS.index(name))
    return out


def test_actions_and_description_agree_and_the_state_is_plain_json():
    env = make_household("place")
    assert env.n_actions == len(ACTIONS) == len(set(ACTIONS)) and env.action_names == ACTIONS
    for index, name in enumerate(ACTIONS):
        assert f"{index} = {name}" in DESCRIPTION
    state, mission = env.reset()
    assert mission == "put a mug in a cabinet"
    assert json.loads(json.dumps(state)) == state
    assert state["at"] is None and state["holding"] is None and not state["lamp_on"]
    assert state["open"]["fridge 1"] is False and state["open"]["table 1"] is True
    assert state["objects"]["mug 1"] == {"in": "countertop 1", "clean": False, "hot": False,
                                         "cool": False}


def test_go_take_put_move_one_object():
    env = env_for(Task("place", "mug", "table"), {"mug 1": "countertop 1", "mug 2": "countertop 1"})
    env.reset()
    state, *_ = act(env, "go to cabinet 1")  # this room has no cabinet: nothing happens
    assert state["at"] is None
    state, *_ = act(env, "take mug")  # standing nowhere: nothing to take
    assert state["holding"] is None
    state, *_ = act(env, "go to countertop 1", "take mug")
    assert state["at"] == "countertop 1" and state["holding"] == "mug 1"  # the lowest number
    assert state["objects"]["mug 1"]["in"] is None
    state, *_ = act(env, "take mug")  # one object at a time
    assert state["holding"] == "mug 1" and state["objects"]["mug 2"]["in"] == "countertop 1"
    state, reward, term, _ = act(env, "go to table 1")
    assert (reward, term) == (0.0, False)
    state, reward, term, trunc = act(env, "put")
    assert state["holding"] is None and state["objects"]["mug 1"]["in"] == "table 1"
    assert (reward, term, trunc) == (1.0, True, False)


def test_openable_receptacles_must_be_open_to_take_or_put():
    env = env_for(Task("place", "apple", "drawer"), {"apple 1": "fridge 1"})
    env.reset()
    state, *_ = act(env, "go to fridge 1", "take apple")
    assert state["holding"] is None and not state["open"]["fridge 1"]
    state, *_ = act(env, "open", "take apple")
    assert state["open"]["fridge 1"] and state["holding"] == "apple 1"
    state, *_ = act(env, "go to drawer 2", "put")
    assert state["holding"] == "apple 1"  # the drawer is closed
    state, *_ = act(env, "open", "close")
    assert not state["open"]["drawer 2"]
    state, *_ = act(env, "go to table 1", "close")  # a table cannot be closed
    assert state["open"]["table 1"]
    state, *_ = act(env, "go to drawer 2", "open")
    state, reward, term, _ = act(env, "put")
    assert state["objects"]["apple 1"]["in"] == "drawer 2" and (reward, term) == (1.0, True)


def test_cleaning_needs_the_sink():
    env = env_for(Task("clean", "plate", "table"), {"plate 1": "countertop 1"})
    env.reset()
    state, *_ = act(env, "clean")  # nothing held
    state, *_ = act(env, "go to countertop 1", "take plate", "clean")
    assert not state["objects"]["plate 1"]["clean"]  # not at the sink
    state, reward, term, _ = act(env, "go to table 1", "put")
    assert (reward, term) == (0.0, False)  # on the table, but not clean
    state, *_ = act(env, "take plate", "go to sink 1", "clean")
    assert state["objects"]["plate 1"]["clean"] and state["holding"] == "plate 1"
    state, reward, term, _ = act(env, "go to table 1", "put")
    assert (reward, term) == (1.0, True)


def test_heating_needs_the_microwave_and_cooling_the_fridge():
    env = env_for(Task("heat", "potato", "table"), {"potato 1": "countertop 1"})
    env.reset()
    state, *_ = act(env, "go to countertop 1", "take potato", "heat", "go to fridge 1", "heat")
    assert not state["objects"]["potato 1"]["hot"]  # only the microwave heats
    state, *_ = act(env, "cool")
    assert state["objects"]["potato 1"]["cool"] and state["open"]["fridge 1"] is False
    state, *_ = act(env, "go to microwave 1", "cool")  # only the fridge cools
    assert state["objects"]["potato 1"]["cool"]
    state, *_ = act(env, "heat")
    assert state["objects"]["potato 1"]["hot"] and not state["objects"]["potato 1"]["cool"]
    state, reward, term, _ = act(env, "go to table 1", "put")
    assert (reward, term) == (1.0, True)

    env = env_for(Task("cool", "potato", "table"), {"potato 1": "countertop 1"})
    env.reset()
    state, *_ = act(env, "go to countertop 1", "take potato", "go to microwave 1", "heat",
                    "go to fridge 1", "cool")
    assert state["objects"]["potato 1"]["cool"] and not state["objects"]["potato 1"]["hot"]
    assert act(env, "go to table 1", "put")[1:3] == (1.0, True)


def test_examining_needs_the_lamp_on_at_the_desk():
    env = env_for(Task("examine", "book", "desk"), {"book 1": "table 1", "mug 1": "desk 1"})
    state, mission = env.reset()
    assert mission == "examine a book under the desklamp"
    state, reward, _, _ = act(env, "toggle desklamp")  # not at the desk
    assert not state["lamp_on"] and reward == 0.0
    state, reward, term, _ = act(env, "go to desk 1", "take mug", "toggle desklamp")
    assert state["lamp_on"] and (reward, term) == (0.0, False)  # the wrong object in hand
    act(env, "put", "toggle desklamp")
    state, reward, term, _ = act(env, "go to table 1", "take book", "go to desk 1")
    assert not state["lamp_on"] and (reward, term) == (0.0, False)
    state, reward, term, _ = act(env, "toggle desklamp")
    assert state["lamp_on"] and (reward, term) == (1.0, True)


def test_two_of_a_kind_need_the_same_receptacle():
    env = env_for(Task("two", "tomato", "drawer"), {"tomato 1": "table 1", "tomato 2": "countertop 1"})
    state, mission = env.reset()
    assert mission == "put two tomatoes in a drawer"
    act(env, "go to drawer 1", "open", "go to drawer 2", "open")
    _, reward, _, _ = act(env, "go to table 1", "take tomato", "go to drawer 1", "put")
    assert reward == 0.0  # one is not two
    _, reward, _, _ = act(env, "go to countertop 1", "take tomato", "go to drawer 2", "put")
    assert reward == 0.0  # two drawers, one each
    _, reward, term, _ = act(env, "take tomato", "go to drawer 1", "put")
    assert (reward, term) == (1.0, True)


def test_episode_truncation_and_bad_actions():
    env = env_for(Task("place", "mug", "table"), {"mug 1": "countertop 1"}, max_steps=2)
    env.reset()
    assert act(env, "open")[3] is False
    _, reward, term, trunc = act(env, "open")
    assert (reward, term, trunc) == (0.0, False, True)
    with pytest.raises(ValueError, match="actions are 0..26"):
        step_state(env.start, len(ACTIONS))


def test_bad_layouts_are_refused():
    with pytest.raises(ValueError, match="unknown receptacle"):
        make_state(["attic 1"], {})
    with pytest.raises(ValueError, match="does not have"):
        make_state(["table 1"], {"mug 1": "fridge 1"})
    with pytest.raises(ValueError, match="unknown object kind"):
        make_state(["table 1"], {"sock 1": "table 1"})
    with pytest.raises(ValueError, match="already holds"):
        env_for(Task("place", "mug", "table"), {"mug 1": "table 1"})


def test_named_levels_cover_the_six_kinds_of_task():
    kinds = [make_household(name).task.kind for name in LEVELS]
    assert sorted(kinds) == sorted(TASK_KINDS)
    assert [n for n in list_levels() if n.startswith("household:")] == [f"household:{n}" for n in LEVELS]
    assert make_object_env("household:heat").mission == "put a hot potato on a table"


def test_generated_layouts_are_seeded_varied_and_unsolved_at_the_start():
    assert generate_layout(7) == generate_layout(7)
    layouts = [generate_layout(seed) for seed in range(30)]
    assert len({json.dumps([r, sorted(o.items()), t.mission]) for r, o, t in layouts}) == 30
    assert {t.kind for _, _, t in layouts} == set(TASK_KINDS)
    a, b = make_object_env("household:gen:7"), make_object_env("household:gen:7")
    assert state_key(a.reset()[0]) == state_key(b.reset()[0]) and a.mission == b.mission
    for receptacles, objects, task in layouts:
        env = HouseholdEnv(receptacles, objects, task)  # refuses a task that already holds
        state, _ = env.reset()
        assert {"desk 1", "fridge 1", "microwave 1", "sink 1"} <= set(state["open"])
    big = generate_layout(3, LayoutConfig(storage=8, distractors=5))
    assert len(big[0]) == 12 and len(big[1]) >= 6


@pytest.mark.parametrize("name, says", [
    ("household:gen:notanumber", "a generated household level is gen:SEED with a whole-number seed"),
    ("household:attic", "unknown household level 'attic'"),
])
def test_bad_level_names_get_one_line(name, says):
    with pytest.raises((KeyError, ValueError)) as info:
        make_object_env(name)
    message = info.value.args[0]
    assert message.startswith(says) and "\n" not in message


def test_random_actions_rarely_complete_a_task():
    """Every task takes several particular steps in order: random play (the agent's exploration
    with a model that never predicts reward) almost never gets the reward. Measured on the named
    levels: 1 success in 6000 random episodes of 50 steps (1000 per level)."""
    rng = random.Random(0)
    wins = 0
    for name in LEVELS:
        env = make_household(name)
        for _ in range(20):
            env.reset()
            for _ in range(env.max_steps):
                _, reward, term, trunc = env.step(rng.randrange(env.n_actions))
                if term or trunc:
                    break
            wins += reward > 0
    assert wins <= 2


def _explore(env, rng, steps):
    """Random play that favours actions that change something, one kind of action at a time, so
    that taking, heating, cleaning, cooling and the lamp all happen."""
    state, mission = env.reset()
    data = []
    for _ in range(steps):
        moving = [a for a in range(env.n_actions) if step_state(state, a) != state]
        kind = rng.choice(sorted({ACTIONS[a].split()[0] for a in moving}))
        action = (rng.choice([a for a in moving if ACTIONS[a].split()[0] == kind])
                  if rng.random() < 0.7 else rng.randrange(env.n_actions))
        nxt, reward, term, trunc = env.step(action)
        data.append({"state": state, "action": action, "next_state": nxt, "reward": reward,
                     "done": term, "mission": mission})
        state = nxt
        if term or trunc:
            state, mission = env.reset()
    return data


def test_reference_model_predicts_every_transition_and_plans_every_kind_of_task():
    assert REFERENCE_MODELS["household"] == HOUSEHOLD_MODEL
    rng = random.Random(3)
    effects = set()
    with Sandbox(UNTIMED) as sandbox:
        for name in [*LEVELS, "gen:1", "gen:3", "gen:8"]:
            env = make_household(name)
            data = _explore(env, rng, 150)
            effects |= {ACTIONS[t["action"]].split()[0] for t in data if t["state"] != t["next_state"]}
            start, mission = env.reset()
            reply = sandbox.call(op_evaluate, timeout_s=UNTIMED_S, source=HOUSEHOLD_MODEL,
                                 transitions=data, starts=[{"state": start, "mission": mission}],
                                 n_actions=env.n_actions)
            assert reply.ok, reply.message
            assert reply.value["correct"] == len(data), (name, reply.value["mismatches"])
            plan = reply.value["plans"][0]
            assert plan["found"], name
            for action, predicted in zip(plan["actions"], plan["predicted"]):
                state, reward, term, _ = env.step(action)
                assert state_key(state) == state_key(predicted["next_state"])
                assert (reward, term) == (predicted["reward"], predicted["done"])
            assert reward == 1.0 and term, name
    assert effects == {"go", "take", "put", "open", "close", "clean", "heat", "cool", "toggle"}


EDGE_CASES = [  # (task, objects, actions): the rules' corner cases, as the tests above play them
    (Task("two", "tomato", "drawer"), {"tomato 1": "table 1", "tomato 2": "countertop 1"},
     ["go to drawer 1", "open", "go to drawer 2", "open", "go to table 1", "take tomato",
      "go to drawer 1", "put", "go to countertop 1", "take tomato", "go to drawer 2", "put",
      "take tomato", "go to drawer 1", "put"]),
    (Task("examine", "book", "desk"), {"book 1": "table 1", "mug 1": "desk 1"},
     ["toggle desklamp", "go to desk 1", "take mug", "toggle desklamp", "put", "toggle desklamp",
      "go to table 1", "take book", "go to desk 1", "toggle desklamp"]),
    (Task("heat", "potato", "table"), {"potato 1": "countertop 1", "potato 2": "countertop 1"},
     ["go to countertop 1", "take potato", "heat", "clean", "go to fridge 1", "heat", "cool", "put",
      "open", "put", "take potato", "go to microwave 1", "cool", "clean", "heat", "go to sink 1",
      "clean", "go to table 1", "put"]),
]


def test_reference_model_agrees_on_the_rules_corner_cases():
    data = []
    for task, objects, names in EDGE_CASES:
        env = env_for(task, objects)
        state, mission = env.reset()
        for name in names:
            nxt, reward, term, _ = env.step(ACTIONS.index(name))
            data.append({"state": state, "action": ACTIONS.index(name), "next_state": nxt,
                         "reward": reward, "done": term, "mission": mission})
            state = nxt
        assert term, names  # each case ends with the mission done
    with Sandbox(UNTIMED) as sandbox:
        reply = sandbox.call(op_evaluate, timeout_s=UNTIMED_S, source=HOUSEHOLD_MODEL,
                             transitions=data,
                             starts=[], n_actions=len(ACTIONS))
    assert reply.ok, reply.message
    assert reply.value["correct"] == len(data), reply.value["mismatches"]


class Script:
    """A scripted LLM that answers every call with the next program, fenced."""

    def __init__(self, programs):
        self.programs = list(programs)
        self.llm = ScriptedLLM(self._answer)

    def _answer(self, call, messages):
        if not self.programs:
            raise AssertionError("the agent asked for more LLM calls than scripted")
        return f"The model:\n\n```python\n{self.programs.pop(0)}```\n"


def agent_config(**changes):
    base = dict(epsilon=0.0, max_env_steps=60, max_llm_calls=3, rewrite_calls=2,
                reliable_successes=1, max_episode_steps=50, eval_timeout_s=UNTIMED_S,
                # one answer per call: the script is read call by call
                sampling=SamplingConfig(temperature=0.7, max_tokens=1200, copy_resamples=0))
    base.update(changes)
    return AgentConfig(**base)


def test_agent_with_the_reference_model_solves_all_six_kinds_of_task():
    script = Script([HOUSEHOLD_MODEL])
    envs = [make_household(name) for name in LEVELS]
    with WorldCoderAgent(script.llm, agent_config(), limits=UNTIMED) as agent:
        results = agent.run_curriculum(envs)
    by_kind = {env.task.kind: result for env, result in zip(envs, results)}
    assert set(by_kind) == set(TASK_KINDS)
    for kind, result in by_kind.items():
        assert result.reliable_success is not None, kind
        assert result.first_success.episodes == 1, kind  # the first episode succeeds
    # One program serves every kind of task: the first level's call is the only one.
    assert [r.llm_calls for r in results] == [1, 0, 0, 0, 0, 0]
    steps = {kind: r.first_success.env_steps for kind, r in by_kind.items()}
    assert steps == {"place": 5, "examine": 5, "clean": 6, "heat": 7, "cool": 6, "two": 9}


def test_without_optimism_a_model_that_never_predicts_reward_is_kept_and_play_fails():
    never = HOUSEHOLD_MODEL.split("def reward")[0] + (
        "def reward(state, action, next_state, mission):\n    return 0.0, False\n")
    level = make_household("place")
    script = Script([never])
    # (a small planner budget: under this model no plan exists, and the agent replans each step)
    config = agent_config(optimism=False, explore_unseen=False, plan_max_nodes=30,
                          rule_model=False)  # the LLM's model, and no exploration
    with WorldCoderAgent(script.llm, config, limits=UNTIMED) as agent:
        result = agent.run_level(level)
    assert result.llm_calls == 1 and result.first_success is None  # nothing ever contradicts it
    assert result.env_steps == 60
    # exploration toward what the mission names reaches the reward without optimism: the success
    # contradicts the model, and the rewrite is asked for
    script = Script([never, HOUSEHOLD_MODEL])
    with WorldCoderAgent(script.llm, agent_config(optimism=False, plan_max_nodes=30, rule_model=False),
                         limits=UNTIMED) as agent:
        result = agent.run_level(level)
    assert result.first_success is not None and result.llm_calls == 2
    assert result.rewrites[1]["reason"] == "contradicted by a new transition"
    script = Script([never, HOUSEHOLD_MODEL])
    with WorldCoderAgent(script.llm, agent_config(plan_max_nodes=3000), limits=UNTIMED) as agent:
        result = agent.run_level(level)
    assert result.rewrites[0]["scores"] == [0.5, 1.0] and result.reliable_success is not None


def test_cli_bad_level_gets_one_line(capsys):
    from codeworld.cli import main

    assert main(["agent", "household:gen:notanumber"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("codeworld agent: a generated household level is gen:SEED")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_runs_a_household_level_with_a_scripted_llm(tmp_path):
    from codeworld.cli import main

    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"text": f"```python\n{HOUSEHOLD_MODEL}```"}) + "\n")
    code = main(["agent", "household:examine", "--llm", f"scripted:{script}", "--reliable", "1",
                 "--max-env-steps", "30", "--out", str(tmp_path / "run"),
                 "--llm-cache-dir", str(tmp_path / "cache")])
    assert code == 0
    row = json.loads((tmp_path / "run" / "accounting.json").read_text())["levels"][0]
    assert row["level"] == "household-examine" and row["reliable_success"] is not None
    assert row["llm_calls"] == 1

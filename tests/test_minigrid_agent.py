"""The MiniGrid adapter: object-level states, missions and rewards against the real simulator."""

import random

import pytest

from codeworld.agent._minigrid_env import LEVEL_IDS, MiniGridEnv
from codeworld.worlds.objects._states import state_key

LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE = range(6)


def test_empty_state_and_goal_reward():
    env = MiniGridEnv("empty")
    state, mission = env.reset(seed=0)
    assert mission == "get to the green goal square"
    assert state["agent"] == {"x": 1, "y": 1, "dir": 0, "carrying": None}
    assert [o["type"] for o in state["objects"]] == ["goal"]
    assert [0, 0] in state["walls"]
    for action in (FORWARD, FORWARD, RIGHT, FORWARD):
        state, reward, term, _ = env.step(action)
        assert (reward, term) == (0.0, False)
    state, reward, term, trunc = env.step(FORWARD)
    assert (reward, term, trunc) == (1.0, True, False)
    assert (state["agent"]["x"], state["agent"]["y"]) == (3, 3)


def test_turning_and_walls():
    env = MiniGridEnv("empty")
    env.reset(seed=0)
    state, *_ = env.step(LEFT)
    assert state["agent"]["dir"] == 3
    state, *_ = env.step(FORWARD)  # a wall to the north
    assert (state["agent"]["x"], state["agent"]["y"]) == (1, 1)


def test_doorkey_pickup_and_unlock():
    env = MiniGridEnv("doorkey")
    state, mission = env.reset(seed=0)
    assert "key" in mission and "door" in mission
    key = next(o for o in state["objects"] if o["type"] == "key")
    door = next(o for o in state["objects"] if o["type"] == "door")
    assert door["locked"] and not door["open"]
    # seed 0: agent at (1, 3) facing west; key at (1, 2); door at (2, 1)
    state, *_ = env.step(RIGHT)  # facing north, key in front
    state, *_ = env.step(PICKUP)
    assert state["agent"]["carrying"] == {"type": "key", "color": key["color"]}
    assert all(o["type"] != "key" for o in state["objects"])
    state, *_ = env.step(FORWARD)  # to (1, 2)
    state, *_ = env.step(FORWARD)  # to (1, 1)
    state, *_ = env.step(RIGHT)  # facing east, the door in front
    state, reward, term, _ = env.step(TOGGLE)
    door = next(o for o in state["objects"] if o["type"] == "door")
    assert door["open"] and not door["locked"] and reward == 0.0 and not term


@pytest.mark.parametrize("level", ["unlock", "unlockpickup", "blockedunlockpickup"])
def test_levels_have_missions_and_objects(level):
    env = MiniGridEnv(level)
    state, mission = env.reset(seed=1)
    types = {o["type"] for o in state["objects"]}
    assert {"key", "door"} <= types
    assert mission == ("open the door" if level == "unlock" else mission)
    if level != "unlock":
        assert mission.startswith("pick up the") and "box" in types
    assert env.n_actions == 6 and len(env.action_names) == 6


def test_reset_is_seeded_and_states_are_plain_json():
    import json

    env = MiniGridEnv("doorkey")
    a, _ = env.reset(seed=3)
    b, _ = env.reset(seed=3)
    assert state_key(a) == state_key(b)
    json.dumps(a)
    rng = random.Random(0)
    for _ in range(30):
        s, *_ = env.step(rng.randrange(6))
        json.dumps(s)


def test_reference_model_explains_random_play_and_solves_levels():
    from codeworld.agent._reference import MINIGRID_MODEL
    from codeworld.worlds.objects._ops import op_evaluate
    from codeworld.sandbox import Sandbox

    with Sandbox() as sandbox:
        for level in ("empty", "doorkey", "unlock", "unlockpickup"):
            env = MiniGridEnv(level)
            rng = random.Random(1)
            data = []
            state, mission = env.reset(seed=2)
            for _ in range(80):
                action = rng.randrange(6)
                nxt, reward, term, trunc = env.step(action)
                data.append({"state": state, "action": action, "next_state": nxt, "reward": reward,
                             "done": term, "mission": mission})
                state = nxt
                if term or trunc:
                    state, mission = env.reset(seed=2)
            start, mission = env.reset(seed=2)
            result = sandbox.call(op_evaluate, source=MINIGRID_MODEL,
                                  transitions=data, starts=[{"state": start, "mission": mission}],
                                  n_actions=6)
            assert result.ok, result.message
            assert result.value["correct"] == len(data), (level, result.value["mismatches"])
            plan = result.value["plans"][0]
            assert plan["found"], level
            for action in plan["actions"]:
                _, reward, term, _ = env.step(action)
            assert reward == 1.0 and term, level


def test_unknown_level():
    with pytest.raises(KeyError):
        MiniGridEnv("nope")
    assert "empty" in LEVEL_IDS

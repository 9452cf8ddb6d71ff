"""The agent's exploration where its model is silent (`codeworld.agent._explore`), on a world built
here: a room with a key and a locked door, an agent that turns and moves where it faces, picks up
what is in front of it and toggles what is in front of it. The mission's step (a toggle holding
the key, the door in front) is one the agent's data cannot show before it succeeds."""

from __future__ import annotations

import random

from codeworld.agent._config import AgentConfig
from codeworld.agent._explore import explore_arguments, front_values, open_steps
from codeworld.agent._loop import LevelResult, WorldCoderAgent
from codeworld.sandbox import SandboxLimits
from codeworld.synthesis.fakes import ScriptedLLM
from codeworld.worlds.objects._rules import rule_program, with_reward

# No wall-clock limit binds before pytest's own hang guard (see tests/test_rules.py).
UNTIMED_S = 3600.0
UNTIMED = SandboxLimits(timeout_s=UNTIMED_S, startup_timeout_s=UNTIMED_S)

STEP = {0: (1, 0), 1: (0, 1), 2: (-1, 0), 3: (0, -1)}
LEFT, RIGHT, FORWARD, PICK, TOGGLE = range(5)
MISSION = "unlock the gate"
SIZE = 5  # the room's inner cells are 1..SIZE on both axes; the gate is in the east wall


def ahead(state: dict) -> list[int]:
    me = state["me"]
    dx, dy = STEP[me["facing"]]
    return [me["col"] + dx, me["row"] + dy]


def thing_at(state: dict, cell: list[int]) -> dict | None:
    return next((t for t in state["things"] if [t["col"], t["row"]] == cell), None)


def room_step(state: dict, action: int) -> tuple[dict, float, bool]:
    """The room's dynamics: the gate opens to a toggle only with the key of its tint held."""
    me = dict(state["me"])
    things = [dict(t) for t in state["things"]]
    new = {**state, "me": me, "things": things}
    cell = ahead(state)
    front = thing_at(new, cell)
    opened = False
    if action in (LEFT, RIGHT):
        me["facing"] = (me["facing"] + (1 if action == RIGHT else -1)) % 4
    elif action == FORWARD:
        if cell not in state["blocked"] and front is None:
            me["col"], me["row"] = cell
    elif action == PICK:
        if front is not None and front["sort"] == "key" and me["held"] is None:
            me["held"] = {"sort": front["sort"], "tint": front["tint"]}
            things.remove(front)
    elif action == TOGGLE:
        held = me["held"]
        if (front is not None and front["sort"] == "gate" and front["shut"] and held is not None
                and held["tint"] == front["tint"]):
            front["shut"] = False
            opened = True
    return new, float(opened), opened


def room(seed: int) -> dict:
    """A layout: the key and the agent somewhere in the room, the gate in the east wall."""
    rng = random.Random(seed)
    blocked = sorted([x, y] for x in range(SIZE + 2) for y in range(SIZE + 2)
                     if x in (0, SIZE + 1) or y in (0, SIZE + 1))
    gate = [SIZE + 1, rng.randint(1, SIZE)]
    blocked.remove(gate)
    free = [[x, y] for x in range(1, SIZE + 1) for y in range(1, SIZE + 1)]
    rng.shuffle(free)
    tint = rng.choice(["red", "blue"])
    return {"me": {"col": free[0][0], "row": free[0][1], "facing": rng.randrange(4), "held": None},
            "blocked": blocked,
            "things": [{"sort": "key", "tint": tint, "col": free[1][0], "row": free[1][1]},
                       {"sort": "gate", "tint": tint, "col": gate[0], "row": gate[1], "shut": True}]}


class GateRoom:
    """The room as an agent environment (the layout of each episode from its seed)."""

    n_actions = 5
    action_names = ("turn left", "turn right", "forward", "pick up", "toggle")
    description = ("A room: the agent turns, moves to the cell it faces unless something is "
                   "there, picks up the thing it faces and toggles the thing it faces.")
    name = "gateroom"
    family = "gateroom"
    max_steps = 60

    def __init__(self):
        self.state: dict = {}

    def reset(self, seed: int | None = None) -> tuple[dict, str]:
        self.state = room(seed or 0)
        return self.state, MISSION

    def step(self, action: int) -> tuple[dict, float, bool, bool]:
        self.state, reward, done = room_step(self.state, action)
        return self.state, reward, done, False

    def close(self) -> None:
        pass


REWARD = '''def reward(state, action, next_state, mission):
    before = [t for t in state["things"] if t["sort"] == "gate" and t["shut"]]
    after = [t for t in next_state["things"] if t["sort"] == "gate" and t["shut"]]
    if len(after) < len(before):
        return 1.0, True
    return 0.0, False
'''


def play(steps: int, seed: int) -> list[dict]:
    """Random play over fresh layouts, in which no toggle is tried while holding the key and
    facing the gate (the step the mission needs stays unseen)."""
    rng = random.Random(seed)
    state, data, episode = room(seed * 1000), [], 0
    for _ in range(steps):
        action = rng.randrange(GateRoom.n_actions)
        front = thing_at(state, ahead(state))
        if (action == TOGGLE and state["me"]["held"] is not None and front is not None
                and front["sort"] == "gate"):
            action = FORWARD
        nxt, reward, done = room_step(state, action)
        data.append({"state": state, "action": action, "next_state": nxt, "reward": reward,
                     "done": done, "mission": MISSION})
        state = nxt
        if done or rng.random() < 0.04:
            episode += 1
            state = room(seed * 1000 + episode)
    return data


def test_the_exploration_bonus_counts_what_is_in_front_not_where_the_agent_stands():
    # with the key held, the agent has tried every action facing an empty cell and a wall, but
    # never faced the gate: the model says nothing of a toggle there, and the one pair left to
    # try is at the gate, however many cells and headings of the room were never tried
    data = play(1500, seed=1)
    assert not any(t["reward"] for t in data)
    start = room(7)
    key = start["things"][0]
    start = {**start, "me": {"col": 1, "row": 1, "facing": 2, "held": {"sort": "key", "tint": key["tint"]}},
             "things": start["things"][1:]}
    gate = start["things"][0]
    env = GateRoom()
    with WorldCoderAgent(ScriptedLLM([]), AgentConfig(eval_timeout_s=UNTIMED_S),
                         limits=UNTIMED) as agent:
        agent.data = data
        agent.program = with_reward(rule_program(data), REWARD)
        args = explore_arguments(data, MISSION, start, GateRoom.action_names)
        plan = agent.plan(env, start, MISSION, LevelResult("gateroom"))
    assert args["coarse"]["front"]["located"] == [[["things"], ["col", "row"]]]
    assert plan is not None and plan["explore"]
    # the plan walks to the gate and tries an action never tried there with the key held
    last = ([start] + [p["next_state"] for p in plan["predicted"]])[-2]
    assert ahead(last) == [gate["col"], gate["row"]] and last["me"]["held"] is not None
    assert plan["actions"][-1] in (PICK, TOGGLE) and len(plan["actions"]) >= 4


def test_the_agent_opens_the_gate_with_the_reward_written_from_the_mission():
    # the transition is the rule model's, learned from the agent's own steps; the scripted LLM
    # writes only the reward (from the mission); the mission's step is never seen before it
    # succeeds, so only exploration toward it gets there
    config = AgentConfig(epsilon=0.0, max_env_steps=60, max_llm_calls=2, rewrite_calls=1,
                         reliable_successes=1, max_episode_steps=60, eval_timeout_s=UNTIMED_S,
                         plan_max_nodes=1500, plan_max_depth=40)
    with WorldCoderAgent(ScriptedLLM(lambda call, messages: f"```python\n{REWARD}```\n"), config,
                         limits=UNTIMED) as agent:
        result = agent.run_level(GateRoom(), [2])
    assert result.successes == 1, result.episode_log


def test_the_focus_is_what_the_mission_names_not_the_things_beside_it():
    # "put a washed pear on the bench": every fruit has a washed flag, so the mission's
    # "wash..." named the fig's and the plum's flags, and the fig and the plum became things to
    # try situations with, and the pear's own fields ("in") put every fruit's place into the
    # agent's situation: its trials went to carrying the fig about. The focus is the flag, the
    # pear and where it lies, and the bench
    state = {"at": None, "holding": None,
             "objects": {"fig 1": {"in": "crate 1", "washed": False},
                         "pear 1": {"in": "crate 2", "washed": False},
                         "plum 1": {"in": "crate 1", "washed": False}},
             "open": {"bench 1": True, "crate 1": True, "crate 2": True}}
    data = []
    rng = random.Random(0)
    for _ in range(60):  # go to a place, take what lies there, put it down
        action = rng.randrange(6)
        new = {**state, "objects": {k: dict(v) for k, v in state["objects"].items()}}
        if action < 3:
            new["at"] = ("crate 1", "crate 2", "bench 1")[action]
        elif action < 5 and new["holding"] is None:
            here = sorted(o for o, v in state["objects"].items() if v["in"] == state["at"])
            if here and state["at"] is not None:
                new["holding"] = here[action - 3] if action - 3 < len(here) else here[0]
                new["objects"][new["holding"]]["in"] = None
        elif action == 5 and state["holding"] is not None:
            new["objects"][state["holding"]]["in"], new["holding"] = state["at"], None
        data.append({"state": state, "action": action, "next_state": new, "reward": 0.0,
                     "done": False, "mission": "washed"})
        state = new
    start = data[0]["state"]
    out = explore_arguments(data, "put a washed pear on the bench", start)
    assert set(out["focus"]) == {"washed", "pear 1", "crate 2", "bench 1"}
    # a plural in the mission names each of its kind
    two = explore_arguments(data, "put two figs on the bench", start)
    assert "fig 1" in two["focus"]


YARD = ("go to crate 1", "go to crate 2", "go to basin 1", "go to bench 1", "go to barn 1",
        "go to well 1", "take pear", "take fig", "put", "wash")
PUT, WASH = 8, 9
WASHED_PEAR = "put a washed pear on the bench"


def yard_step(state: dict, action: int) -> dict:
    """Go to a place; take a fruit of a kind where one lies, with an empty hand; put what is
    held down here; wash what is held, only at the basin."""
    new = {**state, "objects": {k: dict(v) for k, v in state["objects"].items()}}
    at, held = state["at"], state["holding"]
    if action < 6:
        new["at"] = YARD[action][len("go to "):]
    elif action < PUT:
        kind = YARD[action][len("take "):]
        here = sorted(o for o, v in state["objects"].items()
                      if o.split()[0] == kind and v["in"] == at and at is not None)
        if here and held is None:
            new["holding"], new["objects"][here[0]]["in"] = here[0], None
    elif action == PUT and held is not None and at is not None:
        new["holding"], new["objects"][held]["in"] = None, at
    elif action == WASH and held is not None and at == "basin 1":
        new["objects"][held]["washed"] = True
    return new


class Yard:
    """The yard as a level: the pear in a crate, a fig in the barn; the pear to be washed at
    the basin and put on the bench."""

    n_actions = len(YARD)
    action_names = YARD
    description = "A yard of places; the agent goes to them, takes, puts down and washes fruit."
    name = family = "yard"
    max_steps = 40

    def __init__(self):
        self.state: dict = {}

    def reset(self, seed: int | None = None) -> tuple[dict, str]:
        self.state = {"at": None, "holding": None,
                      "objects": {"fig 1": {"in": "barn 1", "washed": False},
                                  "pear 1": {"in": "crate 2", "washed": False}}}
        return self.state, WASHED_PEAR

    def step(self, action: int) -> tuple[dict, float, bool, bool]:
        self.state = yard_step(self.state, action)
        pear = self.state["objects"]["pear 1"]
        done = pear["in"] == "bench 1" and pear["washed"]
        return self.state, float(done), done, False

    def close(self) -> None:
        pass


def test_with_no_call_the_agent_tries_the_named_action_it_never_saw_work_wherever_it_holds_the_thing():
    # no LLM: nothing says washing happens only at the basin. The explorer tries the mission's
    # named actions where the mission's thing is with the agent (held, or where the agent is)
    # wherever else it lies, and first the named action the data never showed doing anything
    # ("wash"): carrying the pear to each place to wash it there, it washes it at the basin,
    # puts it on the bench and is rewarded. Before, "where the pear lies" was part of every
    # situation (each place it was put down made every place new again), and "put" and "take"
    # were tried as often as "wash"
    config = AgentConfig(epsilon=0.0, max_env_steps=70, max_llm_calls=0, reliable_successes=1,
                         max_episode_steps=35, eval_timeout_s=UNTIMED_S, plan_max_nodes=3000,
                         plan_max_depth=12)
    with WorldCoderAgent(ScriptedLLM([]), config, limits=UNTIMED) as agent:
        result = agent.run_level(Yard(), [0, 1])
    assert result.successes == 1, result.episode_log


def test_a_plan_used_up_is_followed_by_the_next_plan_not_by_a_random_action():
    # an exploration plan ends with the action it went to try; the agent then plans to the next
    # untried one. Before, every plan used up was followed by a random action: 16 of the 46
    # steps of this level, where now only the steps before the first model and one where the
    # planner found nothing are random
    config = AgentConfig(epsilon=0.0, max_env_steps=70, max_llm_calls=0, reliable_successes=1,
                         max_episode_steps=35, eval_timeout_s=UNTIMED_S, plan_max_nodes=3000,
                         plan_max_depth=12)
    with WorldCoderAgent(ScriptedLLM([]), config, limits=UNTIMED) as agent:
        random_at: list[int] = []
        explore = agent._explore
        agent._explore = lambda *args: random_at.append(len(agent.data)) or explore(*args)
        result = agent.run_level(Yard(), [0, 1])
    assert result.successes == 1, result.episode_log
    assert len(random_at) <= 5, random_at


def test_facing_a_heading_never_moved_in_what_may_be_in_front_is_read_through_the_open_steps():
    # the heading's table knows north and south only: facing east, the cell in front is one of
    # the two steps no known heading takes, so toggling there holding the key where a locked
    # door may be in front is a situation of its own (a door east of a corridor one cell wide is
    # met only facing a way the agent never went), and where only walls may be, it is one
    # situation wherever the agent stands
    front = {"position": [["agent", "x"], ["agent", "y"]], "key": ["agent", "dir"],
             "table": [[1, [0, 1]], [3, [0, -1]]], "cells": [["walls"]],
             "located": [[["objects"], ["x", "y"]]]}
    walls = [[0, 1], [0, 2], [0, 3], [1, 0], [2, 2], [2, 3]]
    door = {"type": "door", "x": 2, "y": 1, "locked": True}

    def at(x, y, d):
        return {"agent": {"x": x, "y": y, "dir": d}, "walls": walls, "objects": [door]}

    assert open_steps([[0, 1], [0, -1]], 2) == [[1, 0], [-1, 0]]
    assert front_values(at(1, 1, 3), front) == [True, None]
    assert front_values(at(1, 2, 0), front) == [["?", 0, True, True], ["?", 0, None, None]]
    assert front_values(at(1, 2, 0), front) == front_values(at(1, 3, 0), front)
    assert front_values(at(1, 1, 0), front) == [["?", 0, False, True],
                                                ["?", 0, {"type": "door", "locked": True}, None]]
    # no step known of one length: the place and heading stand for what is in front
    odd = dict(front, table=[[1, [0, 1]], [3, [0, -2]]])
    assert front_values(at(1, 2, 0), odd) == [["?", [1, 2], 0], None]

"""The rule model learned from the agent's data (`codeworld.worlds.objects._rules`), the reward the
LLM writes from the mission before the first success, and the exploration bonus of the agent's
planner (`codeworld.agent._explore`), on small worlds built here."""

from __future__ import annotations

import itertools
import random
from types import SimpleNamespace
from typing import Callable

from codeworld.agent._config import AgentConfig
from codeworld.agent._loop import LevelResult, WorldCoderAgent
from codeworld.sandbox import Sandbox, SandboxLimits
from codeworld.synthesis.fakes import ScriptedLLM
from codeworld.worlds.objects._ops import op_evaluate
from codeworld.worlds.objects._rules import (NO_REWARD_YET, learn_rules, rule_program,
                                             with_reward, written_reward)

# No wall-clock limit here binds before pytest's own hang guard (``timeout = 300`` in
# pyproject.toml): a sandbox request never times out first, so what a test asserts cannot depend
# on the machine's speed or load (a hang still fails the test, as a hang).
UNTIMED_S = 3600.0
UNTIMED = SandboxLimits(timeout_s=UNTIMED_S, startup_timeout_s=UNTIMED_S)

MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}
PICK = 4


class KeyGrid:
    """A grid built for these tests: walls, keys to pick up, a goal to bring one to."""

    n_actions = 5
    action_names = ("up", "down", "left", "right", "pick up")
    description = ("A grid: the agent moves one cell per step unless a wall is there, and picks up "
                   "the key on its cell. The state has agent, walls, keys (cells), carrying, goal.")
    name = "keygrid"
    family = "keygrid"
    max_steps = 30
    mission = "bring a key to the goal"

    def __init__(self, layout: int = 0):
        self.layout = layout
        self.state: dict = {}

    def start(self, rng: random.Random | None = None) -> dict:
        walls = ([[x, 0] for x in range(6)] + [[x, 5] for x in range(6)]
                 + [[0, y] for y in range(1, 5)] + [[5, y] for y in range(1, 5)] + [[3, 2]])
        if rng is None:
            return {"agent": [1, 1], "walls": walls, "keys": [[3, 1]], "carrying": False,
                    "goal": [4, 4]}
        free = [[x, y] for x in range(1, 5) for y in range(1, 5) if [x, y] != [3, 2]]
        rng.shuffle(free)
        return {"agent": free[0], "walls": walls, "keys": [free[1]], "carrying": False,
                "goal": free[2]}

    @staticmethod
    def dynamics(state: dict, action: int) -> tuple[dict, float, bool]:
        new = {**state, "agent": list(state["agent"]), "keys": [list(k) for k in state["keys"]]}
        if action in MOVES:
            dx, dy = MOVES[action]
            cell = [state["agent"][0] + dx, state["agent"][1] + dy]
            if cell not in state["walls"]:
                new["agent"] = cell
        elif state["agent"] in state["keys"] and not state["carrying"]:
            new["keys"].remove(state["agent"])
            new["carrying"] = True
        done = new["carrying"] and new["agent"] == new["goal"]
        return new, float(done), done

    def reset(self, seed: int | None = None) -> tuple[dict, str]:
        self.state = self.start()
        return self.state, self.mission

    def step(self, action: int) -> tuple[dict, float, bool, bool]:
        self.state, reward, done = self.dynamics(self.state, action)
        return self.state, reward, done, False

    def close(self) -> None:
        pass


def walk(steps: int, seed: int) -> list[dict]:
    """Transitions of random walks over random layouts (a new layout after an episode ends)."""
    rng = random.Random(seed)
    state, data = KeyGrid.start(KeyGrid(), rng), []
    for _ in range(steps):
        action = rng.randrange(KeyGrid.n_actions)
        if state["keys"] and rng.random() < 0.3:  # head for the key now and then
            (kx, ky), (ax, ay) = state["keys"][0], state["agent"]
            action = 3 if kx > ax else 2 if kx < ax else 1 if ky > ay else 0 if ky < ay else PICK
        nxt, reward, done = KeyGrid.dynamics(state, action)
        data.append({"state": state, "action": action, "next_state": nxt, "reward": reward,
                     "done": done, "mission": KeyGrid.mission})
        state = KeyGrid.start(KeyGrid(), rng) if done or rng.random() < 0.05 else nxt
    return data


def explained(program: str, transitions: list[dict]) -> dict:
    with Sandbox(UNTIMED) as sandbox:
        reply = sandbox.call(op_evaluate, timeout_s=UNTIMED_S, source=program, transitions=transitions,
                             starts=[], n_actions=KeyGrid.n_actions)
    assert reply.ok, reply.message
    return reply.value


def test_the_rule_model_reproduces_a_move_a_pick_up_and_a_blocked_move_with_their_conditions():
    data = walk(400, seed=0)
    program = rule_program(data)
    # the conditions, read off the data: a move is blocked by a wall in the cell it goes to; a
    # pick-up takes the key on the agent's cell
    assert ("if not _in(_add(_get(state, 'agent'), [1, 0]), _get(state, 'walls')):\n"
            "            _put(new, _add(_get(state, 'agent'), [1, 0]), 'agent')") in program
    assert "_put(new, True, 'carrying')" in program
    assert "_put(new, _without(_get(state, 'keys'), _get(state, 'agent')), 'keys')" in program
    assert "keygrid" not in program

    # on layouts it never saw: a move, a blocked move, a pick-up and a step with nothing to pick
    start = {"agent": [2, 3], "walls": [[2, 2], [0, 3]], "keys": [[1, 3]], "carrying": False,
             "goal": [4, 1]}
    cases = [(start, 3), (start, 0), ({**start, "agent": [1, 3]}, PICK), (start, PICK),
             ({**start, "agent": [1, 3]}, 2)]
    fresh = []
    for state, action in cases:
        nxt, reward, done = KeyGrid.dynamics(state, action)
        fresh.append({"state": state, "action": action, "next_state": nxt, "reward": reward,
                      "done": done, "mission": KeyGrid.mission})
    assert fresh[1]["next_state"] == start and fresh[2]["next_state"]["carrying"]
    assert fresh[4]["next_state"]["agent"] == [1, 3]  # into the wall at [0, 3]: blocked
    assert explained(program, fresh)["correct"] == len(fresh)
    assert explained(program, walk(300, seed=1))["state_correct"] == 300


def test_the_reward_is_learned_once_a_step_got_one():
    data = walk(1500, seed=2)
    assert sum(t["reward"] > 0 for t in data) >= 1
    model = learn_rules(data)
    assert "return 1.0, True" in model.reward_code()
    score = explained(model.program(), walk(400, seed=3))
    assert score["reward_correct"] == 400
    assert "return 0.0, False" in learn_rules(walk(20, seed=4)).reward_code()  # no success: none


REWARD = '''def reward(state, action, next_state, mission):
    if next_state["carrying"] and next_state["agent"] == next_state["goal"]:
        return 1.0, True
    return 0.0, False
'''


def test_before_the_first_success_the_llm_writes_only_the_reward_from_the_mission():
    prompts = []

    def answer(call, messages):
        prompts.append(messages[-2]["content"])
        return f"```python\n{REWARD}```\n"

    config = AgentConfig(epsilon=0.0, max_env_steps=120, max_llm_calls=1, rewrite_calls=1,
                         reliable_successes=2, max_episode_steps=40, eval_timeout_s=UNTIMED_S,
                         plan_max_nodes=200, plan_max_depth=20)
    with WorldCoderAgent(ScriptedLLM(answer), config, limits=UNTIMED) as agent:
        result = agent.run_level(KeyGrid())
    assert result.llm_calls == 1 and len(prompts) == 1
    assert "Write only the reward function" in prompts[0]
    assert "def transition(state, action):" in prompts[0]  # the rule model's, shown, not asked
    assert "bring a key to the goal" in prompts[0]
    # the rule model learned the rest from the agent's own steps, and kept the mission's reward
    assert result.reliable_success is not None
    assert 'next_state["carrying"] and next_state["agent"] == next_state["goal"]' in agent.program \
        or "return 1.0, True" in agent.program
    assert "_put(new, True, 'carrying')" in agent.program


EVERY_STEP = '''def reward(state, action, next_state, mission):
    if next_state["goal"] is not None:
        return 1.0, True
    return 0.0, False
'''


def test_a_mission_reward_that_recorded_steps_contradict_gives_way_to_exploring():
    # the LLM's reward says every step completes the mission (the goal exists). No recorded step
    # got reward, so between rewrites the rule model takes its place with "no step completes it
    # yet" (a model that rewards every step leaves the planner nothing to look for); a mission
    # reward the recorded steps agree with is kept
    data = [t for t in walk(60, seed=3) if not t["reward"]]
    config = AgentConfig(epsilon=0.0, eval_timeout_s=UNTIMED_S, plan_max_nodes=300,
                         plan_max_depth=20)
    for written, kept in ((EVERY_STEP, False), (REWARD, True)):
        with WorldCoderAgent(ScriptedLLM([]), config, limits=UNTIMED) as agent:
            agent.data = list(data)
            agent.program = with_reward(rule_program(data), written)
            agent.refit(KeyGrid())
            assert (written.splitlines()[1] in agent.program) is kept
            assert (NO_REWARD_YET in agent.program) is not kept
            state = KeyGrid().start()
            plan = agent.plan(KeyGrid(), state, KeyGrid.mission, LevelResult("keygrid"))
        if not kept:  # nothing to reach: to an action never tried where the agent would be
            assert plan is None or plan.get("explore")



ROOM = ("box 1", "chest 1", "crate 1")


def room_step(state: dict, action: int) -> dict:
    new = {"at": state["at"], "open": dict(state["open"])}
    if action < len(ROOM):
        new["at"] = ROOM[action]
    elif state["at"] is not None:
        new["open"][state["at"]] = True
    return new


def test_the_exploration_bonus_sends_the_agent_to_the_object_it_never_tried():
    # every move tried from everywhere; "open" tried in the middle of the room, at the box and at
    # the chest, never at the crate: the model says nothing of opening the crate
    closed = {"at": None, "open": {name: False for name in ROOM}}
    data = []
    for where in (None,) + ROOM:
        state = {**closed, "at": where}
        for action in range(len(ROOM) + 1):
            if action == len(ROOM) and where == "crate 1":
                continue
            data.append({"state": state, "action": action, "next_state": room_step(state, action),
                         "reward": 0.0, "done": False, "mission": "open everything"})
    env = SimpleNamespace(n_actions=len(ROOM) + 1, name="room",
                          action_names=tuple(f"go to {name}" for name in ROOM) + ("open",))
    for explore in (True, False):
        with WorldCoderAgent(ScriptedLLM([]), AgentConfig(explore_unseen=explore,
                                                          eval_timeout_s=UNTIMED_S),
                             limits=UNTIMED) as agent:
            agent.data = list(data)
            agent.program = rule_program(data)
            plan = agent.plan(env, closed, "open everything", LevelResult("room"))
        if explore:  # to the crate, and open it
            assert plan is not None and plan["explore"] and plan["actions"] == [2, 3]
        else:  # the model reaches no reward: no plan
            assert plan is None


FACING = {0: (1, 0), 1: (0, 1), 2: (-1, 0), 3: (0, -1)}


def facing_step(state: dict, action: int) -> dict:
    """Turn left, turn right, forward: the agent's position is two numbers and a facing."""
    agent = dict(state["agent"])
    if action < 2:
        agent["dir"] = (agent["dir"] + (1 if action else -1)) % 4
    else:
        dx, dy = FACING[agent["dir"]]
        if [agent["x"] + dx, agent["y"] + dy] not in state["walls"]:
            agent["x"], agent["y"] = agent["x"] + dx, agent["y"] + dy
    return {**state, "agent": agent}


def record(step: Callable[[dict, int], dict], state: dict, actions, mission: str = "walk"
           ) -> list[dict]:
    """The transitions of ``actions`` taken in turn from ``state`` under ``step`` (no reward)."""
    data = []
    for action in actions:
        nxt = step(state, action)
        data.append({"state": state, "action": action, "next_state": nxt, "reward": 0.0,
                     "done": False, "mission": mission})
        state = nxt
    return data


def test_a_position_kept_as_two_numbers_moves_as_one_vector_where_it_faces_unless_a_wall_is_there():
    walls = [[x, y] for x in range(5) for y in range(5) if x in (0, 4) or y in (0, 4)]
    rng = random.Random(5)
    data = record(facing_step, {"agent": {"x": 1, "y": 1, "dir": 0}, "walls": walls},
                  [rng.randrange(3) for _ in range(300)])
    program = rule_program(data)
    position = "[_get(state, 'agent', 'x'), _get(state, 'agent', 'y')]"
    # forward: one rule for every direction, the step of each read off the data (a heading)
    ahead = (f"_ahead({position}, {{0: [1, 0], 1: [0, 1], 2: [-1, 0], 3: [0, -1]}}, "
             "_get(state, 'agent', 'dir'))")
    assert f"if not _in({ahead}, _get(state, 'walls')):" in program
    assert f"_put_each(new, {ahead}, " in program
    inner = [{"agent": {"x": x, "y": y, "dir": d}, "walls": walls}
             for x in range(1, 4) for y in range(1, 4) for d in range(4)]
    every = [{"state": s, "action": a, "next_state": facing_step(s, a), "reward": 0.0,
              "done": False, "mission": "walk"} for s in inner for a in range(3)]
    assert explained(program, every)["correct"] == len(every)


def test_a_heading_the_data_never_moved_along_is_no_move_not_an_error():
    # forward recorded only facing east and north: the heading's table has two steps, and a
    # program that fails on a state facing south or west plans nothing at all
    walls = [[x, y] for x in range(5) for y in range(5) if x in (0, 4) or y in (0, 4)]
    rng = random.Random(5)
    state, data = {"agent": {"x": 1, "y": 3, "dir": 0}, "walls": walls}, []
    for _ in range(200):
        action = rng.randrange(3)
        nxt = facing_step(state, action)
        if action < 2 or state["agent"]["dir"] in (0, 3):
            data.append({"state": state, "action": action, "next_state": nxt, "reward": 0.0,
                         "done": False, "mission": "walk"})
        state = nxt
    program = rule_program(data)
    assert "{0: [1, 0], 3: [0, -1]}" in program
    west = {"agent": {"x": 2, "y": 2, "dir": 2}, "walls": walls}
    score = explained(program, [{"state": west, "action": 2, "next_state": west, "reward": 0.0,
                                 "done": False, "mission": "walk"}])
    assert score["error"] is None and score["correct"] == 1


def test_an_answer_gives_only_the_reward_the_rule_models_transition_and_helpers_stay():
    from codeworld.worlds.objects._rules import HELPERS, with_reward

    base = rule_program(walk(60, seed=6))
    answer = ("def _get(state, key):\n    return 'mine'\n\n\n"
              "def transition(state, action):\n    return state\n\n\n"
              "def _done(s):\n    return s['carrying']\n\n\n" + REWARD.replace(
                  'next_state["carrying"]', "_done(next_state)"))
    merged = with_reward(base, answer)
    assert merged.split("def reward")[0].count("def transition") == 1
    assert HELPERS in merged  # the helpers and the transition as they were
    assert base[base.index("def transition"):base.index("def reward")].strip() in merged
    assert "def _done(s):" in merged and "_done(next_state) and" in merged
    assert "mine" not in merged
    assert with_reward(base, "x = 1\n") is None  # no reward: nothing to put in


def test_a_move_by_a_vector_the_state_holds_and_a_copy_of_another_leaf():
    rng = random.Random(7)
    data = []
    for _ in range(40):
        state = {"pos": [rng.randrange(9), rng.randrange(9)],
                 "vel": [rng.choice([-1, 0, 1]), rng.choice([-1, 0, 1])],
                 "mark": rng.choice(["a", "b", "c"]), "seen": None}
        for action in (0, 1):
            nxt = dict(state)
            if action == 0:
                nxt["pos"] = [state["pos"][0] + state["vel"][0], state["pos"][1] + state["vel"][1]]
            else:
                nxt["seen"] = state["mark"]
            data.append({"state": state, "action": action, "next_state": nxt, "reward": 0.0,
                         "done": False, "mission": "drift"})
    program = rule_program(data[:60])
    assert "_put(new, _add(_get(state, 'pos'), _get(state, 'vel')), 'pos')" in program
    assert "_put(new, _get(state, 'mark'), 'seen')" in program
    assert explained(program, data[60:])["correct"] == 20


# A grid of objects, like MiniGrid's, built here: the agent faces a direction; the objects are
# dicts standing on cells; it picks up what is in front into what it carries, puts it down on an
# empty cell in front, and toggles doors
TURN_LEFT, TURN_RIGHT, FORWARD, PICK_UP, TOGGLE, DROP = range(6)
PICKABLE = ("key", "ball")


def in_front(state: dict) -> list[int]:
    dx, dy = FACING[state["agent"]["dir"]]
    return [state["agent"]["x"] + dx, state["agent"]["y"] + dy]


def object_step(state: dict, action: int) -> dict:
    agent = dict(state["agent"])
    objects = [dict(o) for o in state["objects"]]
    cell = in_front(state)
    there = next((o for o in objects if [o["x"], o["y"]] == cell), None)
    if action in (TURN_LEFT, TURN_RIGHT):
        agent["dir"] = (agent["dir"] + (1 if action == TURN_RIGHT else -1)) % 4
    elif action == FORWARD:
        if cell not in state["walls"] and (there is None or there.get("open")):
            agent["x"], agent["y"] = cell
    elif action == PICK_UP:
        if there is not None and there["type"] in PICKABLE and agent["carrying"] is None:
            objects.remove(there)
            agent["carrying"] = {"type": there["type"], "color": there["color"]}
    elif action == DROP:
        if agent["carrying"] is not None and there is None and cell not in state["walls"]:
            objects.append({**agent["carrying"], "x": cell[0], "y": cell[1]})
            agent["carrying"] = None
    elif there is not None and there["type"] == "door":
        if not there["locked"]:
            there["open"] = not there["open"]
        elif agent["carrying"] is not None and agent["carrying"]["color"] == there["color"]:
            there["locked"], there["open"] = False, True
    return {**state, "agent": agent, "objects": objects}


def object_grid(rng: random.Random) -> dict:
    walls = [[x, y] for x in range(6) for y in range(6) if x in (0, 5) or y in (0, 5)]
    cells = [[x, y] for x in range(1, 5) for y in range(1, 5)]
    rng.shuffle(cells)
    colors = ["red", "blue"]
    rng.shuffle(colors)
    objects = [{"type": "key", "color": colors[0], "x": cells[1][0], "y": cells[1][1]},
               {"type": "ball", "color": colors[1], "x": cells[2][0], "y": cells[2][1]},
               {"type": "door", "color": colors[rng.random() < 0.3], "x": cells[3][0], "y": cells[3][1],
                "open": False, "locked": rng.random() < 0.5}]
    return {"walls": walls, "objects": objects,
            "agent": {"x": cells[0][0], "y": cells[0][1], "dir": rng.randrange(4),
                      "carrying": None}}


def object_walk(steps: int, seed: int) -> list[dict]:
    """Random play on random layouts, turned toward what is next to the agent now and then."""
    rng = random.Random(seed)
    state, data = object_grid(rng), []
    for _ in range(steps):
        near = [d for d, (dx, dy) in FACING.items()
                if any([o["x"], o["y"]] == [state["agent"]["x"] + dx, state["agent"]["y"] + dy]
                       for o in state["objects"])]
        if near and state["agent"]["dir"] not in near and rng.random() < 0.5:
            action = TURN_RIGHT
        elif near and state["agent"]["dir"] in near and rng.random() < 0.6:
            action = rng.choice([PICK_UP, TOGGLE, FORWARD])
        else:  # a drop now and then: what is carried stays in hand a while
            action = rng.choice([TURN_LEFT, TURN_RIGHT, FORWARD, FORWARD, PICK_UP, TOGGLE,
                                 TOGGLE, DROP])
        nxt = object_step(state, action)
        data.append({"state": state, "action": action, "next_state": nxt, "reward": 0.0,
                     "done": False, "mission": "open the door"})
        state = object_grid(rng) if rng.random() < 0.04 else nxt
    return data


def test_objects_in_front_are_picked_up_put_down_block_a_move_and_doors_open_with_conditions():
    data = object_walk(1500, seed=8)
    program = rule_program(data)
    front = ("_ahead([_get(state, 'agent', 'x'), _get(state, 'agent', 'y')], "
             "{0: [1, 0], 1: [0, 1], 2: [-1, 0], 3: [0, -1]}, _get(state, 'agent', 'dir'))")
    there = f"_at(_get(state, 'objects'), ('x', 'y'), {front})"
    # the pick-up: the object in front leaves the grid and becomes what the agent carries
    assert f"_put(new, _without(_get(state, 'objects'), {there}), 'objects')" in program
    assert f"_put(new, _bare({there}, ('x', 'y')), 'agent', 'carrying')" in program
    pick_up = program.split(f"elif action == {PICK_UP}:")[1].split("elif action")[0]
    assert "_get(state, 'agent', 'carrying') == None" in pick_up  # with empty hands only
    # a move blocked by a wall in front, or by an object there that is not an open door
    assert f"if _in({front}, _get(state, 'walls')):\n            pass" in program
    assert f"elif not _get({there}, 'open') == True:\n            pass" in program
    # a door: unlocked and opened in place (or shut again), a locked one only with a key of its
    # color in hand
    assert (f"_changed_at(_get(state, 'objects'), ('x', 'y'), {front}, {{'locked': False}}, "
            "['open'])") in program
    assert f"_eq(_get({there}, 'color'), _get(_get(state, 'agent', 'carrying'), 'color'))" in program
    # a drop: what is carried is put down on the cell in front
    assert (f"_put_down(_get(state, 'objects'), _get(state, 'agent', 'carrying'), ('x', 'y'), "
            f"{front})") in program

    # on play it never saw, and on each case built here, every transition right
    fresh = object_walk(600, seed=9)
    assert {t["action"] for t in fresh if t["state"] != t["next_state"]} == set(range(6))
    walls = object_grid(random.Random(0))["walls"]
    red_key, blue_key = {"type": "key", "color": "red"}, {"type": "key", "color": "blue"}

    def at(x, y, d, carrying=None, *objects):
        return {"walls": walls, "objects": [dict(o) for o in objects],
                "agent": {"x": x, "y": y, "dir": d, "carrying": carrying}}

    key = {**red_key, "x": 3, "y": 2}
    door = {"type": "door", "color": "red", "x": 3, "y": 2, "open": False, "locked": True}
    cases = [(at(2, 2, 0, None, key), PICK_UP), (at(2, 2, 0, blue_key, key), PICK_UP),
             (at(2, 2, 0, None, key), FORWARD), (at(2, 2, 0, red_key, door), TOGGLE),
             (at(2, 2, 0, blue_key, door), TOGGLE), (at(2, 2, 0, None, door), TOGGLE),
             (at(2, 2, 0, None, {**door, "locked": False, "open": True}), TOGGLE),
             (at(2, 2, 0, None, {**door, "locked": False, "open": True}), FORWARD),
             (at(2, 2, 1, red_key, door), DROP), (at(2, 2, 0, red_key, door), DROP),
             (at(4, 2, 0, red_key), DROP), (at(3, 3, 3, None, door), FORWARD)]
    built = [{"state": s, "action": a, "next_state": object_step(s, a), "reward": 0.0,
              "done": False, "mission": "open the door"} for s, a in cases]
    assert [t["state"] != t["next_state"] for t in built] == [
        True, False, False, True, False, False, True, True, True, False, False, False]
    for transitions in (fresh, built):
        score = explained(program, transitions)
        assert score["state_correct"] == len(transitions), score["mismatches"]


def test_a_few_moves_along_one_row_learn_the_wall_ahead_not_a_condition_that_fits_them():
    # walked along the top row only: east to the wall, a bump north into it, west to the other
    # wall, a bump north again. "x" changed and "y" never did; a condition on the values of x
    # and the facing fits these steps, and walks through the wall at [3, 3] in a row never
    # walked. The position is read as x and y (the things on cells stand on x and y), and the
    # move's condition is the cell ahead being free.
    walls = [[x, y] for x in range(6) for y in range(6) if x in (0, 5) or y in (0, 5)] + [[3, 3]]
    goal = [{"type": "goal", "x": 4, "y": 4}]
    data = record(facing_step, {"agent": {"x": 1, "y": 1, "dir": 0}, "walls": walls,
                                "objects": goal}, (2, 2, 2, 2, 0, 2, 0, 2, 2, 2, 2, 1, 2))
    assert {t["state"]["agent"]["y"] for t in data} == {1}
    program = rule_program(data)
    position = "[_get(state, 'agent', 'x'), _get(state, 'agent', 'y')]"
    ahead = f"_ahead({position}, {{0: [1, 0], 2: [-1, 0]}}, _get(state, 'agent', 'dir'))"
    assert f"if not _in({ahead}, _get(state, 'walls')):" in program
    # forward, facing east or west, from every free cell: into the wall at [3, 3] blocked
    cases = [{"agent": {"x": x, "y": y, "dir": d}, "walls": walls, "objects": goal}
             for x in range(1, 5) for y in range(1, 5) if [x, y] != [3, 3] for d in (0, 2)]
    moves = [{"state": s, "action": 2, "next_state": facing_step(s, 2), "reward": 0.0,
              "done": False, "mission": "walk"} for s in cases]
    assert sum(t["state"] == t["next_state"] for t in moves) == 10  # 8 at the room's walls
    score = explained(program, moves)
    assert score["state_correct"] == len(moves), score["mismatches"]


def test_a_move_blocked_by_walls_and_by_things_is_learned_as_the_cell_ahead_not_a_wider_fit():
    # a move is blocked by a wall ahead or by a box ahead. On these 15 moves a test of the cell
    # two steps away fits more of them at once than either true test, and the greedy list began
    # with it; learned over the plain tests first (one leaf, the cell the action moves into)
    # and kept by how it carries to the moves left out of its learning, the list is the wall
    # ahead, then the box ahead
    walls = [[x, y] for x in range(7) for y in range(7) if x in (0, 6) or y in (0, 6)] + [
        [3, 3], [4, 3]]
    boxes = [{"type": "box", "x": 2, "y": 4}, {"type": "box", "x": 4, "y": 1}]

    def step(state: dict, action: int) -> dict:
        agent = dict(state["agent"])
        if action < 2:
            agent["dir"] = (agent["dir"] + (1 if action else -1)) % 4
        else:
            cell = [agent["x"] + FACING[agent["dir"]][0], agent["y"] + FACING[agent["dir"]][1]]
            if cell not in walls and all([b["x"], b["y"]] != cell for b in boxes):
                agent["x"], agent["y"] = cell
        return {**state, "agent": agent}

    data = record(step, {"agent": {"x": 1, "y": 1, "dir": 0}, "walls": walls, "things": boxes},
                  (2, 0, 1, 2, 0, 2, 2, 1, 0, 2, 0, 1, 0, 0, 1, 2, 2, 0, 2, 0, 1, 2, 2, 0, 2, 0,
                   2, 2, 1, 2))
    program = rule_program(data)
    ahead = ("_ahead([_get(state, 'agent', 'x'), _get(state, 'agent', 'y')], "
             "{0: [1, 0], 1: [0, 1], 2: [-1, 0], 3: [0, -1]}, _get(state, 'agent', 'dir'))")
    forward = program.split("elif action == 2:")[1]
    assert forward.split("\n")[2].strip() == f"if _in({ahead}, _get(state, 'walls')):"
    cells = [[x, y] for x in range(1, 6) for y in range(1, 6)
             if [x, y] not in walls and all([b["x"], b["y"]] != [x, y] for b in boxes)]
    moves = []
    for (x, y), d in itertools.product(cells, range(4)):
        s = {"agent": {"x": x, "y": y, "dir": d}, "walls": walls, "things": boxes}
        moves.append({"state": s, "action": 2, "next_state": step(s, 2), "reward": 0.0,
                      "done": False, "mission": "walk"})
    assert sum(t["state"] == t["next_state"] for t in moves) > 20  # walls and boxes block
    score = explained(program, moves)
    assert score["state_correct"] == len(moves), score["mismatches"]


def push_step(state: dict, action: int) -> dict:
    """A box pushed one cell unless a wall or a box is behind it; the agent stops at walls."""
    dx, dy = MOVES[action]
    (ax, ay), boxes = state["agent"], [list(b) for b in state["boxes"]]
    cell, beyond = [ax + dx, ay + dy], [ax + 2 * dx, ay + 2 * dy]
    if cell in state["walls"] or (cell in boxes and (beyond in state["walls"] or beyond in boxes)):
        return state
    if cell in boxes:
        boxes[boxes.index(cell)] = beyond
    return {**state, "agent": cell, "boxes": boxes}


def test_a_box_left_where_it_was_is_not_a_box_set_to_a_constant_cell():
    # 20 random steps: a box pushed right into the corner at [4, 2] and pushed again there, to
    # no effect. "Set the boxes to [[4, 2]]" explains those steps as well as "leave them", and
    # the model set every box to [4, 2] on a push right; a constant now explains only the steps
    # where the value changed, and a step that two changes explain takes either
    walls = [[x, y] for x in range(6) for y in range(6) if x in (0, 5) or y in (0, 5)]
    rng = random.Random(1)
    data = record(push_step, {"agent": [2, 4], "boxes": [[2, 3]], "walls": walls},
                  [rng.randrange(4) for _ in range(20)], "push")
    assert sum(t["action"] == 3 and t["state"] == t["next_state"]
               and [4, 2] in t["state"]["boxes"] for t in data) >= 2
    program = rule_program(data)
    assert "_put(new, [[4, 2]], 'boxes')" not in program
    # a push right from every cell next to a box anywhere in the room
    pushes = []
    for (bx, by) in itertools.product(range(1, 5), repeat=2):
        if bx > 1:
            s = {"agent": [bx - 1, by], "boxes": [[bx, by]], "walls": walls}
            pushes.append({"state": s, "action": 3, "next_state": push_step(s, 3), "reward": 0.0,
                           "done": False, "mission": "push"})
    score = explained(program, pushes)
    assert score["state_correct"] == len(pushes), score["mismatches"]


def test_a_push_seen_going_up_is_learned_for_a_move_right_that_never_pushed():
    # pushes up, a push blocked by the wall above, moves down and left, and two moves right in
    # free cells. Right's own data says "always move, boxes never change"; up's rules, moved by
    # right's step, are right on every move right recorded, and on more of all the moves than
    # right's own rules moved to the others, so right takes them: it pushes a box and stops at a
    # wall it never met
    walls = [[x, y] for x in range(7) for y in range(7) if x in (0, 6) or y in (0, 6)]
    data = record(push_step, {"agent": [2, 4], "boxes": [[2, 3]], "walls": walls},
                  (0, 0, 0, 1, 1, 3, 3, 0, 0, 0, 0, 2, 1, 2, 2, 0), "push")
    assert not any(t["action"] == 3 and t["state"]["boxes"] != t["next_state"]["boxes"]
                   for t in data)
    assert not any(t["action"] == 3 and t["state"] == t["next_state"] for t in data)
    pushes = []
    for (x, y) in itertools.product(range(1, 6), repeat=2):
        for box in ([x + 1, y], [x + 3, y]):
            s = {"agent": [x, y], "boxes": [box], "walls": walls}
            if box[0] < 6 and box != [x, y]:
                pushes.append({"state": s, "action": 3, "next_state": push_step(s, 3),
                               "reward": 0.0, "done": False, "mission": "push"})
    assert any(t["state"]["boxes"] != t["next_state"]["boxes"] for t in pushes)
    assert any(t["state"] == t["next_state"] for t in pushes)
    program = rule_program(data)
    assert "# as action 0 does, by this action's own step" in program
    score = explained(program, pushes)
    assert score["state_correct"] == len(pushes), score["mismatches"]
    own = learn_rules(data, borrow=False).program()
    assert explained(own, pushes)["state_correct"] < len(pushes)
    # one push up recorded, then one blocked by the wall: "every box set to where that one
    # went" explains the push as well as "the box ahead moved" does, and was taken first, and
    # the push was lost from the rules; a whole list set to a constant is tried last now
    once = rule_program(record(push_step, {"agent": [2, 3], "boxes": [[2, 2]], "walls": walls},
                               (0, 0, 1, 3, 3, 0, 2), "push"))
    assert "_put(new, [[" not in once
    assert explained(once, pushes)["state_correct"] > len(pushes) // 2


def test_a_success_seen_on_one_layout_is_learned_as_boxes_on_targets_not_where_the_agent_stood():
    # every recorded success put the box on its target with the agent on one cell: "the agent
    # on neither of the other two cells it stood on" explains the reward as well as "every box
    # on a target" and was learned first (tests of one leaf's value before relations), so the
    # same pushes one row up were a success one step early; a position's value is tried after
    # the relations now
    walls = [[x, y] for x in range(7) for y in range(7) if x in (0, 6) or y in (0, 6)]

    def episode(start: dict, actions) -> list[dict]:
        data = []
        for t in record(push_step, start, actions, "push every box onto a target"):
            done = sorted(t["next_state"]["boxes"]) == sorted(t["next_state"]["targets"])
            data.append({**t, "reward": float(done), "done": done})
            if done:
                break
        return data

    start = {"agent": [1, 3], "boxes": [[2, 3]], "targets": [[4, 3]], "walls": walls}
    data = episode(start, (2, 3, 3)) * 3  # a bump into the wall, a push, the push home
    assert sum(t["reward"] for t in data) == 3
    assert {tuple(t["next_state"]["agent"]) for t in data if t["reward"]} == {(3, 3)}
    program = rule_program(data)
    elsewhere = episode({"agent": [1, 1], "boxes": [[2, 1]], "targets": [[4, 1]], "walls": walls},
                        (3, 3))  # the same pushes one row up
    assert elsewhere[-1]["reward"] == 1.0 and elsewhere[-1]["next_state"]["agent"] == [3, 1]
    score = explained(program, elsewhere)
    assert score["reward_correct"] == len(elsewhere), score["mismatches"]


PLACES = ("go to shed 1", "go to barn 1", "go to barn 2", "go to well 1")
TAKES = ("take pear", "take plum", "take fig")
NAMED = PLACES + TAKES


def errand_step(state: dict, action: int) -> dict:
    """A small text world: go to a place the level has; take an object of a kind where one lies,
    with an empty hand."""
    new = {**state, "objects": {k: dict(v) for k, v in state["objects"].items()}}
    name = NAMED[action]
    if action < len(PLACES):
        place = name[len("go to "):]
        if place in state["places"]:
            new["at"] = place
        return new
    kind = name[len("take "):]
    here = sorted(o for o, v in state["objects"].items()
                  if o.split()[0] == kind and v["in"] == state["at"] and state["at"] is not None)
    if here and state["holding"] is None:
        new["holding"] = here[0]
        new["objects"][here[0]]["in"] = None
    return new


def test_an_action_tried_only_where_it_did_nothing_takes_the_rules_of_one_named_alike():
    # "take plum" was tried only where no plum lay (nothing happened), "go to barn 2" only in a
    # level without that place; "take pear" and "go to shed 1" were learned. Names that begin
    # alike carry the rules with the thing named: the plum is picked up where it lies; barn 2,
    # which no state names, is not gone to (the rules hold only where the state names it); "go
    # to well 1", never tried, is left to the explorer (no rule)
    start = {"at": None, "holding": None, "places": {"shed 1": True, "barn 1": True, "well 1": True},
             "objects": {"pear 1": {"in": "barn 1"}, "plum 1": {"in": "well 1"},
                         "fig 1": {"in": "shed 1"}}}
    rng = random.Random(3)
    data = []
    for _ in range(30):  # the pear and the fig lie in other places in each episode
        lay = {o: {"in": rng.choice(("shed 1", "barn 1"))} for o in ("pear 1", "fig 1")}
        lay["plum 1"] = {"in": "well 1"}
        data += record(errand_step, {**start, "objects": lay},
                       [rng.choice((0, 1, 2, 4, 5, 6)) for _ in range(4)], "fetch")
    assert {t["action"] for t in data} == {0, 1, 2, 4, 5, 6}
    assert any(t["action"] == 4 and t["next_state"]["holding"] == "pear 1" for t in data)
    assert any(t["action"] == 4 and t["next_state"] == t["state"] for t in data)
    assert all(t["next_state"] == t["state"] for t in data if t["action"] in (2, 5))
    checks = []
    for at, action in itertools.product(("shed 1", "barn 1", "well 1"), (2, 5)):
        state = {**start, "at": at}
        checks.append({"state": state, "action": action, "next_state": errand_step(state, action),
                       "reward": 0.0, "done": False, "mission": "fetch"})
    assert sum(t["state"] != t["next_state"] for t in checks) == 1  # the plum at the well

    def right(program: str) -> int:
        with Sandbox(UNTIMED) as sandbox:
            reply = sandbox.call(op_evaluate, timeout_s=UNTIMED_S, source=program,
                                 transitions=checks, starts=[], n_actions=len(NAMED))
        assert reply.ok, reply.message
        return reply.value["state_correct"]

    model = learn_rules(data, names=NAMED)
    assert sorted(model.analogies) == [2, 5] and model.analogies[5][0] == 4
    program = model.program()
    assert "# as action 4 does, on what this action's name names" in program
    assert "_names(state, 'plum 1')" in program and "_names(state, 'barn 2')" in program
    assert right(program) == len(checks)
    assert right(rule_program(data)) == len(checks) - 1  # without the names: not the plum
    assert 3 not in model.transitions and 3 not in model.analogies  # never tried: no rule


DOORS = NAMED + ("open", "put")
OPEN, PUT = len(NAMED), len(NAMED) + 1


def door_step(state: dict, action: int, shut_blocks: bool = False) -> dict:
    """The errands with doors: "open" opens the place the agent is at; "put" puts down what is
    held there (with ``shut_blocks``, only where that place is open)."""
    if action < len(NAMED):
        return errand_step(state, action)
    new = {**state, "open": dict(state["open"]),
           "objects": {k: dict(v) for k, v in state["objects"].items()}}
    at, held = state["at"], state["holding"]
    if action == OPEN and at is not None:
        new["open"][at] = True
    if action == PUT and held is not None and at is not None and (
            state["open"][at] or not shut_blocks):
        new["objects"][held]["in"] = at
        new["holding"] = None
    return new


def test_a_change_at_the_key_a_leaf_names_is_learned_there_for_keys_never_seen_changed():
    # "open" opened the shed and the barn, "put" put down the pear: each changed one entry of a
    # dict, always at the key that a leaf held before the step ("at", "holding"), so they are
    # learned there: opening the well, putting down the plum, never recorded, are predicted
    names, opened, put, step = DOORS, OPEN, PUT, door_step

    places = {"shed 1": True, "barn 1": True, "well 1": True}
    start = {"at": None, "holding": None, "places": places,
             "open": {p: False for p in places},
             "objects": {"pear 1": {"in": "barn 1"}, "plum 1": {"in": "well 1"}}}
    data = record(step, start, (0, opened, 1, opened, 4, 0, put, 1, 4, put), "fetch")
    assert {t["state"]["at"] for t in data if t["action"] == opened} == {"shed 1", "barn 1"}
    assert {t["state"]["holding"] for t in data if t["action"] == put} == {"pear 1", None}
    checks = []
    for state, action in [({**start, "at": "well 1"}, opened), ({**start, "at": "shed 1"}, opened),
                          ({**start, "at": "shed 1", "holding": "plum 1",
                            "objects": {**start["objects"], "plum 1": {"in": None}}}, put)]:
        checks.append({"state": state, "action": action, "next_state": step(state, action),
                       "reward": 0.0, "done": False, "mission": "fetch"})
    assert checks[0]["next_state"]["open"]["well 1"]
    assert checks[2]["next_state"]["objects"]["plum 1"]["in"] == "shed 1"

    def right(model) -> int:
        with Sandbox(UNTIMED) as sandbox:
            reply = sandbox.call(op_evaluate, timeout_s=UNTIMED_S, source=model.program(),
                                 transitions=checks, starts=[], n_actions=len(names))
        assert reply.ok, reply.message
        return reply.value["state_correct"]

    model = learn_rules(data, names=names)
    program = model.program()
    assert "_put(new, True, 'open', _get(state, 'at'))" in program
    assert "'objects', _get(state, 'holding'), 'in')" in program
    assert right(model) == len(checks)
    assert right(learn_rules(data, names=names, keyed=False)) < len(checks)


def test_a_put_that_needs_the_place_open_is_learned_on_the_open_flag_where_the_agent_is():
    # "put" puts down what is held only where the place the agent is at is open; "open" opens
    # it. The data put the pear down in the open shed and failed in the shut barn; the condition
    # is the open flag read at the key "at" names (``open[at]``), which "open" showed changing
    # there, not a test of which place the agent is at: the well, where nothing was ever put
    # down, takes the plum when open and not when shut
    names, opened, put = DOORS, OPEN, PUT

    def step(state: dict, action: int) -> dict:
        return door_step(state, action, shut_blocks=True)

    places = {"shed 1": True, "barn 1": True, "well 1": True}
    start = {"at": None, "holding": None, "places": places,
             "open": {"shed 1": False, "barn 1": False, "well 1": False},
             "objects": {"pear 1": {"in": "barn 1"}, "plum 1": {"in": "well 1"}}}
    # to the barn, take the pear, put (shut: nothing), open, put, take, to the shed, put (shut),
    # open, put; then to the well: open it
    data = record(step, start, (1, 4, put, opened, put, 4, 0, put, opened, put, 3, opened),
                  "fetch")
    assert [t["next_state"] != t["state"] for t in data if t["action"] == put] == [
        False, True, False, True]
    assert not any(t["state"]["at"] == "well 1" and t["action"] == put for t in data)
    held = {**start, "at": "well 1", "holding": "plum 1",
            "objects": {**start["objects"], "plum 1": {"in": None}}}
    checks = [{"state": s, "action": put, "next_state": step(s, put), "reward": 0.0,
               "done": False, "mission": "fetch"}
              for s in (held, {**held, "open": {**held["open"], "well 1": True}})]
    assert checks[0]["next_state"] == checks[0]["state"]
    assert checks[1]["next_state"]["objects"]["plum 1"]["in"] == "well 1"
    program = learn_rules(data, names=names).program()
    assert "_get(state, 'open', _get(state, 'at'))" in program
    score = explained(program, checks)
    assert score["state_correct"] == len(checks), score["mismatches"]


CHORES = ("go to shed 1", "go to barn 1", "take pear", "put", "wash")


def chore_step(state: dict, action: int) -> dict:
    """Go to a place, take the pear, put what is held down here, wash what is held."""
    new = {**state, "objects": {k: dict(v) for k, v in state["objects"].items()}}
    held = state["holding"]
    if action < 2:
        new["at"] = CHORES[action][len("go to "):]
    elif action == 2 and held is None and state["objects"]["pear 1"]["in"] == state["at"]:
        new["holding"], new["objects"]["pear 1"]["in"] = "pear 1", None
    elif action == 3 and held is not None:
        new["holding"], new["objects"][held]["in"] = None, state["at"]
    elif action == 4 and held is not None:
        new["objects"][held]["washed"] = True
    return new


def chores(mission: str, done: Callable[[dict], bool], start_in: str, episodes: int, seed: int
           ) -> list[dict]:
    """Episodes of random chores under ``mission``, rewarded (and ended) where ``done``."""
    rng = random.Random(seed)
    data = []
    for _ in range(episodes):
        state = {"at": None, "holding": None,
                 "objects": {"pear 1": {"in": start_in, "washed": False}}}
        for _ in range(12):
            action = rng.randrange(len(CHORES))
            nxt = chore_step(state, action)
            success = done(nxt)
            data.append({"state": state, "action": action, "next_state": nxt,
                         "reward": float(success), "done": success, "mission": mission})
            if success:
                break
            state = nxt
    return data


def test_a_reward_one_mission_earned_is_not_taken_for_another_whose_steps_contradict_it():
    # "put the pear in the shed" was completed, its pear starting in the barn; "put a washed pear
    # in the shed" starts with the pear there, and no step completed it. One decision list for
    # both said every step that left the pear in the shed completed the second too (the agent's
    # planner then saw its goal everywhere, and every step was a contradiction); learned per
    # mission, the second has no reward yet (the LLM writes it from the mission). A mission whose
    # steps agree with the first's reward ("bring the pear to the shed") takes it
    def in_shed(s: dict) -> bool:
        return s["objects"]["pear 1"]["in"] == "shed 1"

    place = chores("put the pear in the shed", in_shed, "barn 1", 40, seed=1)
    washed = chores("put a washed pear in the shed",
                    lambda s: in_shed(s) and s["objects"]["pear 1"]["washed"], "shed 1", 6, seed=2)
    assert sum(t["reward"] for t in place) >= 3 and not any(t["reward"] for t in washed)
    assert sum(in_shed(t["next_state"]) for t in washed) >= 10
    data = place + washed
    model = learn_rules(data, names=CHORES)
    assert model.rewards("put the pear in the shed")
    assert not model.rewards("put a washed pear in the shed")
    program = model.program()
    assert "mission == 'put the pear in the shed'" in program and not written_reward(program)
    score = explained(program, data)
    assert score["reward_correct"] == len(data), score["mismatches"]
    # one list for all missions (as before): wrong on the washed pear's steps in the shed
    together = learn_rules([{**t, "mission": "chores"} for t in data], names=CHORES)
    assert explained(together.program(), data)["reward_correct"] < len(data)

    # steps that never completed "bring the pear to the shed" agree with the first's reward,
    # which it takes, and with only those two missions one list holds for both
    bring = [t for t in chores("bring the pear to the shed", in_shed, "barn 1", 6, seed=3)
             if not t["reward"]]
    carried = learn_rules(place + bring, names=CHORES)
    assert carried.reward_missions == [] and carried.rewards("bring the pear to the shed")
    both = learn_rules(data + bring, names=CHORES)
    assert both.rewards("bring the pear to the shed")
    assert ("put the pear in the shed", "bring the pear to the shed") in [
        missions for missions, _, _ in both.reward_missions]
    late = {**place[-1], "mission": "bring the pear to the shed"}
    assert late["reward"] == 1.0
    assert explained(both.program(), [late])["reward_correct"] == 1


class Chores:
    """The chores world as a level: one mission, the pear starting in one place."""

    n_actions = len(CHORES)
    action_names = CHORES
    description = ("A yard with a shed and a barn. The agent goes to a place, takes the pear where "
                   "it lies, puts what it holds down where it is, washes what it holds.")
    family = "chores"
    max_steps = 12

    def __init__(self, mission: str, done: Callable[[dict], bool], start_in: str):
        self.mission, self.done, self.start_in, self.name = mission, done, start_in, mission
        self.state: dict = {}

    def reset(self, seed: int | None = None) -> tuple[dict, str]:
        self.state = {"at": None, "holding": None,
                      "objects": {"pear 1": {"in": self.start_in, "washed": False}}}
        return self.state, self.mission

    def step(self, action: int) -> tuple[dict, float, bool, bool]:
        self.state = chore_step(self.state, action)
        done = self.done(self.state)
        return self.state, float(done), done, False

    def close(self) -> None:
        pass


def test_after_transfer_a_reward_the_new_level_contradicts_gives_way_at_once_without_a_call():
    # the last level's model rewards the pear in the shed; the new level's pear starts there and
    # is to be washed first. Its steps contradict that reward, and with no call left the program
    # stayed: its wrong goal was in reach from every start, which the optimism score rewarded
    # over the rule model (right on every step, no reward in reach) until half the data
    # contradicted it. The rule model, whose reward explains more steps, takes its place
    def in_shed(s: dict) -> bool:
        return s["objects"]["pear 1"]["in"] == "shed 1"

    place = chores("put the pear in the shed", in_shed, "barn 1", 40, seed=1)
    washed = Chores("put a washed pear in the shed",
                    lambda s: in_shed(s) and s["objects"]["pear 1"]["washed"], "shed 1")
    state, mission = washed.reset()
    steps = record(chore_step, state, (1, 0), mission)  # to the barn and back: no success
    config = AgentConfig(epsilon=0.0, max_llm_calls=0, eval_timeout_s=UNTIMED_S,
                         plan_max_nodes=300, plan_max_depth=12)
    with WorldCoderAgent(ScriptedLLM([]), config, limits=UNTIMED) as agent:
        agent.data, agent.family = place + steps, Chores.family
        agent.program = before = rule_program(place, CHORES)
        assert "_get(next_state, 'objects', 'pear 1', 'in') == 'shed 1'" in before
        assert agent.check(washed, []).correct == len(place)  # wrong on both new steps
        agent.rewrite(washed, LevelResult(washed.name), [{"state": state, "mission": mission}],
                      mission, "contradicted by a new transition")
        assert agent.program != before
        assert "if mission == 'put the pear in the shed':" in agent.program
        assert agent.check(washed, []).correct == len(agent.data)


def test_a_door_opened_facing_where_the_agent_never_went_gives_that_heading_its_step():
    # a room one cell wide (x = 1) with a locked door east of it: the agent only ever moves
    # north and south, so no move shows the step east. Toggling the door facing east, holding
    # its key, changed the element on one cell, (2, 2): that cell less where the agent stood is
    # the step east. The toggle is then learned as opening the door in front, and a move east
    # through the open door is predicted, though the data never showed one
    walls = [[x, y] for x in range(5) for y in range(5) if x != 1 or y in (0, 4)]
    walls.remove([2, 2])
    key = {"type": "key", "color": "red", "x": 1, "y": 1}
    door = {"type": "door", "color": "red", "x": 2, "y": 2, "open": False, "locked": True}
    state = {"walls": walls, "objects": [key, door],
             "agent": {"x": 1, "y": 3, "dir": 3, "carrying": None}}
    data = []
    for action in (TOGGLE, FORWARD, PICK_UP, TURN_RIGHT, TURN_RIGHT, FORWARD, DROP, TURN_LEFT,
                   TURN_LEFT, FORWARD, TOGGLE, TURN_RIGHT, TOGGLE):
        nxt = object_step(state, action)
        data.append({"state": state, "action": action, "next_state": nxt, "reward": 0.0,
                     "done": False, "mission": "open the door"})
        state = nxt
    assert not any(t["state"]["agent"]["dir"] == 0
                   and t["state"]["agent"]["x"] != t["next_state"]["agent"]["x"] for t in data)
    assert data[-1]["next_state"]["objects"][-1]["open"]
    model = learn_rules(data)
    assert [0, [1, 0]] in [list(e) for e in model.space.pointers[0].table]
    program = rule_program(data)
    assert "_changed_at(_get(state, 'objects')" in program
    through = {**state, "agent": {"x": 1, "y": 2, "dir": 0, "carrying": None}}
    east = {"state": through, "action": FORWARD, "next_state": object_step(through, FORWARD),
            "reward": 0.0, "done": False, "mission": "open the door"}
    assert east["next_state"]["agent"]["x"] == 2
    assert explained(program, [east])["state_correct"] == 1

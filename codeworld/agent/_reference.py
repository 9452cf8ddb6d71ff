'''Hand-written models that satisfy the agent's contract exactly: a ceiling and a test fixture.

`SOKOBAN_MODEL`, `MINIGRID_MODEL` and `HOUSEHOLD_MODEL` are program *texts*, like the LLM's, and
run only in the sandbox. They show what a correct answer looks like, let the tests check the
planner and the environments against each other, and give the agent's ceiling in the benchmark
(an agent handed the right program from the start). `REFERENCE_MODELS` maps each environment
family (`codeworld.agent.envs.FAMILIES`) to its model.
'''

SOKOBAN_MODEL = """\
MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}


def transition(state, action):
    dx, dy = MOVES[action]
    walls = [list(c) for c in state["walls"]]
    boxes = [list(b) for b in state["boxes"]]
    x, y = state["agent"]
    nx, ny = x + dx, y + dy
    agent = [x, y]
    if [nx, ny] not in walls:
        if [nx, ny] in boxes:
            bx, by = nx + dx, ny + dy
            if [bx, by] not in walls and [bx, by] not in boxes:
                boxes[boxes.index([nx, ny])] = [bx, by]
                agent = [nx, ny]
        else:
            agent = [nx, ny]
    out = dict(state)
    out["boxes"] = boxes
    out["agent"] = agent
    return out


def reward(state, action, next_state, mission):
    solved = sorted(next_state["boxes"]) == sorted(next_state["targets"])
    return (1.0 if solved else 0.0), solved
"""

MINIGRID_MODEL = """\
DIRS = [(1, 0), (0, 1), (-1, 0), (0, -1)]


def _at(state, x, y):
    for obj in state["objects"]:
        if obj["x"] == x and obj["y"] == y:
            return obj
    return None


def transition(state, action):
    agent = dict(state["agent"])
    objects = [dict(o) for o in state["objects"]]
    out = dict(state)
    out["objects"] = objects
    out["agent"] = agent
    dx, dy = DIRS[agent["dir"]]
    fx, fy = agent["x"] + dx, agent["y"] + dy
    front = _at(out, fx, fy)
    wall = [fx, fy] in state["walls"]
    if action == 0:
        agent["dir"] = (agent["dir"] - 1) % 4
    elif action == 1:
        agent["dir"] = (agent["dir"] + 1) % 4
    elif action == 2:
        passable = front is None or front["type"] == "goal" or (front["type"] == "door" and front["open"])
        if not wall and passable:
            agent["x"], agent["y"] = fx, fy
    elif action == 3:
        if front is not None and front["type"] in ("key", "ball", "box") and agent["carrying"] is None:
            agent["carrying"] = {"type": front["type"], "color": front["color"]}
            objects.remove(front)
    elif action == 4:
        if front is None and not wall and agent["carrying"] is not None:
            objects.append({"type": agent["carrying"]["type"], "color": agent["carrying"]["color"],
                            "x": fx, "y": fy})
            agent["carrying"] = None
    elif action == 5:
        if front is not None and front["type"] == "box":
            objects.remove(front)
        elif front is not None and front["type"] == "door":
            if front["locked"]:
                held = agent["carrying"]
                if held is not None and held["type"] == "key" and held["color"] == front["color"]:
                    front["locked"] = False
                    front["open"] = True
            else:
                front["open"] = not front["open"]
    return out


def reward(state, action, next_state, mission):
    agent = next_state["agent"]
    if "goal" in mission:
        here = _at(next_state, agent["x"], agent["y"])
        done = action == 2 and here is not None and here["type"] == "goal"
        return (1.0 if done else 0.0), done
    if mission.startswith("open the door"):
        before = [o for o in state["objects"] if o["type"] == "door"]
        after = [o for o in next_state["objects"] if o["type"] == "door"]
        done = action == 5 and any(a["open"] and not b["open"] for a, b in zip(after, before))
        return (1.0 if done else 0.0), done
    if mission.startswith("pick up"):
        words = mission.split()
        held = agent["carrying"]
        done = (action == 3 and held is not None and state["agent"]["carrying"] is None
                and held["color"] == words[-2] and held["type"] == words[-1])
        return (1.0 if done else 0.0), done
    return 0.0, False
"""

HOUSEHOLD_MODEL = """\
RECEPTACLES = ["cabinet 1", "cabinet 2", "countertop 1", "countertop 2", "desk 1", "drawer 1",
               "drawer 2", "fridge 1", "microwave 1", "shelf 1", "sink 1", "table 1"]
KINDS = ["apple", "book", "bowl", "cellphone", "mug", "plate", "potato", "tomato"]
OPENABLE = ["cabinet", "drawer", "fridge", "microwave"]
OPEN, CLOSE, PUT, CLEAN, HEAT, COOL, TOGGLE = 20, 21, 22, 23, 24, 25, 26


def kind(name):
    return name.rsplit(" ", 1)[0]


def transition(state, action):
    out = dict(state)
    out["open"] = dict(state["open"])
    out["objects"] = {name: dict(obj) for name, obj in state["objects"].items()}
    at, held = state["at"], state["holding"]
    reachable = at is not None and state["open"][at]
    if action < 12:
        if RECEPTACLES[action] in state["open"]:
            out["at"] = RECEPTACLES[action]
    elif action < 20:
        here = [name for name, obj in state["objects"].items()
                if obj["in"] == at and kind(name) == KINDS[action - 12]]
        if held is None and reachable and here:
            name = min(here, key=lambda n: int(n.rsplit(" ", 1)[1]))
            out["objects"][name]["in"] = None
            out["holding"] = name
    elif action in (OPEN, CLOSE):
        if at is not None and kind(at) in OPENABLE:
            out["open"][at] = action == OPEN
    elif action == PUT:
        if held is not None and reachable:
            out["objects"][held]["in"] = at
            out["holding"] = None
    elif action == TOGGLE:
        if at is not None and kind(at) == "desk":
            out["lamp_on"] = not state["lamp_on"]
    elif held is not None and at is not None:
        obj = out["objects"][held]
        if action == CLEAN and kind(at) == "sink":
            obj["clean"] = True
        elif action == HEAT and kind(at) == "microwave":
            obj["hot"], obj["cool"] = True, False
        elif action == COOL and kind(at) == "fridge":
            obj["cool"], obj["hot"] = True, False
    return out


def goal_holds(state, mission):
    words = mission.split()
    if words[0] == "examine":
        held = state["holding"]
        return (state["lamp_on"] and state["at"] is not None and kind(state["at"]) == "desk"
                and held is not None and kind(held) == words[2])
    target, phrase = words[-1], words[1:-3]
    need = 2 if phrase[0] == "two" else 1
    noun = phrase[-1]
    if need == 2:
        noun = noun[:-2] if noun.endswith("oes") else noun[:-1]
    flag = phrase[1] if len(phrase) == 3 else None
    counts = {}
    for name, obj in state["objects"].items():
        where = obj["in"]
        if kind(name) == noun and where is not None and kind(where) == target:
            if flag is None or obj[flag]:
                counts[where] = counts.get(where, 0) + 1
    return max(counts.values(), default=0) >= need


def reward(state, action, next_state, mission):
    done = goal_holds(next_state, mission)
    return (1.0 if done else 0.0), done
"""

REFERENCE_MODELS = {"sokoban": SOKOBAN_MODEL, "minigrid": MINIGRID_MODEL, "household": HOUSEHOLD_MODEL}

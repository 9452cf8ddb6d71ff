'''Hand-written models that satisfy the agent's contract exactly: a ceiling and a test fixture.

`SOKOBAN_MODEL` and `MINIGRID_MODEL` are program *texts*, like the LLM's, and run only in the
sandbox. They show what a correct answer looks like, let the tests check the planner and the
environments against each other, and give the agent's ceiling in the benchmark (an agent handed
the right program from the start).
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

"""MiniGrid levels (the `minigrid` package) as object-level environments.

The adapter reads the simulator's grid, not its pixel-like observation, and gives a JSON-ready
state that an LLM can read and a program can compute on::

    {"width": 5, "height": 5, "walls": [[x, y], ...],
     "agent": {"x": 1, "y": 1, "dir": 0, "carrying": None},
     "objects": [{"type": "key", "color": "yellow", "x": 1, "y": 2},
                 {"type": "door", "color": "yellow", "x": 2, "y": 1, "open": False, "locked": True},
                 {"type": "goal", "color": "green", "x": 3, "y": 3}]}

``dir`` is 0 east (x + 1), 1 south (y + 1), 2 west, 3 north; ``carrying`` is None or
``{"type", "color"}``; a carried object is not in ``objects``. The full observation makes the
environment fully observed and deterministic given the seed. The reward is 1.0 on the step that
completes the mission and 0.0 otherwise (MiniGrid's own reward, ``1 - 0.9 * steps / max_steps``,
depends on the step count, which is not part of the state; success is what the agent learns).
The ``done`` action (6) is left out: the actions are 0..5.
"""

from __future__ import annotations

from typing import Any

ACTIONS = ("turn left", "turn right", "move forward", "pick up", "drop", "toggle")

LEVEL_IDS = {
    "empty": "MiniGrid-Empty-5x5-v0",
    "empty-6x6": "MiniGrid-Empty-6x6-v0",
    "empty-8x8": "MiniGrid-Empty-8x8-v0",
    "doorkey": "MiniGrid-DoorKey-5x5-v0",
    "doorkey-6x6": "MiniGrid-DoorKey-6x6-v0",
    "unlock": "MiniGrid-Unlock-v0",
    "unlockpickup": "MiniGrid-UnlockPickup-v0",
    "blockedunlockpickup": "MiniGrid-BlockedUnlockPickup-v0",
}

DESCRIPTION = """\
A MiniGrid gridworld, fully observed. x grows to the right (east) and y grows downwards (south).
The agent stands on a cell and faces a direction: dir 0 = east (x + 1), 1 = south (y + 1),
2 = west (x - 1), 3 = north (y - 1). The cell in front of the agent is its cell plus that offset.
Actions: 0 = turn left (dir - 1, modulo 4), 1 = turn right (dir + 1, modulo 4), 2 = move forward
(into the cell in front, unless it holds a wall, a key, a ball, a box or a door that is not open;
goal cells and open doors can be entered), 3 = pick up (the key, ball or box in front, if the
agent carries nothing: it leaves the grid and becomes "carrying"), 4 = drop (the carried object
onto the cell in front, if that cell is empty), 5 = toggle (on the door in front: a locked door
opens only when the agent carries a key of the door's color, and then it is unlocked and open; an
unlocked door switches between open and closed). Nothing else changes the grid.

The state is a dict: "width", "height", "walls" (a list of [x, y]), "agent" {"x", "y", "dir",
"carrying"} where "carrying" is None or {"type", "color"}, and "objects", a list of dicts with
"type" (key, ball, box, door, goal), "color", "x", "y", and for doors "open" and "locked".
The mission is a sentence such as "get to the green goal square", "open the door" or "pick up
the purple box". Reward is 1.0 and the episode ends (done) on the step that completes the
mission (entering the goal cell; opening the door; picking up the named object); every other
step gives 0.0 and does not end the episode."""


def _import_minigrid():
    import gymnasium as gym
    import minigrid  # noqa: F401 - importing it registers the MiniGrid-* ids

    return gym


def grid_state(env: Any) -> dict:
    """The object-level state of a MiniGrid env (its ``unwrapped`` simulator)."""
    u = env.unwrapped
    walls, objects = [], []
    for y in range(u.height):
        for x in range(u.width):
            cell = u.grid.get(x, y)
            if cell is None:
                continue
            if cell.type == "wall":
                walls.append([x, y])
                continue
            obj = {"type": cell.type, "color": cell.color, "x": x, "y": y}
            if cell.type == "door":
                obj["open"] = bool(cell.is_open)
                obj["locked"] = bool(cell.is_locked)
            objects.append(obj)
    carrying = None if u.carrying is None else {"type": u.carrying.type, "color": u.carrying.color}
    x, y = (int(v) for v in u.agent_pos)
    return {"width": int(u.width), "height": int(u.height), "walls": walls,
            "agent": {"x": x, "y": y, "dir": int(u.agent_dir), "carrying": carrying},
            "objects": objects}


class MiniGridEnv:
    """A MiniGrid level with an object-level state.

    Args:
        level: a short name from `LEVEL_IDS` or a Gymnasium id (``MiniGrid-...``).
        max_steps: the episode is truncated after this many steps (None: MiniGrid's own limit).
    """

    n_actions = len(ACTIONS)
    action_names = ACTIONS
    description = DESCRIPTION
    family = "minigrid"

    def __init__(self, level: str = "empty", max_steps: int | None = None):
        gym = _import_minigrid()
        self.env_id = LEVEL_IDS.get(level, level)
        if self.env_id not in gym.registry:
            raise KeyError(f"unknown MiniGrid level {level!r}; short names: {', '.join(LEVEL_IDS)}")
        self.name = f"minigrid-{level}" if level in LEVEL_IDS else self.env_id
        self.env = gym.make(self.env_id)
        self.max_steps = max_steps if max_steps is not None else int(self.env.unwrapped.max_steps)
        self.steps = 0
        self.mission = ""

    def reset(self, seed: int | None = None) -> tuple[dict, str]:
        """Start an episode; the seed chooses the layout."""
        self.env.reset(seed=seed)
        self.steps = 0
        self.mission = str(self.env.unwrapped.mission)
        return grid_state(self.env), self.mission

    def step(self, action: int) -> tuple[dict, float, bool, bool]:
        """``(next_state, reward, terminated, truncated)`` with reward 1.0 on success."""
        action = int(action)
        if not 0 <= action < self.n_actions:
            raise ValueError(f"MiniGrid actions here are 0..{self.n_actions - 1}, got {action}")
        _, reward, terminated, truncated, _ = self.env.step(action)
        self.steps += 1
        success = bool(terminated and reward > 0)
        truncated = bool(truncated or (not terminated and self.steps >= self.max_steps))
        return grid_state(self.env), (1.0 if success else 0.0), bool(terminated), truncated

    def close(self) -> None:
        self.env.close()

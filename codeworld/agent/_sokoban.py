"""codeworld's own Sokoban: deterministic, text levels, an object-level state, a level generator.

A level is text, one row per line: ``#`` wall, ``@`` player, ``+`` player on a target, ``$`` box,
``*`` box on a target, ``.`` target, space floor. The player moves up, down, left or right; it
pushes a box one cell when the cell behind the box is free (no wall, no box); it never pulls.
The episode ends with reward 1 when every box is on a target; every other step gives 0.

The state is a JSON-ready dict that an LLM can read and a program can compute on::

    {"width": 6, "height": 5, "walls": [[x, y], ...], "targets": [[x, y], ...],
     "boxes": [[x, y], ...], "agent": [x, y]}

``x`` grows to the right and ``y`` downwards (row 0 is the first line of the level).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ACTIONS = ("up", "down", "left", "right")
MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}
MISSION = "push every box onto a target"

DESCRIPTION = """\
Sokoban on a grid. The agent moves one cell per step: action 0 = up (y - 1), 1 = down (y + 1),
2 = left (x - 1), 3 = right (x + 1); x grows to the right and y grows downwards. A move into a
wall does nothing. A move into a box pushes the box one cell in the same direction, but only
when the cell behind the box is neither a wall nor another box; otherwise nothing moves. Boxes
are never pulled. Walls and targets never move.

The state is a dict: "width" and "height" of the grid, "walls", "targets" and "boxes" as lists
of [x, y] cells, and "agent" as [x, y]. The mission is a sentence; the mission here is to push
every box onto a target. Reward is 1.0 and the episode ends (done) on the step that leaves every
box on a target; every other step gives reward 0.0 and does not end the episode."""

LEVELS = {
    "corridor": """\
#######
#@ $ .#
#######""",
    "turn": """\
######
#@   #
# $  #
#  . #
######""",
    "two-boxes": """\
#######
#     #
# $$  #
#@  ..#
#######""",
    "room": """\
#######
#.  # #
# $   #
#  #$ #
#@   .#
#######""",
}


def parse_level(text: str) -> dict:
    """The state of a text level (see the module docstring).

    Raises:
        ValueError: no player, or boxes and targets differ in number.
    """
    rows = text.strip("\n").splitlines()
    walls, targets, boxes, agent = [], [], [], None
    for y, row in enumerate(rows):
        for x, ch in enumerate(row):
            if ch == "#":
                walls.append([x, y])
            if ch in ".*+":
                targets.append([x, y])
            if ch in "$*":
                boxes.append([x, y])
            if ch in "@+":
                if agent is not None:
                    raise ValueError("a level has exactly one player")
                agent = [x, y]
    if agent is None:
        raise ValueError("the level has no player ('@' or '+')")
    if len(boxes) != len(targets) or not boxes:
        raise ValueError(f"{len(boxes)} boxes and {len(targets)} targets: they must match (and be > 0)")
    return {"width": max(len(r) for r in rows), "height": len(rows), "walls": sorted(walls),
            "targets": sorted(targets), "boxes": sorted(boxes), "agent": agent}


def render_level(state: dict) -> str:
    """The text of a state (the inverse of `parse_level`)."""
    grid = [[" "] * state["width"] for _ in range(state["height"])]
    for x, y in state["walls"]:
        grid[y][x] = "#"
    for x, y in state["targets"]:
        grid[y][x] = "."
    for x, y in state["boxes"]:
        grid[y][x] = "*" if [x, y] in state["targets"] else "$"
    x, y = state["agent"]
    grid[y][x] = "+" if [x, y] in state["targets"] else "@"
    return "\n".join("".join(row).rstrip() for row in grid)


def step_state(state: dict, action: int) -> tuple[dict, float, bool]:
    """The true dynamics: ``(next_state, reward, done)`` for a state and an action in 0..3."""
    if action not in MOVES:
        raise ValueError(f"Sokoban actions are 0..3, got {action!r}")
    dx, dy = MOVES[action]
    walls = {tuple(c) for c in state["walls"]}
    boxes = [list(b) for b in state["boxes"]]
    box_cells = {tuple(b) for b in boxes}
    ax, ay = state["agent"]
    nx, ny = ax + dx, ay + dy
    agent = [ax, ay]
    if (nx, ny) not in walls:
        if (nx, ny) in box_cells:
            bx, by = nx + dx, ny + dy
            if (bx, by) not in walls and (bx, by) not in box_cells:
                boxes[boxes.index([nx, ny])] = [bx, by]
                agent = [nx, ny]
        else:
            agent = [nx, ny]
    next_state = {**state, "walls": [list(c) for c in state["walls"]],
                  "targets": [list(c) for c in state["targets"]], "boxes": sorted(boxes),
                  "agent": agent}
    solved = {tuple(b) for b in boxes} == {tuple(t) for t in state["targets"]}
    return next_state, (1.0 if solved else 0.0), solved


class SokobanEnv:
    """One Sokoban level as an object-level environment.

    Args:
        level: the level's text.
        name: a name for reports.
        max_steps: the episode is truncated after this many steps.
    """

    n_actions = len(ACTIONS)
    action_names = ACTIONS
    description = DESCRIPTION
    family = "sokoban"

    def __init__(self, level: str, name: str = "sokoban", max_steps: int = 100):
        self.start = parse_level(level)
        self.name = name
        self.max_steps = max_steps
        self.state: dict | None = None
        self.steps = 0

    @property
    def mission(self) -> str:
        return MISSION

    def reset(self, seed: int | None = None) -> tuple[dict, str]:
        """Start an episode (a Sokoban level has one start state: ``seed`` is unused)."""
        self.state = {**self.start, "agent": list(self.start["agent"]),
                      "boxes": [list(b) for b in self.start["boxes"]]}
        self.steps = 0
        return self.observe(), MISSION

    def observe(self) -> dict:
        assert self.state is not None, "call reset() first"
        return {**self.state, "walls": [list(c) for c in self.state["walls"]],
                "targets": [list(c) for c in self.state["targets"]],
                "boxes": [list(c) for c in self.state["boxes"]], "agent": list(self.state["agent"])}

    def step(self, action: int) -> tuple[dict, float, bool, bool]:
        """``(next_state, reward, terminated, truncated)``."""
        assert self.state is not None, "call reset() first"
        self.state, reward, done = step_state(self.state, int(action))
        self.steps += 1
        return self.observe(), reward, done, (not done and self.steps >= self.max_steps)

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class GeneratorConfig:
    """Settings of the level generator.

    Attributes:
        width: the room's width, walls included.
        height: the room's height, walls included.
        boxes: how many boxes (and targets).
        inner_walls: wall cells scattered inside the room (fewer when they would block it).
        reverse_steps: random reverse moves (pulls) from the solved position; more is harder.
    """

    width: int = 7
    height: int = 6
    boxes: int = 1
    inner_walls: int = 2
    reverse_steps: int = 30


def generate_level(seed: int, config: GeneratorConfig | None = None) -> str:
    """A random level that is solvable by construction.

    It starts from the solved position (every box on its target) and makes random *reverse*
    moves: the player steps, and may pull the box behind it along. Reversing such a sequence is
    a solution, so every generated level can be solved.

    Args:
        seed: the random seed (the same seed gives the same level).
        config: the room's size and difficulty.
    """
    config = config or GeneratorConfig()
    rng = np.random.default_rng(seed)
    w, h = config.width, config.height
    walls = {(x, y) for x in range(w) for y in range(h) if x in (0, w - 1) or y in (0, h - 1)}
    interior = [(x, y) for x in range(1, w - 1) for y in range(1, h - 1)]
    for index in rng.permutation(len(interior))[:config.inner_walls]:
        walls.add(interior[int(index)])
    free = [c for c in interior if c not in walls]
    if len(free) < 2 * config.boxes + 1:
        raise ValueError("the room is too small for that many boxes")
    picks = rng.permutation(len(free))
    targets = [free[int(i)] for i in picks[:config.boxes]]
    boxes = list(targets)
    player = free[int(picks[config.boxes])]
    for _ in range(config.reverse_steps):
        dx, dy = MOVES[int(rng.integers(4))]
        nxt = (player[0] + dx, player[1] + dy)
        if nxt in walls or nxt in boxes:
            continue
        behind = (player[0] - dx, player[1] - dy)
        if behind in boxes and rng.random() < 0.7:
            boxes[boxes.index(behind)] = player
        player = nxt
    if sorted(boxes) == sorted(targets):  # still solved: pull the first box once if possible
        for dx, dy in MOVES.values():
            box = boxes[0]
            p1 = (box[0] + dx, box[1] + dy)
            p2 = (box[0] + 2 * dx, box[1] + 2 * dy)
            if all(c not in walls and c not in boxes for c in (p1, p2)):
                boxes[0], player = p1, p2
                break
    state = {"width": w, "height": h, "walls": sorted([list(c) for c in walls]),
             "targets": sorted([list(c) for c in targets]), "boxes": sorted([list(c) for c in boxes]),
             "agent": list(player)}
    return render_level(state)


def make_sokoban(level: str = "corridor", max_steps: int = 100) -> SokobanEnv:
    """A Sokoban env from a bundled level name, ``gen:SEED``, or level text."""
    if level in LEVELS:
        return SokobanEnv(LEVELS[level], name=f"sokoban-{level}", max_steps=max_steps)
    if level.startswith("gen:"):
        try:
            seed = int(level.split(":", 1)[1])
        except ValueError:
            raise ValueError(f"a generated Sokoban level is gen:SEED with a whole-number seed, "
                             f"not {level!r}") from None
        return SokobanEnv(generate_level(seed), name=f"sokoban-gen{seed}", max_steps=max_steps)
    if "\n" in level:
        return SokobanEnv(level, name="sokoban-custom", max_steps=max_steps)
    raise KeyError(f"unknown Sokoban level {level!r}; bundled: {', '.join(LEVELS)}, or gen:SEED")

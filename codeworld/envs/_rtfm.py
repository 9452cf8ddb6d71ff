"""RTFM ("Read to Fight Monsters"): codeworld's deterministic, stationary version of the game.

Zhong, Rocktäschel and Grefenstette (ICLR 2020) made RTFM to test whether an agent reads: a grid
with monsters and items, and a manual that says which item beats which monster. The CWMB paper
used a modified copy of facebookresearch/RTFM (monsters that do not move, no randomness within an
episode) that is not on PyPI; this module is codeworld's own implementation of that game, small
enough to read in one go, with a flat numeric observation that determines the whole state.

The rules are in `RtfmEnv`'s docstring, which is also the description an LLM gets
(`codeworld describe RTFM-v0`); `rtfm_step` is the same rule as a pure function on observations.
The whole mutable state is one integer ``s`` (like Gymnasium's Taxi), so the oracle planner and
the collection protocol save and restore it as a toy-text simulator.

Importing this module registers ``RTFM-v0`` with Gymnasium; codeworld's env registry imports it
on first use of the id.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ENV_ID = "RTFM-v0"
SIZE = 6  # the grid is SIZE x SIZE cells, rows and columns 0..SIZE-1
MAX_EPISODE_STEPS = 100
N_ACTIONS = 5
STAY, UP, DOWN, LEFT, RIGHT = range(N_ACTIONS)
MOVES = {STAY: (0, 0), UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}

ELEMENTS = {1: "fire", 2: "cold", 3: "lightning", 4: "poison"}
MODIFIERS = {1: "blessed", 2: "gleaming", 3: "fanatical", 4: "arcane"}
# The manual: the element each item modifier beats.
BEATS = {1: 4, 2: 3, 3: 1, 4: 2}
BEATEN_BY = {element: modifier for modifier, element in BEATS.items()}

WIN_REWARD = 1.0
LOSS_REWARD = -1.0

# Observation layout (16 numbers).
AGENT_ROW, AGENT_COL, HELD = 0, 1, 2
MONSTERS = (3, 6)  # each monster: row, column, element
ITEMS = (9, 12)  # each item: row, column, modifier (row and column -1 once picked up)
TARGET = 15
OBS_DIM = 16

_CELLS = SIZE * SIZE
# Mixed-radix layout of the integer state s: (field, radix), least significant first.
_RADICES = (
    ("agent", _CELLS), ("held", 5),
    ("monster0", _CELLS), ("element0", 4), ("monster1", _CELLS), ("element1", 4),
    ("item0", _CELLS + 1), ("modifier0", 4), ("item1", _CELLS + 1), ("modifier1", 4),
    ("target", 4),
)
N_STATES = int(np.prod([radix for _, radix in _RADICES], dtype=np.float64))


def manual() -> str:
    """The manual, one sentence per item modifier."""
    return " ".join(f"{MODIFIERS[m].capitalize()} items beat {ELEMENTS[BEATS[m]]} monsters."
                    for m in sorted(MODIFIERS))


def rtfm_step(state: np.ndarray, action: int) -> tuple[np.ndarray, float, bool]:
    """One step of the game on an observation: (next observation, reward, terminated)."""
    s = np.array(state, dtype=np.float64)
    row, col = int(s[AGENT_ROW]), int(s[AGENT_COL])
    d_row, d_col = MOVES[int(action)]
    new_row, new_col = row + d_row, col + d_col
    if not (0 <= new_row < SIZE and 0 <= new_col < SIZE):
        new_row, new_col = row, col
    s[AGENT_ROW], s[AGENT_COL] = new_row, new_col
    for m in MONSTERS:
        if int(s[m]) == new_row and int(s[m + 1]) == new_col:
            element = int(s[m + 2])
            won = element == int(s[TARGET]) and BEATS.get(int(s[HELD])) == element
            return s, WIN_REWARD if won else LOSS_REWARD, True
    if int(s[HELD]) == 0:
        for i in ITEMS:
            if int(s[i]) == new_row and int(s[i + 1]) == new_col:
                s[HELD] = s[i + 2]
                s[i], s[i + 1] = -1.0, -1.0
                break
    return s, 0.0, False


def encode_state(obs: np.ndarray) -> int:
    """The integer state ``s`` of an observation (the inverse of `decode_state`)."""
    o = [int(round(float(x))) for x in np.asarray(obs, dtype=np.float64).reshape(-1)]
    if len(o) != OBS_DIM:
        raise ValueError(f"an RTFM observation has {OBS_DIM} numbers, got {len(o)}")

    def item_cell(i: int) -> int:
        return _CELLS if o[i] < 0 else o[i] * SIZE + o[i + 1]

    values = {
        "agent": o[AGENT_ROW] * SIZE + o[AGENT_COL], "held": o[HELD],
        "monster0": o[3] * SIZE + o[4], "element0": o[5] - 1,
        "monster1": o[6] * SIZE + o[7], "element1": o[8] - 1,
        "item0": item_cell(9), "modifier0": o[11] - 1,
        "item1": item_cell(12), "modifier1": o[14] - 1,
        "target": o[TARGET] - 1,
    }
    s, scale = 0, 1
    for name, radix in _RADICES:
        if not 0 <= values[name] < radix:
            raise ValueError(f"not an RTFM observation: {name} is out of range in {o}")
        s += values[name] * scale
        scale *= radix
    return s


def decode_state(s: int) -> np.ndarray:
    """The observation (16 float64 numbers) of the integer state ``s``."""
    values = {}
    s = int(s)
    for name, radix in _RADICES:
        values[name] = s % radix
        s //= radix

    def cell(c: int) -> tuple[float, float]:
        return (-1.0, -1.0) if c == _CELLS else (float(c // SIZE), float(c % SIZE))

    obs = np.empty(OBS_DIM, dtype=np.float64)
    obs[AGENT_ROW], obs[AGENT_COL] = cell(values["agent"])
    obs[HELD] = values["held"]
    for k, m in enumerate(MONSTERS):
        obs[m], obs[m + 1] = cell(values[f"monster{k}"])
        obs[m + 2] = values[f"element{k}"] + 1
    for k, i in enumerate(ITEMS):
        obs[i], obs[i + 1] = cell(values[f"item{k}"])
        obs[i + 2] = values[f"modifier{k}"] + 1
    obs[TARGET] = values["target"] + 1
    return obs


class RtfmEnv(gym.Env):
    """
    ## Description

    RTFM ("Read to Fight Monsters") is a game on a 6 x 6 grid (rows and columns 0 to 5, row 0 at
    the top, no walls inside). On the grid are the agent, two monsters and two items. Each
    monster has an element (fire, cold, lightning or poison; the two monsters differ). Each item
    has a modifier (blessed, gleaming, fanatical or arcane). The goal names one of the two
    monsters, the target, by its element. The agent wins by walking into the target while
    holding the item that beats the target's element. Monsters and items never move by
    themselves, and nothing in the game is random after the start.

    The manual says which item modifier beats which element:

    * Blessed items beat poison monsters.
    * Gleaming items beat lightning monsters.
    * Fanatical items beat fire monsters.
    * Arcane items beat cold monsters.

    Codes used in the observation: elements fire = 1, cold = 2, lightning = 3, poison = 4;
    modifiers blessed = 1, gleaming = 2, fanatical = 3, arcane = 4.

    ## Action Space

    Discrete(5): 0 stay, 1 up (row - 1), 2 down (row + 1), 3 left (column - 1), 4 right
    (column + 1). A move that would leave the grid keeps the agent where it is.

    ## Observation Space

    16 numbers, all integers stored as floats:

    | index | meaning |
    |---|---|
    | 0, 1 | agent row, agent column |
    | 2 | modifier code of the item the agent holds, 0 when its hands are empty |
    | 3, 4, 5 | first monster: row, column, element code |
    | 6, 7, 8 | second monster: row, column, element code |
    | 9, 10, 11 | first item: row, column, modifier code; row and column are -1 once it is picked up |
    | 12, 13, 14 | second item: row, column, modifier code; row and column are -1 once it is picked up |
    | 15 | element code of the target monster |

    ## Transition Dynamics

    One step does, in this order:

    1. The agent moves one cell in the direction of the action (or stays, for action 0, or when
       the move would leave the grid).
    2. If the agent's cell now holds a monster, the agent fights it and the episode ends. The
       agent wins when the monster is the target (its element equals index 15) and the item held
       beats its element by the manual; any other fight is lost. Nothing else changes.
    3. Otherwise, if the agent's hands are empty and its cell holds an item still on the grid, the
       agent picks it up: index 2 becomes the item's modifier code and the item's row and column
       become -1. An agent that already holds an item walks over the other one and leaves it
       where it is. An item can never be dropped.

    ## Rewards

    +1 for winning the fight, -1 for losing a fight, 0 on every other step.

    ## Starting State

    The agent, the monsters and the items start on five different random cells, with hands
    empty. The two monsters get two different random elements; one of them, at random, is the
    target. One item beats the target's element, the other beats the other monster's element,
    in random order.

    ## Episode End

    The episode terminates after any fight (won or lost). It is truncated after 100 steps.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None):
        low = np.full(OBS_DIM, -1.0)
        high = np.full(OBS_DIM, float(SIZE - 1))
        low[[AGENT_ROW, AGENT_COL, 3, 4, 6, 7]] = 0.0
        for code in (HELD, 5, 8, 11, 14, TARGET):
            low[code], high[code] = (0.0 if code == HELD else 1.0), 4.0
        self.observation_space = spaces.Box(low, high, dtype=np.float64)
        self.action_space = spaces.Discrete(N_ACTIONS)
        self.render_mode = render_mode
        self.s = 0
        self.lastaction: int | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        cells = rng.choice(_CELLS, size=5, replace=False)
        elements = rng.choice(np.arange(1, 5), size=2, replace=False)
        target = int(rng.integers(2))
        modifiers = [BEATEN_BY[int(e)] for e in elements]
        if rng.integers(2):
            modifiers.reverse()
        obs = np.zeros(OBS_DIM)
        positions = [(float(c // SIZE), float(c % SIZE)) for c in cells]
        obs[AGENT_ROW], obs[AGENT_COL] = positions[0]
        for k, m in enumerate(MONSTERS):
            obs[m], obs[m + 1] = positions[1 + k]
            obs[m + 2] = elements[k]
        for k, i in enumerate(ITEMS):
            obs[i], obs[i + 1] = positions[3 + k]
            obs[i + 2] = modifiers[k]
        obs[TARGET] = elements[target]
        self.s = encode_state(obs)
        self.lastaction = None
        return obs, {}

    def step(self, action):
        next_obs, reward, terminated = rtfm_step(decode_state(self.s), int(action))
        self.s = encode_state(next_obs)
        self.lastaction = int(action)
        return next_obs, reward, terminated, False, {}

    def load_observation(self, obs: np.ndarray) -> None:
        """Put the game into the state an observation describes (it determines the whole state)."""
        self.s = encode_state(obs)
        self.lastaction = None

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        obs = decode_state(self.s)
        grid = [["." for _ in range(SIZE)] for _ in range(SIZE)]
        for i in ITEMS:
            if obs[i] >= 0:
                grid[int(obs[i])][int(obs[i + 1])] = MODIFIERS[int(obs[i + 2])][0]
        for m in MONSTERS:
            mark = ELEMENTS[int(obs[m + 2])][0].upper()
            grid[int(obs[m])][int(obs[m + 1])] = mark
        grid[int(obs[AGENT_ROW])][int(obs[AGENT_COL])] = "@"
        held = MODIFIERS.get(int(obs[HELD]), "nothing")
        lines = ["".join(row) for row in grid]
        lines.append(f"holding {held}; target: the {ELEMENTS[int(obs[TARGET])]} monster")
        return "\n".join(lines) + "\n"


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="codeworld.envs._rtfm:RtfmEnv",
                 max_episode_steps=MAX_EPISODE_STEPS)

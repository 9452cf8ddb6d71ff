"""MCTS (UCT) for discrete actions: its config, with the CWMB paper's defaults, and its planner.

The search itself is the kernel in csrc/mcts.h (and its Numba twin and Python reference in
`codeworld.kernels._mcts`); this module turns it into an agent over a `ModelAccess`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from codeworld.planning.planners import ModelAccess
from codeworld.planning._support import SupportConfig


@dataclass(frozen=True)
class MctsConfig:
    """UCT for discrete actions (csrc/mcts.h); the defaults are the CWMB paper's (App. on planning).

    Attributes:
        num_simulations: simulations per real step (paper: 25).
        rollout_depth: the longest random rollout from a new leaf (paper: 100 steps).
        c_uct: exploration constant of UCT (paper: 1.0).
        gamma: discount factor (paper: 0.99).
        wave_size: simulations whose leaves are stepped in one batched model call, for compiled
            models and for the oracle. 1 is the paper's sequential UCT.
        python_wave_size: wave size for models on the batched Python path, which is called
            once per wave and rollout depth: larger waves mean fewer Python calls and a search
            further from sequential UCT (ours, not the paper's).
        support: where the model is trusted (`codeworld.planning._support.SupportConfig`; off by
            default; the oracle ignores it).
    """

    num_simulations: int = 25
    rollout_depth: int = 100
    c_uct: float = 1.0
    gamma: float = 0.99
    wave_size: int = 1
    python_wave_size: int = 8
    support: SupportConfig = SupportConfig()

    def __post_init__(self) -> None:
        if self.num_simulations < 1 or self.rollout_depth < 0:
            raise ValueError("num_simulations must be >= 1 and rollout_depth >= 0")
        if self.wave_size < 1 or self.python_wave_size < 1:
            raise ValueError("wave sizes must be >= 1")


class MctsPlanner:
    """UCT for a discrete action space of `n_actions` actions; one action per decision."""

    name = "mcts"

    def __init__(self, config: MctsConfig, n_actions: int, **_: Any):
        self.config = config
        self.n_actions = int(n_actions)
        self.model_steps = 0
        self.last_info: dict = {}

    def reset(self) -> None:
        """Start a new episode (UCT keeps nothing between decisions)."""

    def act(self, access: ModelAccess, state: np.ndarray, seed: int) -> list[int]:
        # The kernels import Numba: only when planning, not when the registry is read for a --help.
        from codeworld.kernels._mcts import mcts_plan, mcts_plan_batched, mcts_reference

        c = self.config
        if access.compiled is not None:
            action, visits, values, steps = mcts_plan(access.compiled, state, self.n_actions, c.num_simulations,
                                                      c.rollout_depth, c.wave_size, c.c_uct, c.gamma, seed)
        elif access.oracle:
            action, visits, values, steps = mcts_reference(
                access.step_batch, state, self.n_actions, c.num_simulations, c.rollout_depth,
                c.wave_size, c.c_uct, c.gamma, seed)
        else:
            action, visits, values, steps = mcts_plan_batched(
                access.step_batch, state, self.n_actions, c.num_simulations, c.rollout_depth,
                c.python_wave_size, c.c_uct, c.gamma, seed)
        self.model_steps += steps
        self.last_info = {"root_visits": np.asarray(visits).tolist(), "root_values": np.asarray(values).tolist()}
        return [int(action)]

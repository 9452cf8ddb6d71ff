"""Planners as agents: turn a state into the next actions, through whichever way reaches the model.

A model is reached in one of three ways, fastest first (DESIGN.md, Planning):

* compiled: a Numba-compiled ``step`` called through its C function pointer (`ModelAccess.compiled`,
  anything with ``address`` and ``cfunc``), no Python and no GIL in the loop;
* batched Python: ``step_batch(states, actions) -> (next_states, rewards, dones)`` called once per
  MCTS wave and rollout depth, or once per CEM iteration and time step;
* the oracle: the true simulator behind a batched step (`codeworld.planning.oracle`).

`PLANNERS` maps a planner name to its class; each has ``reset()`` (a new episode) and
``act(access, state, seed) -> list of actions`` (the actions to execute before asking again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from codeworld.kernels.cem import cem_plan, cem_plan_batched
from codeworld.kernels.mcts import mcts_plan, mcts_plan_batched, mcts_reference
from codeworld.planning.config import CemConfig, MctsConfig

BatchStep = Callable[[np.ndarray, np.ndarray], tuple]


@dataclass
class ModelAccess:
    """How a planner reaches a model: compiled (preferred) or a batched Python step.

    Attributes:
        compiled: an object with ``address`` (for C++) and ``cfunc`` (for Numba), or None.
        step_batch: a batched Python step, used when `compiled` is None.
        oracle: `step_batch` is the true simulator. MCTS then searches exactly as on a compiled
            model (the config's `wave_size`, not `python_wave_size`), so that oracle and CWM
            returns differ by the model only; the search runs in the Python reference, since each
            simulator step is a Python call anyway and C++ must not call back once per step.
    """

    compiled: Any = None
    step_batch: BatchStep | None = None
    oracle: bool = False

    def __post_init__(self) -> None:
        if self.compiled is None and self.step_batch is None:
            raise ValueError("ModelAccess needs a compiled model or a step_batch")

    @property
    def kind(self) -> str:
        return "compiled" if self.compiled is not None else "python"


def decision_seed(seed: int, episode: int, step: int) -> int:
    """The planner's seed for one decision: a fixed mix of the run seed, episode and step."""
    x = (int(seed) * 0x9E3779B1 + int(episode) * 0x85EBCA77 + int(step) * 0xC2B2AE3D) & ((1 << 64) - 1)
    return x ^ (x >> 29)


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


class CemPlanner:
    """CEM over action sequences in the box [low, high]; returns the part of the plan to execute."""

    name = "cem"

    def __init__(self, config: CemConfig, action_low, action_high, **_: Any):
        self.config = config
        self.low = np.asarray(action_low, dtype=np.float64).ravel()
        self.high = np.asarray(action_high, dtype=np.float64).ravel()
        if self.low.shape != self.high.shape or np.any(self.high < self.low):
            raise ValueError("CEM needs a valid action box (low <= high, same sizes)")
        self.model_steps = 0
        self.last_info: dict = {}
        self._mean: np.ndarray | None = None

    def _initial(self) -> tuple[np.ndarray, np.ndarray]:
        c = self.config
        centre = (self.low + self.high) / 2.0
        half = (self.high - self.low) / 2.0
        std = np.tile(half * c.init_std, (c.horizon, 1))
        mean = np.tile(centre, (c.horizon, 1))
        if c.warm_start and self._mean is not None:
            k = c.steps_per_plan
            mean[: c.horizon - k] = self._mean[k:]
        return mean, std

    def reset(self) -> None:
        """Start a new episode: forget the warm start."""
        self._mean = None

    def act(self, access: ModelAccess, state: np.ndarray, seed: int) -> list[np.ndarray]:
        c = self.config
        mean, std = self._initial()
        args = (state, self.low, self.high, mean, std, c.iterations, c.num_samples, c.num_elites, c.gamma, seed)
        if access.compiled is not None:
            plan, best, final_mean, _std, steps = cem_plan(access.compiled, *args, threads=c.threads)
        else:
            plan, best, final_mean, _std, steps = cem_plan_batched(access.step_batch, *args)
        self.model_steps += steps
        self._mean = np.asarray(final_mean)
        self.last_info = {"predicted_return": float(best)}
        return [np.asarray(row, dtype=np.float64).copy() for row in plan[: c.steps_per_plan]]


PLANNERS: dict[str, type] = {"mcts": MctsPlanner, "cem": CemPlanner}


def make_planner(config, spec) -> MctsPlanner | CemPlanner:
    """The planner for `config` (an `MctsConfig` or `CemConfig`) acting in the env `spec` describes."""
    from codeworld.planning.config import config_to_dict

    name = config_to_dict(config)["planner"]
    return PLANNERS[name](config, n_actions=spec.n_actions, action_low=spec.action_low,
                          action_high=spec.action_high)

"""The cross-entropy method for continuous actions: its config, with the CWMB paper's defaults,
and its planner.

The optimisation itself is the kernel in csrc/cem.h (and its Numba twin in
`codeworld.kernels._cem`); this module turns it into an agent over a `ModelAccess`, open loop as in
the paper or replanning every few steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from codeworld.planning.planners import ModelAccess
from codeworld.planning._support import SupportConfig


@dataclass(frozen=True)
class CemConfig:
    """The cross-entropy method for continuous actions (csrc/cem.h); the defaults are the CWMB
    paper's (App. on planning).

    The plan is the best sequence sampled in any iteration (the paper's code takes the best of
    the last iteration; on a deterministic model the best seen is never worse).

    Attributes:
        horizon: length of a planned action sequence (paper: 100).
        iterations: refits of the sampling distribution per plan (paper: 20).
        num_samples: sequences sampled per iteration (paper: 1000).
        num_elites: best sequences the distribution is refitted to (paper: 100).
        gamma: discount of rewards along a sequence (1.0: plain sum over the horizon).
        init_std: the initial standard deviation, as a fraction of the half-width of the action
            box; the mean starts at the box's centre. The paper's code starts from
            ``max(|low|, |high|) / 2``, which is 0.5 of the half-width for the CWMB boxes (all
            symmetric about 0).
        replan_every: real steps executed from one plan before planning again. None is the
            paper's open loop (the whole sequence is executed, then a new plan is made); 1 is
            receding-horizon control (MPC).
        warm_start: start a new plan's mean from the previous plan's mean, shifted by the steps
            executed (only matters when replanning).
        threads: threads rolling out the samples through a compiled model (0: every core this
            process may use). Plans do not depend on it, so cached baselines ignore it.
        support: where the model is trusted (`codeworld.planning._support.SupportConfig`; off by
            default; the oracle ignores it).
    """

    horizon: int = 100
    iterations: int = 20
    num_samples: int = 1000
    num_elites: int = 100
    gamma: float = 1.0
    init_std: float = 0.5
    replan_every: int | None = None
    warm_start: bool = True
    threads: int = 1
    support: SupportConfig = SupportConfig()

    def __post_init__(self) -> None:
        if self.threads < 0:
            raise ValueError("threads must be >= 0 (0: every core)")
        if min(self.horizon, self.iterations, self.num_samples, self.num_elites) < 1:
            raise ValueError("horizon, iterations, num_samples and num_elites must be >= 1")
        if self.num_elites > self.num_samples:
            raise ValueError("num_elites cannot exceed num_samples")
        if self.replan_every is not None and not 1 <= self.replan_every <= self.horizon:
            raise ValueError("replan_every must be between 1 and horizon (or None for open loop)")

    @property
    def steps_per_plan(self) -> int:
        """How many actions of each plan are executed."""
        return self.horizon if self.replan_every is None else self.replan_every


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
        # The kernels import Numba: only when planning, not when the registry is read for a --help.
        from codeworld.kernels._cem import cem_plan, cem_plan_batched

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

"""Type stub for the C++ extension codeworld._core (built from csrc/)."""

import numpy as np
import numpy.typing as npt

def step_batch(
    address: int,
    states: npt.NDArray[np.float64],
    actions: npt.NDArray[np.float64],
    stop_on_error: bool = True,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.uint8], npt.NDArray[np.int32], int]:
    """Step n transitions of a compiled model through its C address."""

def rollout_batch(
    address: int,
    start_states: npt.NDArray[np.float64],
    actions: npt.NDArray[np.float64],
    gamma: float = 1.0,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """Discounted returns of n open-loop action sequences (n, horizon, n_action)."""

def check_transitions(
    obs: npt.NDArray[np.float64],
    true_next: npt.NDArray[np.float64],
    pred_next: npt.NDArray[np.float64],
    true_reward: npt.NDArray[np.float64],
    pred_reward: npt.NDArray[np.float64],
    true_done: npt.NDArray[np.uint8],
    pred_done: npt.NDArray[np.uint8],
    state_atol: float,
    state_rtol: float,
    reward_atol: float,
    reward_rtol: float,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8], npt.NDArray[np.uint8], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Compare n predicted transitions with recorded ones (csrc/check.h).

    Returns (dims_ok, reward_ok, done_ok, sq_err_model, sq_err_still)."""

from typing import Callable

def mcts_plan(
    address: int,
    root_state: npt.NDArray[np.float64],
    n_actions: int,
    num_simulations: int,
    rollout_depth: int,
    wave_size: int,
    c_uct: float,
    gamma: float,
    seed: int,
) -> tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float64], int, int]:
    """UCT through a compiled model. Returns (action, root_visits, root_values, status, model_steps)."""

def mcts_plan_batched(
    step_batch: Callable[[npt.NDArray[np.float64], npt.NDArray[np.float64]], tuple],
    root_state: npt.NDArray[np.float64],
    n_actions: int,
    num_simulations: int,
    rollout_depth: int,
    wave_size: int,
    c_uct: float,
    gamma: float,
    seed: int,
) -> tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float64], int, int]:
    """UCT through a Python batch step called once per wave and rollout depth."""

def cem_plan(
    address: int,
    start_state: npt.NDArray[np.float64],
    low: npt.NDArray[np.float64],
    high: npt.NDArray[np.float64],
    init_mean: npt.NDArray[np.float64],
    init_std: npt.NDArray[np.float64],
    horizon: int,
    iterations: int,
    num_samples: int,
    num_elites: int,
    gamma: float,
    seed: int,
    threads: int = 1,
) -> tuple[npt.NDArray[np.float64], float, npt.NDArray[np.float64], npt.NDArray[np.float64], int, int]:
    """CEM through a compiled model, its rollouts on `threads` threads (the plan does not depend on
    the count). Returns (plan, best_return, mean, std, status, model_steps)."""

def cem_plan_batched(
    step_batch: Callable[[npt.NDArray[np.float64], npt.NDArray[np.float64]], tuple],
    start_state: npt.NDArray[np.float64],
    low: npt.NDArray[np.float64],
    high: npt.NDArray[np.float64],
    init_mean: npt.NDArray[np.float64],
    init_std: npt.NDArray[np.float64],
    horizon: int,
    iterations: int,
    num_samples: int,
    num_elites: int,
    gamma: float,
    seed: int,
) -> tuple[npt.NDArray[np.float64], float, npt.NDArray[np.float64], npt.NDArray[np.float64], int, int]:
    """CEM through a Python batch step called once per iteration and time step."""

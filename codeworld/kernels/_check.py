"""Batched transition checking: the Numba twin of csrc/check.h, its plain-Python reference, and
the dispatcher that picks the backend.

`check_transitions` compares predicted transitions with recorded ones and returns, per
transition, the number of next-state dimensions within tolerance, whether the reward and the
done flag match, and the squared state errors of the model and of the "state unchanged"
baseline. The scoring modes (codeworld/scoring/) build on these arrays.

The comparison is numpy.isclose's: ``|pred - true| <= atol + rtol * |true|``, NaN never matching.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from codeworld._backend import core, select


@dataclass(frozen=True)
class CheckArrays:
    """Per-transition comparison results (all of length n).

    Attributes:
        dims_ok: number of next-state dimensions within tolerance (int64).
        reward_ok: the reward is within tolerance (bool).
        done_ok: the done flag matches (bool).
        sq_err_model: sum over dimensions of (pred - true)^2.
        sq_err_still: sum over dimensions of (obs - true)^2, the error of predicting no change.
    """

    dims_ok: np.ndarray
    reward_ok: np.ndarray
    done_ok: np.ndarray
    sq_err_model: np.ndarray
    sq_err_still: np.ndarray


def values_close_reference(pred: float, truth: float, atol: float, rtol: float) -> bool:
    """The comparison rule, one pair of values (plain Python)."""
    if pred == truth:
        return True
    if not (math.isfinite(pred) and math.isfinite(truth)):
        return False
    return abs(pred - truth) <= atol + rtol * abs(truth)


def check_transitions_reference(obs, true_next, pred_next, true_reward, pred_reward, true_done,
                                pred_done, state_atol, state_rtol, reward_atol, reward_rtol) -> CheckArrays:
    """Slow reference of `check_transitions`: one Python loop over transitions and dimensions."""
    n, d = len(obs), len(obs[0]) if len(obs) else 0
    dims_ok = np.zeros(n, np.int64)
    reward_ok = np.zeros(n, bool)
    done_ok = np.zeros(n, bool)
    sq_model = np.zeros(n)
    sq_still = np.zeros(n)
    for i in range(n):
        count, err_model, err_still = 0, 0.0, 0.0
        for j in range(d):
            p, t, o = float(pred_next[i][j]), float(true_next[i][j]), float(obs[i][j])
            count += values_close_reference(p, t, state_atol, state_rtol)
            err_model += (p - t) ** 2
            err_still += (o - t) ** 2
        dims_ok[i] = count
        sq_model[i] = err_model
        sq_still[i] = err_still
        reward_ok[i] = values_close_reference(float(pred_reward[i]), float(true_reward[i]),
                                              reward_atol, reward_rtol)
        done_ok[i] = bool(pred_done[i]) == bool(true_done[i])
    return CheckArrays(dims_ok, reward_ok, done_ok, sq_model, sq_still)


def values_close(pred, truth, atol: float, rtol: float) -> np.ndarray:
    """The comparison rule on arrays, element by element (numpy; the rule of `_close`)."""
    pred, truth = np.asarray(pred, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.isfinite(pred) & np.isfinite(truth) & (np.abs(pred - truth) <= atol + rtol * np.abs(truth))
    return (pred == truth) | near


@numba.njit(cache=True, inline="always")
def _close(pred, truth, atol, rtol):
    if pred == truth:
        return True
    if not (np.isfinite(pred) and np.isfinite(truth)):
        return False
    return abs(pred - truth) <= atol + rtol * abs(truth)


@numba.njit(cache=True)
def _check_numba(obs, true_next, pred_next, true_reward, pred_reward, true_done, pred_done,
                 state_atol, state_rtol, reward_atol, reward_rtol,
                 dims_ok, reward_ok, done_ok, sq_model, sq_still):
    n, d = obs.shape
    for i in range(n):
        count = 0
        err_model = 0.0
        err_still = 0.0
        for j in range(d):
            p = pred_next[i, j]
            t = true_next[i, j]
            if _close(p, t, state_atol, state_rtol):
                count += 1
            em = p - t
            es = obs[i, j] - t
            err_model += em * em
            err_still += es * es
        dims_ok[i] = count
        sq_model[i] = err_model
        sq_still[i] = err_still
        reward_ok[i] = 1 if _close(pred_reward[i], true_reward[i], reward_atol, reward_rtol) else 0
        done_ok[i] = 1 if (pred_done[i] != 0) == (true_done[i] != 0) else 0


def _prepare(obs, true_next, pred_next, true_reward, pred_reward, true_done, pred_done):
    def states(x, name):
        x = np.ascontiguousarray(x, dtype=np.float64)
        return x.reshape(len(x), -1) if x.ndim != 2 else x

    obs = states(obs, "obs")
    true_next = states(true_next, "true_next")
    pred_next = states(pred_next, "pred_next")
    n, d = obs.shape
    if true_next.shape != (n, d) or pred_next.shape != (n, d):
        raise ValueError(f"check_transitions: obs {obs.shape}, true_next {true_next.shape} and "
                         f"pred_next {pred_next.shape} must have the same shape")
    vectors = [np.ascontiguousarray(true_reward, dtype=np.float64).reshape(-1),
               np.ascontiguousarray(pred_reward, dtype=np.float64).reshape(-1),
               np.ascontiguousarray(np.asarray(true_done).reshape(-1) != 0, dtype=np.uint8),
               np.ascontiguousarray(np.asarray(pred_done).reshape(-1) != 0, dtype=np.uint8)]
    for v in vectors:
        if len(v) != n:
            raise ValueError(f"check_transitions: rewards and dones must have {n} elements, got {len(v)}")
    return (obs, true_next, pred_next, *vectors)


def check_transitions(obs, true_next, pred_next, true_reward, pred_reward, true_done, pred_done,
                      state_atol: float, state_rtol: float, reward_atol: float,
                      reward_rtol: float) -> CheckArrays:
    """Compare n predicted transitions with recorded ones (C++ kernel, or Numba fallback).

    Args:
        obs, true_next, pred_next: (n, d) states before, recorded after, predicted after.
        true_reward, pred_reward: (n,) rewards.
        true_done, pred_done: (n,) done flags (any 0/1 or bool dtype).
        state_atol, state_rtol: per-dimension tolerance of the next state.
        reward_atol, reward_rtol: tolerance of the reward.
    """
    arrays = _prepare(obs, true_next, pred_next, true_reward, pred_reward, true_done, pred_done)
    tolerances = (float(state_atol), float(state_rtol), float(reward_atol), float(reward_rtol))
    return select(cpp=_check_cpp, numba=_check_with_numba)(arrays, tolerances)


def _check_cpp(arrays: tuple, tolerances: tuple) -> CheckArrays:
    dims_ok, reward_ok, done_ok, sq_model, sq_still = core().check_transitions(*arrays, *tolerances)
    return CheckArrays(dims_ok, reward_ok.astype(bool), done_ok.astype(bool), sq_model, sq_still)


def _check_with_numba(arrays: tuple, tolerances: tuple) -> CheckArrays:
    n = len(arrays[0])
    dims_ok = np.zeros(n, np.int64)
    reward_ok = np.zeros(n, np.uint8)
    done_ok = np.zeros(n, np.uint8)
    sq_model = np.zeros(n)
    sq_still = np.zeros(n)
    _check_numba(*arrays, *tolerances, dims_ok, reward_ok, done_ok, sq_model, sq_still)
    return CheckArrays(dims_ok, reward_ok.astype(bool), done_ok.astype(bool), sq_model, sq_still)

"""Batched stepping of a compiled model: the Numba twin of csrc/rollout.h, and its dispatcher.

A compiled model is reached through its C callback (see `codeworld._model.compile_step`): the C++
kernel takes its address, the Numba kernel a ctypes function pointer to the same callback, so both
backends run exactly the same model code.
"""

from __future__ import annotations

import numpy as np
import numba

from codeworld._backend import core, select


@numba.njit(cache=True)
def _step_batch_numba(fn, states, actions, next_states, rewards, dones, status, stop_on_error):
    n, n_state = states.shape
    n_action = actions.shape[1]
    for i in range(n):
        status[i] = fn(states[i].ctypes, n_state, actions[i].ctypes, n_action,
                       next_states[i].ctypes, rewards[i:].ctypes, dones[i:].ctypes)
        if status[i] != 0 and stop_on_error:
            return i
    return n


@numba.njit(cache=True)
def _rollout_batch_numba(fn, start_states, actions, gamma, returns, steps, status):
    n, n_state = start_states.shape
    horizon, n_action = actions.shape[1], actions.shape[2]
    cur = np.empty(n_state)
    nxt = np.empty(n_state)
    reward = np.zeros(1)
    done = np.zeros(1, np.uint8)
    for i in range(n):
        cur[:] = start_states[i]
        total = 0.0
        discount = 1.0
        st = 0
        t = 0
        while t < horizon:
            st = fn(cur.ctypes, n_state, actions[i, t].ctypes, n_action, nxt.ctypes,
                    reward.ctypes, done.ctypes)
            if st != 0:
                break
            total += discount * reward[0]
            discount *= gamma
            cur, nxt = nxt, cur
            t += 1
            if done[0] != 0:
                break
        returns[i] = total
        steps[i] = t
        status[i] = st


def _as_2d(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array, dtype=np.float64)
    return array.reshape(len(array), -1)


def step_batch(model, states: np.ndarray, actions: np.ndarray, stop_on_error: bool = True):
    """Step n transitions of a compiled model (inside the sandbox worker).

    Args:
        model: a `codeworld._model.LoadedModel` with ``compiled`` True.
        states: (n, n_state) array.
        actions: (n,) or (n, n_action) array; discrete actions as numbers.
        stop_on_error: stop at the first transition whose status is not 0.

    Returns:
        (next_states, rewards, dones as bool, status int32, number stepped). Status -1 marks a
        transition not stepped after an early stop.
    """
    states = _as_2d(states)
    actions = _as_2d(actions)
    if len(states) != len(actions):
        raise ValueError(f"states and actions differ in length ({len(states)} vs {len(actions)})")
    nxt, rew, done, status, stepped = select(cpp=_step_batch_cpp, numba=_step_batch_with_numba)(
        model, states, actions, stop_on_error)
    return nxt, rew, done.astype(bool), status, int(stepped)


def _step_batch_cpp(model, states, actions, stop_on_error):
    return core().step_batch(model.address, states, actions, stop_on_error)


def _step_batch_with_numba(model, states, actions, stop_on_error):
    n = len(states)
    nxt = np.zeros_like(states)
    rew = np.zeros(n)
    done = np.zeros(n, np.uint8)
    status = np.full(n, -1, np.int32)
    stepped = _step_batch_numba(model.cfunc, states, actions, nxt, rew, done, status, stop_on_error)
    return nxt, rew, done, status, stepped


def rollout_batch(model, start_states: np.ndarray, actions: np.ndarray, gamma: float = 1.0):
    """Discounted returns of n open-loop action sequences (n, horizon, n_action) from n starts.

    The speed step measures a compiled model's steps per second with it (`codeworld._speed`).
    """
    start_states = _as_2d(start_states)
    actions = np.ascontiguousarray(actions, dtype=np.float64)
    if actions.ndim == 2:
        actions = actions[:, :, None]
    if actions.ndim != 3 or len(actions) != len(start_states):
        raise ValueError("actions must be (n, horizon, n_action) with n matching start_states")
    return select(cpp=_rollout_batch_cpp, numba=_rollout_batch_with_numba)(
        model, start_states, actions, float(gamma))


def _rollout_batch_cpp(model, start_states, actions, gamma):
    return core().rollout_batch(model.address, start_states, actions, gamma)


def _rollout_batch_with_numba(model, start_states, actions, gamma):
    n = len(start_states)
    returns = np.zeros(n)
    steps = np.zeros(n, np.int64)
    status = np.zeros(n, np.int32)
    _rollout_batch_numba(model.cfunc, start_states, actions, gamma, returns, steps, status)
    return returns, steps, status


def rollout_batch_reference(step, start_states, actions, gamma: float = 1.0, discrete: bool = False):
    """Slow reference for `rollout_batch`, calling a Python ``step`` once per simulated step."""
    start_states = _as_2d(start_states)
    actions = np.asarray(actions, dtype=np.float64)
    if actions.ndim == 2:
        actions = actions[:, :, None]
    n, horizon = actions.shape[0], actions.shape[1]
    returns = np.zeros(n)
    steps = np.zeros(n, np.int64)
    for i in range(n):
        state = start_states[i].copy()
        total, discount = 0.0, 1.0
        t = 0
        while t < horizon:
            action = int(actions[i, t, 0]) if discrete else actions[i, t].copy()
            state, reward, done = step(state.copy(), action)
            state = np.asarray(state, dtype=np.float64)
            total += discount * float(reward)
            discount *= gamma
            t += 1
            if done:
                break
        returns[i] = total
        steps[i] = t
    return returns, steps

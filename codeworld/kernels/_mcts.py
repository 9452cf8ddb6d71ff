"""UCT for discrete actions: the Numba twin of csrc/mcts.h, the plain-Python reference, and dispatch.

All three implement the same algorithm, documented in csrc/mcts.h: simulations in waves of
`wave_size` leaves (1 = the paper's sequential UCT; a selection that only finds children pending
in the same wave rolls out once more from the least visited one), first-untried-action expansion, uniform random
rollouts drawn from one SplitMix64 generator in lockstep order, and the root action with the
highest mean value (ties to the lowest index). For the same seed, model and root state they pick
the same action.

A model is reached either compiled (`model.address` for C++, `model.cfunc` for Numba) or through a
Python ``step_batch(states, actions) -> (next_states, rewards, dones)`` called once per wave and
rollout depth. On the Numba backend the batched path runs the Python reference (Numba cannot call
back into Python cheaply); the model calls per plan are the same either way.
"""

from __future__ import annotations

import math
from typing import Callable

import numba
import numpy as np

from codeworld._backend import core, select
from codeworld.kernels._plan_rng import SplitMix64, rng_integer, seed_state

NO_NODE = -1
_EXPAND, _TERMINAL, _PENDING = 0, 1, 2

BatchStep = Callable[[np.ndarray, np.ndarray], tuple]


class PlanningModelError(RuntimeError):
    """The model failed during planning (a non-ok status from the compiled callback).

    Attributes:
        status: the model's step status (see `codeworld._model.STEP_STATUS_MESSAGES`).
    """

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@numba.njit(cache=True)
def _mcts_numba(fn, root_state, n_actions, num_simulations, rollout_depth, wave_size, c_uct, gamma,
                rng, root_visits, root_values):
    A = n_actions
    n_state = root_state.shape[0]
    capacity = 1 + num_simulations
    parent = np.full(capacity, -1, np.int64)
    action = np.zeros(capacity, np.int64)
    children = np.full(capacity * A, -1, np.int64)
    visits = np.zeros(capacity, np.int64)
    value_sum = np.zeros(capacity)
    reward = np.zeros(capacity)
    states = np.zeros((capacity, n_state))
    terminal = np.zeros(capacity, np.uint8)
    evaluated = np.zeros(capacity, np.uint8)
    states[0, :] = root_state
    evaluated[0] = 1
    n_nodes = 1
    wave = max(wave_size, 1)
    leaf = np.zeros(wave, np.int64)
    leaf_kind = np.zeros(wave, np.int64)
    roll_states = np.zeros((wave, n_state))
    nxt = np.zeros(n_state)
    act = np.zeros(1)
    rew = np.zeros(1)
    done = np.zeros(1, np.uint8)
    rollout_return = np.zeros(wave)
    discount = np.zeros(wave)
    alive = np.zeros(wave, np.uint8)
    steps = 0

    sims = 0
    while sims < num_simulations:
        k = min(wave, num_simulations - sims)
        for j in range(k):
            node = 0
            visits[0] += 1
            while True:
                if terminal[node]:
                    leaf[j] = node
                    leaf_kind[j] = 1
                    break
                untried = -1
                for a in range(A):
                    if children[node * A + a] == -1:
                        untried = a
                        break
                if untried >= 0:
                    c = n_nodes
                    n_nodes += 1
                    parent[c] = node
                    action[c] = untried
                    children[node * A + untried] = c
                    visits[c] = 1
                    leaf[j] = c
                    leaf_kind[j] = 0
                    break
                best = -1
                best_score = -np.inf
                log_n = math.log(float(visits[node]))
                for a in range(A):
                    c = children[node * A + a]
                    if evaluated[c] == 0:
                        continue
                    n = float(visits[c])
                    score = value_sum[c] / n + c_uct * math.sqrt(log_n / n)
                    if score > best_score:
                        best_score = score
                        best = c
                if best == -1:
                    fewest = np.iinfo(np.int64).max
                    for a in range(A):
                        c = children[node * A + a]
                        if visits[c] < fewest:
                            fewest = visits[c]
                            best = c
                    visits[best] += 1
                    leaf[j] = best
                    leaf_kind[j] = 2
                    break
                node = best
                visits[node] += 1
        sims += k

        for j in range(k):
            if leaf_kind[j] != 0:
                continue
            c = leaf[j]
            act[0] = float(action[c])
            st = fn(states[parent[c]].ctypes, n_state, act.ctypes, 1, states[c].ctypes, rew.ctypes,
                    done.ctypes)
            steps += 1
            if st != 0:
                return 0, st, steps
            reward[c] = rew[0]
            terminal[c] = 1 if done[0] != 0 else 0
            evaluated[c] = 1

        for j in range(k):
            rollout_return[j] = 0.0
            discount[j] = 1.0
            alive[j] = 1 if (leaf_kind[j] != 1 and terminal[leaf[j]] == 0) else 0
            if alive[j]:
                roll_states[j, :] = states[leaf[j]]
        for depth in range(rollout_depth):
            any_alive = False
            for j in range(k):
                if alive[j] == 0:
                    continue
                any_alive = True
                act[0] = float(rng_integer(rng, A))
                st = fn(roll_states[j].ctypes, n_state, act.ctypes, 1, nxt.ctypes, rew.ctypes,
                        done.ctypes)
                steps += 1
                if st != 0:
                    return 0, st, steps
                rollout_return[j] += discount[j] * rew[0]
                discount[j] *= gamma
                if done[0] != 0:
                    alive[j] = 0
                roll_states[j, :] = nxt
            if not any_alive:
                break

        for j in range(k):
            g = 0.0 if leaf_kind[j] == 1 else rollout_return[j]
            node = leaf[j]
            while node != 0:
                g = reward[node] + gamma * g
                value_sum[node] += g
                node = parent[node]
            value_sum[0] += g

    best_action = 0
    best_value = -np.inf
    for a in range(A):
        c = children[a]
        root_visits[a] = 0
        root_values[a] = 0.0
        if c == -1 or evaluated[c] == 0 or visits[c] == 0:
            continue
        root_visits[a] = visits[c]
        root_values[a] = value_sum[c] / float(visits[c])
        if root_values[a] > best_value:
            best_value = root_values[a]
            best_action = a
    return best_action, 0, steps


def mcts_reference(step_batch: BatchStep, root_state: np.ndarray, n_actions: int, num_simulations: int,
                   rollout_depth: int, wave_size: int, c_uct: float, gamma: float, seed: int):
    """Slow plain-Python UCT, line for line csrc/mcts.h, stepping through ``step_batch``.

    Returns:
        (action, root_visits, root_values, model_steps).
    """
    A = n_actions
    root_state = np.asarray(root_state, dtype=np.float64).ravel()
    parent, action, children = [NO_NODE], [0], [[NO_NODE] * A]
    visits, value_sum, reward = [0], [0.0], [0.0]
    states, terminal, evaluated = [root_state.copy()], [False], [True]
    rng = SplitMix64(seed)
    wave = max(int(wave_size), 1)
    steps = 0

    def batch(sts, acts):
        nonlocal steps
        steps += len(sts)
        nxt, rew, dn = step_batch(np.array(sts, dtype=np.float64).reshape(len(sts), -1),
                                  np.array(acts, dtype=np.float64).reshape(len(acts), 1))
        return np.asarray(nxt, dtype=np.float64).reshape(len(sts), -1), np.asarray(rew, dtype=np.float64), np.asarray(dn)

    sims = 0
    while sims < num_simulations:
        k = min(wave, num_simulations - sims)
        leaves = []
        for _ in range(k):
            node = 0
            visits[0] += 1
            while True:
                if terminal[node]:
                    leaves.append((node, _TERMINAL))
                    break
                untried = next((a for a in range(A) if children[node][a] == NO_NODE), -1)
                if untried >= 0:
                    c = len(parent)
                    parent.append(node)
                    action.append(untried)
                    children.append([NO_NODE] * A)
                    visits.append(1)
                    value_sum.append(0.0)
                    reward.append(0.0)
                    states.append(None)
                    terminal.append(False)
                    evaluated.append(False)
                    children[node][untried] = c
                    leaves.append((c, _EXPAND))
                    break
                best, best_score = NO_NODE, -math.inf
                log_n = math.log(float(visits[node]))
                for a in range(A):
                    c = children[node][a]
                    if not evaluated[c]:
                        continue
                    n = float(visits[c])
                    score = value_sum[c] / n + c_uct * math.sqrt(log_n / n)
                    if score > best_score:
                        best, best_score = c, score
                if best == NO_NODE:  # every child waits for this wave: one more rollout from one
                    best = min(children[node], key=lambda c: visits[c])  # first of the least visited
                    visits[best] += 1
                    leaves.append((best, _PENDING))
                    break
                node = best
                visits[node] += 1
        sims += k

        expand = [c for c, kind in leaves if kind == _EXPAND]
        if expand:
            nxt, rew, dn = batch([states[parent[c]] for c in expand], [action[c] for c in expand])
            for b, c in enumerate(expand):
                states[c] = nxt[b].copy()
                reward[c] = float(rew[b])
                terminal[c] = bool(dn[b])
                evaluated[c] = True

        ret = [0.0] * k
        disc = [1.0] * k
        alive = [kind != _TERMINAL and not terminal[c] for c, kind in leaves]
        cur = [states[c] if alive[j] else None for j, (c, _) in enumerate(leaves)]
        for _ in range(rollout_depth):
            live = [j for j in range(k) if alive[j]]
            if not live:
                break
            acts = [rng.integer(A) for _ in live]
            nxt, rew, dn = batch([cur[j] for j in live], acts)
            for b, j in enumerate(live):
                ret[j] += disc[j] * float(rew[b])
                disc[j] *= gamma
                if dn[b]:
                    alive[j] = False
                cur[j] = nxt[b].copy()

        for j, (node, kind) in enumerate(leaves):
            g = 0.0 if kind == _TERMINAL else ret[j]
            while node != 0:
                g = reward[node] + gamma * g
                value_sum[node] += g
                node = parent[node]
            value_sum[0] += g

    root_visits = np.zeros(A, np.int64)
    root_values = np.zeros(A)
    best_action, best_value = 0, -math.inf
    for a in range(A):
        c = children[0][a]
        if c == NO_NODE or not evaluated[c] or visits[c] == 0:
            continue
        root_visits[a] = visits[c]
        root_values[a] = value_sum[c] / float(visits[c])
        if root_values[a] > best_value:
            best_action, best_value = a, root_values[a]
    return best_action, root_visits, root_values, steps


def _check_status(status: int, where: str) -> None:
    if status != 0:
        from codeworld._model import STEP_STATUS_MESSAGES

        raise PlanningModelError(int(status), f"{where}: the model failed during planning "
                                 f"({STEP_STATUS_MESSAGES.get(int(status), f'status {status}')})")


def mcts_plan(model, root_state: np.ndarray, n_actions: int, num_simulations: int, rollout_depth: int,
              wave_size: int, c_uct: float, gamma: float, seed: int):
    """Plan one action through a compiled model (``model.address`` / ``model.cfunc``).

    Returns:
        (action, root_visits, root_values, model_steps).

    Raises:
        PlanningModelError: the compiled model returned a non-ok status.
    """
    root_state = np.ascontiguousarray(root_state, dtype=np.float64).ravel()
    seed = int(seed) & ((1 << 64) - 1)
    action, visits, values, status, steps = select(cpp=_mcts_cpp, numba=_mcts_with_numba)(
        model, root_state, int(n_actions), int(num_simulations), int(rollout_depth), int(wave_size),
        float(c_uct), float(gamma), seed)
    _check_status(status, "mcts")
    return int(action), visits, values, int(steps)


def _mcts_cpp(model, root_state, n_actions, num_simulations, rollout_depth, wave_size, c_uct, gamma, seed):
    return core().mcts_plan(model.address, root_state, n_actions, num_simulations, rollout_depth,
                            wave_size, c_uct, gamma, seed)


def _mcts_with_numba(model, root_state, n_actions, num_simulations, rollout_depth, wave_size, c_uct,
                     gamma, seed):
    visits = np.zeros(n_actions, np.int64)
    values = np.zeros(n_actions)
    action, status, steps = _mcts_numba(model.cfunc, root_state, n_actions, num_simulations,
                                        rollout_depth, wave_size, c_uct, gamma, seed_state(seed),
                                        visits, values)
    return action, visits, values, status, steps


def mcts_plan_batched(step_batch: BatchStep, root_state: np.ndarray, n_actions: int, num_simulations: int,
                      rollout_depth: int, wave_size: int, c_uct: float, gamma: float, seed: int):
    """Plan one action through a Python batch step, called once per wave and rollout depth.

    Returns:
        (action, root_visits, root_values, model_steps). Exceptions of ``step_batch`` propagate.
    """
    root_state = np.ascontiguousarray(root_state, dtype=np.float64).ravel()
    seed = int(seed) & ((1 << 64) - 1)
    return select(cpp=_mcts_batched_cpp, numba=mcts_reference)(
        step_batch, root_state, n_actions, num_simulations, rollout_depth, wave_size, c_uct, gamma, seed)


def _mcts_batched_cpp(step_batch: BatchStep, root_state, n_actions, num_simulations, rollout_depth,
                      wave_size, c_uct, gamma, seed):
    action, visits, values, status, steps = core().mcts_plan_batched(
        step_batch, root_state, int(n_actions), int(num_simulations), int(rollout_depth),
        int(wave_size), float(c_uct), float(gamma), seed)
    _check_status(status, "mcts")
    return int(action), visits, values, int(steps)

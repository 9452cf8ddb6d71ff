"""The cross-entropy method for continuous actions: Numba twin of csrc/cem.h, reference, dispatch.

All three implement the algorithm documented in csrc/cem.h: each iteration samples sequences
(sample, time, dimension order) from one SplitMix64 generator, clips them to the box, scores them
by discounted return under the model, and refits mean and std to the elites (a stable sort, so ties
go to the lower sample index); the plan is the best sequence seen. For the same seed, model and
start state they return the same plan.

A model is reached compiled (`model.address` / `model.cfunc`) or through a Python
``step_batch(states, actions) -> (next_states, rewards, dones)`` called once per iteration and time
step with every live sample. On the Numba backend the batched path runs the Python reference.
"""

from __future__ import annotations

import math
import os

import numba
import numpy as np

from codeworld._backend import core, select
from codeworld.kernels._plan_rng import SplitMix64, rng_normal_pair, seed_state
from codeworld.kernels._mcts import BatchStep, _check_status


@numba.njit(cache=True)
def _rollout_block(fn, start_state, samples, gamma, begin, end, returns):
    """Roll out samples [begin, end); returns (first failing sample or end, its status, steps)."""
    n_state = start_state.shape[0]
    horizon, n_action = samples.shape[1], samples.shape[2]
    cur = np.zeros(n_state)
    nxt = np.zeros(n_state)
    rew = np.zeros(1)
    done = np.zeros(1, np.uint8)
    steps = 0
    for s in range(begin, end):
        cur[:] = start_state
        total = 0.0
        discount = 1.0
        for t in range(horizon):
            st = fn(cur.ctypes, n_state, samples[s, t].ctypes, n_action, nxt.ctypes, rew.ctypes, done.ctypes)
            steps += 1
            if st != 0:
                return s, st, steps
            total += discount * rew[0]
            discount *= gamma
            cur, nxt = nxt, cur
            if done[0] != 0:
                break
        returns[s] = total
    return end, 0, steps


@numba.njit(cache=True, parallel=True)
def _rollouts_parallel(fn, start_state, samples, gamma, returns, threads):
    """`_rollout_block` over `threads` contiguous blocks of samples, one per Numba thread."""
    n = samples.shape[0]
    fails = np.full(threads, n, np.int64)
    statuses = np.zeros(threads, np.int32)
    steps = np.zeros(threads, np.int64)
    for k in numba.prange(threads):
        f, st, c = _rollout_block(fn, start_state, samples, gamma, n * k // threads, n * (k + 1) // threads,
                                  returns)
        fails[k] = f
        statuses[k] = st
        steps[k] = c
    failed, status = n, 0
    for k in range(threads):  # the first failing sample, as one thread would find it
        if fails[k] < failed:
            failed, status = fails[k], statuses[k]
    return status, steps.sum()


@numba.njit(cache=True)
def _cem_numba(fn, start_state, low, high, init_mean, init_std, iterations, num_samples, num_elites, gamma,
               rng, plan, mean, threads):
    horizon, n_action = init_mean.shape
    K = min(num_elites, num_samples)
    samples = np.zeros((num_samples, horizon, n_action))
    returns = np.zeros(num_samples)
    std = init_std.copy()
    mean[:, :] = init_mean
    best_return = -np.inf
    steps = 0
    threads = max(1, min(threads, num_samples))
    for _ in range(iterations):
        seq = horizon * n_action
        for s in range(num_samples):
            for i in range(0, seq, 2):  # normals in pairs over the flat (time, dimension) index
                z0, z1 = rng_normal_pair(rng)
                t, d = i // n_action, i % n_action
                samples[s, t, d] = min(max(mean[t, d] + std[t, d] * z0, low[d]), high[d])
                if i + 1 < seq:
                    t, d = (i + 1) // n_action, (i + 1) % n_action
                    samples[s, t, d] = min(max(mean[t, d] + std[t, d] * z1, low[d]), high[d])
        if threads > 1:
            st, c = _rollouts_parallel(fn, start_state, samples, gamma, returns, threads)
        else:
            _failed, st, c = _rollout_block(fn, start_state, samples, gamma, 0, num_samples, returns)
        steps += c
        if st != 0:
            return best_return, std, st, steps
        order = np.argsort(-returns, kind="mergesort")
        if returns[order[0]] > best_return:
            best_return = returns[order[0]]
            plan[:, :] = samples[order[0]]
        for t in range(horizon):
            for d in range(n_action):
                m = 0.0
                for e in range(K):
                    m += samples[order[e], t, d]
                m /= K
                v = 0.0
                for e in range(K):
                    diff = samples[order[e], t, d] - m
                    v += diff * diff
                mean[t, d] = m
                std[t, d] = math.sqrt(v / K)
    return best_return, std, 0, steps


def cem_reference(step_batch: BatchStep, start_state, low, high, init_mean, init_std, iterations: int,
                  num_samples: int, num_elites: int, gamma: float, seed: int):
    """Slow plain-Python CEM following csrc/cem.h, stepping all live samples per ``step_batch`` call.

    Returns:
        (plan (horizon, n_action), best_return, mean, std, model_steps).
    """
    start_state = np.asarray(start_state, dtype=np.float64).ravel()
    low = [float(x) for x in np.ravel(low)]
    high = [float(x) for x in np.ravel(high)]
    mean = np.array(init_mean, dtype=np.float64)
    std = np.array(init_std, dtype=np.float64)
    horizon, n_action = mean.shape
    K = min(num_elites, num_samples)
    rng = SplitMix64(seed)
    best_return = -math.inf
    plan = np.zeros((horizon, n_action))
    steps = 0
    for _ in range(iterations):
        samples = np.zeros((num_samples, horizon, n_action))
        seq = horizon * n_action
        for s in range(num_samples):
            for i in range(0, seq, 2):
                pair = rng.normal_pair()
                for j, z in zip((i, i + 1), pair):
                    if j < seq:
                        t, d = divmod(j, n_action)
                        v = float(mean[t, d]) + float(std[t, d]) * z
                        samples[s, t, d] = min(max(v, low[d]), high[d])
        returns = [0.0] * num_samples
        discount = [1.0] * num_samples
        alive = [True] * num_samples
        cur = [start_state.copy() for _ in range(num_samples)]
        for t in range(horizon):
            live = [s for s in range(num_samples) if alive[s]]
            if not live:
                break
            steps += len(live)
            nxt, rew, dn = step_batch(np.array([cur[s] for s in live]), samples[live, t, :].copy())
            nxt = np.asarray(nxt, dtype=np.float64).reshape(len(live), -1)
            for b, s in enumerate(live):
                returns[s] += discount[s] * float(rew[b])
                discount[s] *= gamma
                if dn[b]:
                    alive[s] = False
                cur[s] = nxt[b].copy()
        order = sorted(range(num_samples), key=lambda s: -returns[s])  # stable: ties keep index order
        if returns[order[0]] > best_return:
            best_return = returns[order[0]]
            plan = samples[order[0]].copy()
        for t in range(horizon):
            for d in range(n_action):
                m = 0.0
                for e in range(K):
                    m += float(samples[order[e], t, d])
                m /= K
                v = 0.0
                for e in range(K):
                    diff = float(samples[order[e], t, d]) - m
                    v += diff * diff
                mean[t, d] = m
                std[t, d] = math.sqrt(v / K)
    return plan, best_return, mean, std, steps


def resolve_threads(threads: int) -> int:
    """A planner's thread count: `threads` itself, or every core this process may use for 0."""
    threads = int(threads)
    if threads < 0:
        raise ValueError(f"threads must be >= 0 (0: all cores), got {threads}")
    if threads == 0:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:
            return max(1, os.cpu_count() or 1)
    return threads


def _prepare(start_state, low, high, init_mean, init_std):
    start_state = np.ascontiguousarray(start_state, dtype=np.float64).ravel()
    low = np.ascontiguousarray(low, dtype=np.float64).ravel()
    high = np.ascontiguousarray(high, dtype=np.float64).ravel()
    init_mean = np.ascontiguousarray(init_mean, dtype=np.float64)
    init_std = np.ascontiguousarray(init_std, dtype=np.float64)
    if init_mean.ndim != 2 or init_mean.shape != init_std.shape or init_mean.shape[1] != low.size:
        raise ValueError(f"init_mean and init_std must both be (horizon, {low.size}); "
                         f"got {init_mean.shape} and {init_std.shape}")
    return start_state, low, high, init_mean, init_std


def cem_plan(model, start_state, low, high, init_mean, init_std, iterations: int, num_samples: int,
             num_elites: int, gamma: float, seed: int, threads: int = 1):
    """Plan an action sequence through a compiled model (``model.address`` / ``model.cfunc``).

    Args:
        model: a compiled `LoadedModel` (or anything with ``address`` and ``cfunc``).
        start_state: the state to plan from.
        low, high: the action box (n_action each).
        init_mean, init_std: the sampling distribution to start from, (horizon, n_action) each.
        iterations, num_samples, num_elites: CEM's budget.
        gamma: discount of rewards along a sequence.
        seed: the generator's seed.
        threads: threads rolling out the samples of an iteration (0: every core this process may
            use). The plan does not depend on it: the samples are drawn before the rollouts.

    Returns:
        (plan (horizon, n_action), best_return, mean, std, model_steps).

    Raises:
        PlanningModelError: the compiled model returned a non-ok status.
    """
    start_state, low, high, init_mean, init_std = _prepare(start_state, low, high, init_mean, init_std)
    seed = int(seed) & ((1 << 64) - 1)
    threads = resolve_threads(threads)
    plan, best, mean, std, status, steps = select(cpp=_cem_cpp, numba=_cem_with_numba)(
        model, start_state, low, high, init_mean, init_std, int(iterations), int(num_samples),
        int(num_elites), float(gamma), seed, threads)
    _check_status(status, "cem")
    return plan, float(best), mean, std, int(steps)


def _cem_cpp(model, start_state, low, high, init_mean, init_std, iterations, num_samples, num_elites,
             gamma, seed, threads):
    return core().cem_plan(model.address, start_state, low, high, init_mean, init_std,
                           init_mean.shape[0], iterations, num_samples, num_elites, gamma, seed, threads)


def _cem_with_numba(model, start_state, low, high, init_mean, init_std, iterations, num_samples,
                    num_elites, gamma, seed, threads):
    plan = np.zeros_like(init_mean)
    mean = np.zeros_like(init_mean)
    if threads > 1:
        threads = min(threads, numba.config.NUMBA_NUM_THREADS)
        numba.set_num_threads(threads)
    best, std, status, steps = _cem_numba(model.cfunc, start_state, low, high, init_mean, init_std,
                                          iterations, num_samples, num_elites, gamma, seed_state(seed),
                                          plan, mean, threads)
    return plan, best, mean, std, status, steps


def cem_plan_batched(step_batch: BatchStep, start_state, low, high, init_mean, init_std, iterations: int,
                     num_samples: int, num_elites: int, gamma: float, seed: int):
    """Plan an action sequence through a Python batch step (one call per iteration and time step).

    Returns:
        (plan, best_return, mean, std, model_steps). Exceptions of ``step_batch`` propagate.
    """
    start_state, low, high, init_mean, init_std = _prepare(start_state, low, high, init_mean, init_std)
    seed = int(seed) & ((1 << 64) - 1)
    return select(cpp=_cem_batched_cpp, numba=cem_reference)(
        step_batch, start_state, low, high, init_mean, init_std, iterations, num_samples, num_elites,
        gamma, seed)


def _cem_batched_cpp(step_batch: BatchStep, start_state, low, high, init_mean, init_std, iterations,
                     num_samples, num_elites, gamma, seed):
    plan, best, mean, std, status, steps = core().cem_plan_batched(
        step_batch, start_state, low, high, init_mean, init_std, init_mean.shape[0], int(iterations),
        int(num_samples), int(num_elites), float(gamma), seed)
    _check_status(status, "cem")
    return plan, float(best), mean, std, int(steps)

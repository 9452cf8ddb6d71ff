"""MCTS kernels: C++ and Numba agree with the plain-Python reference, and the search finds good actions.

The models here are the tests' own trusted code, compiled in-process with the loader's compiler.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codeworld.kernels._mcts import PlanningModelError, mcts_plan, mcts_plan_batched, mcts_reference
from codeworld._model import load_model

CARTPOLE = (Path(__file__).parent / "models" / "cartpole_functional.py").read_text()

# A corridor of 10 cells: action 0 left, 1 stay, 2 right; reward 1 on reaching cell 9 (terminal).
CORRIDOR = """
import numpy as np

def step(state, action):
    x = state[0] + (action - 1)
    x = min(max(x, 0.0), 9.0)
    done = x >= 9.0
    return np.array([x]), 1.0 if done else 0.0, done
"""

NAN_AFTER_THREE = """
import numpy as np

def step(state, action):
    x = state[0] + 1.0
    if x > 3.0:
        return np.array([np.nan]), 0.0, False
    return np.array([x]), 0.0, False
"""


def _batch(model):
    def step_batch(states, actions):
        out = [model.step(s.copy(), int(a[0])) for s, a in zip(states, actions)]
        return (np.array([o[0] for o in out], dtype=float), np.array([o[1] for o in out], dtype=float),
                np.array([o[2] for o in out], dtype=bool))
    return step_batch


@pytest.fixture(scope="module")
def cartpole():
    model = load_model(CARTPOLE, discrete=True)
    assert model.compiled, model.compile_error
    return model


@pytest.fixture(scope="module")
def corridor():
    model = load_model(CORRIDOR, discrete=True)
    assert model.compiled, model.compile_error
    return model


@pytest.mark.parametrize("wave_size", [1, 3, 8])
def test_compiled_planner_matches_the_reference(kernel_backend, cartpole, wave_size):
    rng = np.random.default_rng(wave_size)
    for seed in range(4):
        root = rng.uniform(-0.05, 0.05, 4)
        got = mcts_plan(cartpole, root, 2, 25, 40, wave_size, 1.0, 0.99, seed)
        want = mcts_reference(_batch(cartpole), root, 2, 25, 40, wave_size, 1.0, 0.99, seed)
        assert got[0] == want[0]
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[2], want[2])  # bit for bit: same arithmetic, same order
        assert got[3] == want[3]


def test_batched_python_path_matches_the_compiled_path(kernel_backend, cartpole):
    root = np.array([0.02, -0.1, 0.03, 0.2])
    calls = []
    inner = _batch(cartpole)

    def counting(states, actions):
        calls.append(len(states))
        return inner(states, actions)

    compiled = mcts_plan(cartpole, root, 2, 16, 30, 4, 1.0, 0.99, 11)
    batched = mcts_plan_batched(counting, root, 2, 16, 30, 4, 1.0, 0.99, 11)
    assert compiled[0] == batched[0]
    np.testing.assert_array_equal(compiled[2], batched[2])
    # One Python call per wave expansion and rollout depth, never one per simulated step.
    assert len(calls) < sum(calls) / 2
    assert max(calls) > 1


def test_seeds_change_rollouts_but_not_the_algorithm(kernel_backend, cartpole):
    root = np.zeros(4)
    a = mcts_plan(cartpole, root, 2, 25, 50, 1, 1.0, 0.99, 1)
    b = mcts_plan(cartpole, root, 2, 25, 50, 1, 1.0, 0.99, 1)
    c = mcts_plan(cartpole, root, 2, 25, 50, 1, 1.0, 0.99, 2)
    np.testing.assert_array_equal(a[2], b[2])
    assert not np.array_equal(a[2], c[2])
    assert a[1].sum() == 25  # every simulation visits a root child


@pytest.mark.parametrize("start", [5.0, 7.0, 8.0])
def test_search_moves_towards_the_reward(kernel_backend, corridor, start):
    action, visits, values, _ = mcts_plan(corridor, np.array([start]), 3, 200, 20, 1, 1.0, 0.95, 0)
    assert action == 2, (visits, values)


def test_a_model_failing_mid_plan_is_reported(kernel_backend):
    model = load_model(NAN_AFTER_THREE, discrete=True)
    assert model.compiled
    with pytest.raises(PlanningModelError, match="NaN") as info:
        mcts_plan(model, np.zeros(1), 2, 5, 10, 1, 1.0, 0.99, 0)
    assert info.value.status == 2


def test_an_exception_in_the_batched_step_propagates(kernel_backend):
    def broken(states, actions):
        raise ZeroDivisionError("model bug")

    with pytest.raises(ZeroDivisionError, match="model bug"):
        mcts_plan_batched(broken, np.zeros(4), 2, 5, 10, 2, 1.0, 0.99, 0)

"""Batched stepping and rollouts of a compiled model: C++ and Numba against the Python reference.

The models here are the tests' own, trusted: the rollout kernels are run on them in this process.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codeworld import ModelWorker
from codeworld._backend import backend
from codeworld.kernels._rollout import rollout_batch, rollout_batch_reference
from codeworld._model import load_model

MODELS = Path(__file__).parent / "models"
CARTPOLE = (MODELS / "cartpole_functional.py").read_text()

PENDULUM = (MODELS / "pendulum_functional.py").read_text()


def _rollouts(source: str, discrete: bool, starts, actions, gamma):
    model = load_model(source, discrete=discrete)
    assert model.compiled, model.compile_error
    returns, steps, status = rollout_batch(model, starts, actions, gamma)
    ref_returns, ref_steps = rollout_batch_reference(model.step, starts, actions, gamma, discrete=discrete)
    return {"backend": backend(), "returns": returns, "steps": steps, "status": status,
            "ref_returns": ref_returns, "ref_steps": ref_steps}


def test_cartpole_rollouts_match_the_reference(kernel_backend):
    rng = np.random.default_rng(1)
    starts = rng.uniform(-0.05, 0.05, size=(64, 4))
    actions = rng.integers(0, 2, size=(64, 80)).astype(np.float64)
    out = _rollouts(CARTPOLE, True, starts, actions, 0.99)
    assert out["backend"] == kernel_backend
    np.testing.assert_allclose(out["returns"], out["ref_returns"], rtol=1e-12)
    np.testing.assert_array_equal(out["steps"], out["ref_steps"])
    assert np.all(out["status"] == 0)
    # Random actions topple the pole well before 80 steps: episodes end at `done`.
    assert out["steps"].min() < 80


def test_pendulum_rollouts_match_the_reference(kernel_backend):
    rng = np.random.default_rng(2)
    theta = rng.uniform(-np.pi, np.pi, size=32)
    starts = np.stack([np.cos(theta), np.sin(theta), rng.uniform(-1, 1, size=32)], axis=1)
    actions = rng.uniform(-2, 2, size=(32, 50, 1))
    out = _rollouts(PENDULUM, False, starts, actions, 1.0)
    np.testing.assert_allclose(out["returns"], out["ref_returns"], rtol=1e-10)
    np.testing.assert_array_equal(out["steps"], 50)


def test_step_batch_backends_agree_with_python_path(kernel_backend):
    rng = np.random.default_rng(3)
    states = rng.normal(scale=0.1, size=(500, 4))
    actions = rng.integers(0, 2, size=500).astype(np.float64)
    with ModelWorker(CARTPOLE, discrete=True) as compiled, \
            ModelWorker(CARTPOLE, discrete=True, compile=False) as python_path:
        fast = compiled.predict(states, actions)
        slow = python_path.predict(states, actions)
    assert fast.info["compiled"] and not slow.info["compiled"]
    np.testing.assert_allclose(fast.next_states, slow.next_states, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(fast.dones, slow.dones)

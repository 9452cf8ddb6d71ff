"""The world-model loader: accepted forms, clear errors, Numba compilation and the C address."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from codeworld import ModelSourceError, ModelWorker, check_model_source

MODELS = Path(__file__).parent / "models"
FUNCTIONAL = (MODELS / "cartpole_functional.py").read_text()
CLASS_FORM = (MODELS / "cartpole_class.py").read_text()


def _cartpole_transitions(n_episodes: int = 5, seed: int = 0):
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(seed)
    states, actions, next_states, rewards, dones = [], [], [], [], []
    for episode in range(n_episodes):
        obs, _ = env.reset(seed=seed + episode)
        done = False
        while not done:
            action = int(rng.integers(2))
            # The unwrapped float64 state, not the float32 observation, so predictions can match exactly.
            state = np.array(env.unwrapped.state, dtype=np.float64)
            obs, reward, terminated, truncated, _ = env.step(action)
            states.append(state)
            actions.append(action)
            next_states.append(np.array(env.unwrapped.state, dtype=np.float64))
            rewards.append(reward)
            dones.append(terminated)
            done = terminated or truncated
    env.close()
    return (np.array(states), np.array(actions, dtype=np.float64), np.array(next_states),
            np.array(rewards), np.array(dones))


def test_static_check_recognises_both_forms():
    assert check_model_source(FUNCTIONAL).form == "functional"
    assert check_model_source(CLASS_FORM).form == "class"


@pytest.mark.parametrize(
    "source, fragment, line",
    [
        ("import numpy as np\n\ndef step(state, action)\n    return state, 0.0, False\n", "syntax error", 3),
        ("def predict(state, action):\n    return state, 0.0, False\n", "no world model found", None),
        ("def step(state):\n    return state, 0.0, False\n", "step must take (state, action)", 1),
        ("def step(a, b, c):\n    return a, 0.0, False\n", "step must take (state, action)", 1),
        ("class Environment:\n    def step(self, action):\n        return 0\n", "missing: set_state", 1),
        ("class Environment:\n    def __init__(self, size):\n        pass\n"
         "    def set_state(self, s):\n        pass\n    def step(self, a):\n        pass\n",
         "__init__ must be callable without arguments", 2),
    ],
)
def test_static_check_explains_what_is_wrong(source, fragment, line):
    with pytest.raises(ModelSourceError) as info:
        check_model_source(source)
    assert fragment in str(info.value)
    assert info.value.line == line


def test_step_with_defaults_is_accepted():
    assert check_model_source("def step(state, action, dt=0.02):\n    return state, 0.0, False\n").form == "functional"


def test_worker_refuses_bad_source_before_starting():
    with pytest.raises(ModelSourceError):
        ModelWorker("def step(:\n", discrete=True)


def test_functional_and_class_forms_agree_with_gymnasium(kernel_backend):
    states, actions, next_states, rewards, dones = _cartpole_transitions()
    with ModelWorker(FUNCTIONAL, discrete=True) as functional, \
            ModelWorker(CLASS_FORM, discrete=True) as class_form:
        loaded = functional.load()
        assert loaded.ok, loaded.message
        assert loaded.value["compiled"], loaded.value["compile_error"]
        assert class_form.load().value["compiled"] is False
        pred_f = functional.predict(states, actions)
        pred_c = class_form.predict(states, actions)
    assert pred_f.ok and pred_c.ok
    assert pred_f.n_predicted == pred_c.n_predicted == len(states)
    np.testing.assert_allclose(pred_f.next_states, pred_c.next_states, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(pred_f.dones, pred_c.dones)
    np.testing.assert_array_equal(pred_f.rewards, pred_c.rewards)
    # And both are the real dynamics.
    np.testing.assert_allclose(pred_f.next_states, next_states, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(pred_f.dones, dones)


def test_compiled_address_is_callable_from_the_extension():
    """The callback's C address, stepped by the C++ extension (the test's own trusted model,
    loaded in this process), predicts as the Python path in a worker."""
    from codeworld._backend import core
    from codeworld._model import load_model

    states, actions, *_ = _cartpole_transitions(n_episodes=1)
    model = load_model(FUNCTIONAL, discrete=True)
    assert model.compiled, model.compile_error
    nxt, _, done, status, stepped = core().step_batch(
        model.address, np.asarray(states[3:4], dtype=np.float64),
        np.asarray(actions[3:4], dtype=np.float64).reshape(1, -1), True)
    assert stepped == 1 and status[0] == 0
    with ModelWorker(FUNCTIONAL, discrete=True, compile=False) as python_path:
        reference = python_path.predict(states[3:4], actions[3:4])
    np.testing.assert_allclose(nxt[0], reference.next_states[0], rtol=1e-12)
    assert bool(done[0]) == bool(reference.dones[0])


def test_uncompilable_model_records_why_and_runs_in_python():
    source = (
        "import numpy as np\n"
        "class Counter:\n"  # an arbitrary Python class: Numba's nopython mode cannot type it
        "    hits = 1\n"
        "def step(state, action):\n"
        "    counter = Counter()\n"
        "    return np.asarray(state) + 1.0, float(counter.hits), False\n"
    )
    with ModelWorker(source, discrete=True) as worker:
        loaded = worker.load()
        assert loaded.ok
        assert loaded.value["compiled"] is False
        assert loaded.value["compile_error"]
        pred = worker.predict(np.zeros((3, 2)), np.zeros(3))
    assert pred.ok
    np.testing.assert_array_equal(pred.next_states, np.ones((3, 2)))


def test_continuous_actions_reach_the_model_as_arrays(kernel_backend):
    source = (
        "import numpy as np\n"
        "def step(state, action):\n"
        "    return state + action.sum(), float(action[0]), False\n"
    )
    states = np.arange(6.0).reshape(3, 2)
    actions = np.array([[1.0, 2.0], [0.5, 0.5], [-1.0, 0.0]])
    with ModelWorker(source, discrete=False) as worker:
        assert worker.load().value["compiled"]
        pred = worker.predict(states, actions)
    assert pred.ok
    np.testing.assert_allclose(pred.next_states, states + actions.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(pred.rewards, actions[:, 0])


def test_a_model_mutating_its_input_does_not_corrupt_the_batch(kernel_backend):
    source = (
        "def step(state, action):\n"
        "    state[0] = 99.0\n"
        "    return state, 0.0, False\n"
    )
    states = np.zeros((4, 2))
    with ModelWorker(source, discrete=True) as worker:
        pred = worker.predict(states, np.zeros(4))
    assert pred.ok
    np.testing.assert_array_equal(pred.next_states[:, 0], 99.0)
    np.testing.assert_array_equal(states, 0.0)


def test_a_model_mutating_and_returning_its_continuous_action_is_stepped_right(kernel_backend):
    """The compiled callback hands the model a copy of the action in its own stack frame: the
    model may write to it and even return it as the next state (copied out before the frame ends)."""
    source = (
        "def step(state, action):\n"
        "    action[0] = action[0] * 2.0 + state[0]\n"
        "    return action, float(action[1]), False\n"
    )
    states = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    actions = np.array([[0.5, -1.0], [1.5, 4.0], [2.5, 7.0]])
    kept = actions.copy()
    with ModelWorker(source, discrete=False) as worker:
        assert worker.load().value["compiled"]
        pred = worker.predict(states, actions)
    assert pred.ok
    np.testing.assert_array_equal(pred.next_states[:, 0], kept[:, 0] * 2.0 + states[:, 0])
    np.testing.assert_array_equal(pred.next_states[:, 1], kept[:, 1])
    np.testing.assert_array_equal(pred.rewards, kept[:, 1])
    np.testing.assert_array_equal(actions, kept)


@pytest.mark.parametrize("body", [
    "return state[::-1], 0.0, False",            # a reversed view of the input
    "state[0] += 1.0\n    return state, 0.0, False",  # the mutated input itself
    "return state[1:], 0.0, False",              # an overlapping view of the wrong size
    "out = state.reshape(2, 2)\n    return out.T, 0.0, False",  # 2-D, flattened
])
def test_compiled_and_python_paths_agree_when_the_model_returns_views_of_its_input(kernel_backend, body):
    source = f"import numpy as np\ndef step(state, action):\n    {body}\n"
    states = np.arange(12.0).reshape(3, 4)
    with ModelWorker(source, discrete=True) as compiled, \
            ModelWorker(source, discrete=True, compile=False) as python_path:
        assert compiled.load().value["compiled"]
        fast = compiled.predict(states, np.zeros(3))
        slow = python_path.predict(states, np.zeros(3))
    assert fast.result.status == slow.result.status
    np.testing.assert_array_equal(fast.next_states[:fast.n_predicted], slow.next_states[:slow.n_predicted])
    np.testing.assert_array_equal(states, np.arange(12.0).reshape(3, 4))


def test_step_status_codes_agree_with_the_c_abi():
    import re

    from codeworld import _model as cwm

    header = (Path(__file__).resolve().parents[1] / "csrc" / "model_abi.h").read_text()
    enum = header[header.index("enum StepStatus"):header.index("};", header.index("enum StepStatus"))]
    codes = {name: int(value) for name, value in re.findall(r"kStep(\w+) = (\d+)", enum)}
    python = {name: value for name, value in vars(cwm).items()
              if name.startswith("STEP_") and isinstance(value, int)}
    assert len(codes) == len(python) == len(cwm.STEP_STATUS_MESSAGES)
    for name, value in codes.items():
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper().replace("NON_FINITE", "NONFINITE")
        assert python[f"STEP_{snake}"] == value, name

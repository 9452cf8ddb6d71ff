"""The planner setting that keeps plans where the model is right (the training data's support)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from codeworld.cli import main
from codeworld._model_worker import ModelWorker
from codeworld.planning import CemConfig, MctsConfig
from codeworld.planning._ops import plan_act, plan_reset
from codeworld.planning.registry import config_from_dict, config_to_dict, make_config
from codeworld.planning._support import Support, SupportConfig

MODELS = Path(__file__).parent / "models"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))

# A line world built here: the position moves by 0.4 times the action, and the true reward is
# highest at 0.5. The recorded data covers positions -1 to 1; the learned model is right up to
# 1.3 and, beyond, promises a reward the real world never pays.
STEP = 0.4
GOAL = 0.5
WRONG_OUTSIDE = '''
import numpy as np


def step(state, action):
    x = state[0] + 0.4 * action[0]
    reward = 5.0 if x > 1.3 else -abs(x - 0.5)
    return np.array([x]), reward, False
'''


def _true_step(x: float, a: float) -> tuple[float, float]:
    x = x + STEP * float(np.clip(a, -1.0, 1.0))
    return x, -abs(x - GOAL)


def _recorded_support(config: SupportConfig) -> Support:
    xs = np.linspace(-1.0, 1.0, 41)[:, None]
    return Support.fit(config, xs, -np.abs(xs[:, 0] - GOAL))


def _play(support: SupportConfig, compile_: bool, steps: int = 12) -> tuple[float, list[float]]:
    """The true return of CEM planning with the wrong model, and the positions visited."""
    config = config_to_dict(make_config("cem", horizon=12, iterations=6, num_samples=200, num_elites=20,
                                        init_std=1.0, support=support))
    extra = {"support": _recorded_support(support).to_dict()} if support.on else {}
    x, total, visited = 0.0, 0.0, []
    with ModelWorker(WRONG_OUTSIDE, discrete=False, compile=compile_) as worker:
        reset = worker.call(plan_reset, config=config, action_low=[-1.0], action_high=[1.0], **extra)
        assert reset.ok and reset.value["access"] == ("compiled" if compile_ else "python"), reset.summary()
        queue: list = []
        for t in range(steps):
            if not queue:
                reply = worker.call(plan_act, state=np.array([x]), seed=t)
                assert reply.ok, reply.summary()
                queue = list(reply.value["actions"])
            x, reward = _true_step(x, queue.pop(0)[0])
            total += reward
            visited.append(x)
    return total, visited


@pytest.mark.parametrize("compile_", [True, False], ids=["compiled", "python"])
def test_with_the_support_the_plan_stays_inside_the_data_and_earns_more(compile_):
    without, went = _play(SupportConfig(), compile_)
    assert max(went) > 1.3  # the planner chases the reward the model invents outside the data
    inside, stayed = _play(SupportConfig(mode="range", margin=0.1), compile_)
    assert max(stayed) <= 1.2 + 1e-9  # the recorded range widened by a tenth of it
    assert inside > without + 3.0
    assert abs(stayed[-1] - GOAL) <= 2 * STEP


def test_the_nearest_state_test_agrees_with_brute_force():
    rng = np.random.default_rng(0)
    recorded = rng.normal(size=(800, 3)) * [1.0, 5.0, 0.1]
    support = Support.fit(SupportConfig(mode="nearest", margin=0.05), recorded, rng.normal(size=800))
    queries = rng.normal(size=(400, 3)) * [1.5, 7.0, 0.15]
    lo, spread = recorded.min(axis=0), np.ptp(recorded, axis=0)
    # the root-mean-square distance per component, each scaled by its recorded range
    nearest = np.sqrt((((queries[:, None] - recorded[None]) / spread) ** 2).mean(-1)).min(axis=1)
    off_box = np.any((queries < lo - 0.05 * spread) | (queries > lo + 1.05 * spread), axis=1)
    expected = off_box | (nearest > 0.05)
    assert 0.2 < expected.mean() < 0.9  # both answers occur
    np.testing.assert_array_equal(support.outside(queries), expected)


def test_the_outside_reward_is_below_every_recorded_one():
    support = Support.fit(SupportConfig(mode="range", penalty=0.5), np.zeros((3, 2)), np.array([-2.0, 0.0, 2.0]))
    assert support.outside_reward == pytest.approx(-4.0)  # lowest, minus half the rewards' range
    assert list(support.outside(np.array([[0.0, 0.0], [0.0, 1.5]]))) == [False, True]


def test_the_setting_is_off_by_default_and_travels_with_the_planner_config():
    assert not CemConfig().support.on and not MctsConfig().support.on
    config = make_config("mcts", support={"mode": "nearest", "margin": 0.2})
    assert config.support == SupportConfig(mode="nearest", margin=0.2)
    assert config_from_dict(json.loads(json.dumps(config_to_dict(config)))) == config
    with pytest.raises(ValueError, match="support mode"):
        SupportConfig(mode="sometimes")


def test_plan_records_the_support_setting_and_refuses_a_bad_one(capsys):
    model = str(MODELS / "cartpole_functional.py")
    small = ["--episodes", "1", "--max-steps", "8", "--set", "num_simulations=4", "--set", "rollout_depth=5"]
    status = main(["plan", "CartPole-v1", model, *small, "--set", "support.mode=nearest", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert status == 0 and record["model"]["status"] == "ok"
    assert record["config"]["support"] == {"mode": "nearest", "margin": 0.1, "penalty": 1.0, "cutoff": False}
    status = main(["plan", "CartPole-v1", model, *small, "--set", "support.mode=sometimes"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and "support mode" in err


def test_the_wrapped_compiled_model_steps_as_the_wrapped_python_path():
    """The C callback around a compiled model and the batched Python path agree step by step."""
    from codeworld.kernels._rollout import step_batch
    from codeworld._model import load_model
    from codeworld.planning._ops import python_step_batch
    from codeworld.planning.planners import ModelAccess
    from codeworld.planning._support import wrap_access

    model = load_model(WRONG_OUTSIDE, discrete=False)
    support = _recorded_support(SupportConfig(mode="nearest", margin=0.01, cutoff=True))
    access = wrap_access(ModelAccess(compiled=model, step_batch=python_step_batch(model)), support)
    rng = np.random.default_rng(1)
    states, actions = rng.uniform(-2.0, 2.0, (300, 1)), rng.uniform(-1.0, 1.0, (300, 1))
    nxt, rewards, dones, status, stepped = step_batch(access.compiled, states, actions)
    expected = access.step_batch(states, actions)
    assert stepped == 300 and not status.any()
    np.testing.assert_array_equal(nxt, expected[0])
    np.testing.assert_array_equal(rewards, expected[1])
    np.testing.assert_array_equal(dones, expected[2].astype(bool))
    assert 0.2 < dones.mean() < 0.8  # between recorded positions and beyond them, outside; near one, inside
    assert np.all(rewards[dones] == support.outside_reward)

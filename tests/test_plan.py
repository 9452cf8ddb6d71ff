"""Planning on the real environments: the CLI, evaluation by normalized return, the oracle, the sandbox.

Budgets are reduced from the paper's (fewer simulations, shorter horizons) to keep the suite fast;
with a model that is the true dynamics the CWM planner must still match the oracle.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from codeworld.cli import main
from codeworld.envs import make_env
from codeworld.envs.registry import encode_action
from codeworld.planning import CemConfig, MctsConfig, evaluate, make_config, normalized_return
from codeworld.planning.evaluate import UNLIMITED_ENV_MAX_STEPS
from codeworld.planning._oracle import OracleModel
from codeworld.planning._ops import plan_act, plan_reset
from codeworld.planning.registry import config_from_dict, config_to_dict
from codeworld._model_worker import ModelWorker

MODELS = Path(__file__).parent / "models"
CARTPOLE = (MODELS / "cartpole_functional.py").read_text()

PENDULUM = (MODELS / "pendulum_functional.py").read_text()

# The paper's class form keeps state between calls: this one hangs from its 51st step on.
HANGS_AFTER_50 = '''
import numpy as np


class Environment:
    calls = 0

    def set_state(self, state):
        self.state = np.array(state, dtype=float)

    def step(self, action):
        Environment.calls += 1
        if Environment.calls > 50:
            while True:
                pass
        return self.state, 1.0, False
'''

RAISES_OFF_CENTRE = '''
import numpy as np


def step(state, action):
    if abs(state[0]) > 0.03:
        raise ValueError("left the centre")
    return state + 0.01, 1.0, False
'''

SMALL_MCTS = ["--set", "num_simulations=8", "--set", "rollout_depth=15"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))


def test_configs_default_to_the_paper_values():
    mcts, cem = MctsConfig(), CemConfig()
    assert (mcts.num_simulations, mcts.rollout_depth, mcts.c_uct, mcts.gamma, mcts.wave_size) == (25, 100, 1.0, 0.99, 1)
    assert (cem.horizon, cem.iterations, cem.num_samples, cem.num_elites) == (100, 20, 1000, 100)
    assert cem.replan_every is None and cem.steps_per_plan == 100  # the paper's open loop
    assert config_from_dict(config_to_dict(make_config("cem", replan_every=1))) == CemConfig(replan_every=1)
    with pytest.raises(TypeError, match="num_sims"):
        make_config("mcts", num_sims=3)
    with pytest.raises(ValueError):
        CemConfig(num_elites=20, num_samples=10)


def test_normalized_return_is_undefined_when_oracle_and_random_tie():
    assert normalized_return(150.0, 50.0, 250.0) == pytest.approx(0.5)
    assert normalized_return(-200.0, -200.0, -200.0) is None
    assert normalized_return(10.0, 5.0, None) is None


def test_a_benchmark_does_not_plan_with_the_model_where_oracle_and_random_tie():
    # five steps of a swing-up: neither the oracle nor random play reaches the goal, so the
    # model's return could not be normalized; a model that would fail is never run
    broken = "def step(state, action):\n    raise RuntimeError('planned with')\n"
    small = make_config("mcts", num_simulations=2, rollout_depth=3)
    result = evaluate("Acrobot-v1", broken, small, episodes=1, max_steps=5,
                      skip_model_on_tie=True)
    assert result.references_tie and result.model is None
    assert result.to_dict()["normalized_note"] == "undefined: the oracle and the random policy tie"
    planned = evaluate("Acrobot-v1", broken, small, episodes=1, max_steps=5)
    assert planned.model is not None and not planned.model.ok  # a user's `plan` still runs it


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "Taxi-v4", "HalfCheetah-v4"])
def test_oracle_restores_the_simulator_exactly(env_id):
    oracle = OracleModel(env_id)
    env = make_env(env_id)
    env.reset(seed=5)
    env.action_space.seed(5)
    try:
        for _ in range(5):
            state = oracle.state_of(env)
            action = env.action_space.sample()
            nxt, rew, done = oracle.step_batch(state[None, :], encode_action(env_id, action)[None, :])
            # Stepping elsewhere in between must not leak into the next restore.
            oracle.step_batch(oracle.state_of(env)[None, :] * 0.5, encode_action(env_id, action)[None, :])
            _, reward, terminated, _, _ = env.step(action)
            np.testing.assert_array_equal(nxt[0], oracle.state_of(env))
            assert rew[0] == reward and bool(done[0]) == terminated
    finally:
        env.close()
        oracle.close()


def test_plan_cartpole_with_a_correct_model_reaches_the_oracle(tmp_path, capsys):
    model = tmp_path / "cartpole.py"
    model.write_text(CARTPOLE)
    status = main(["plan", "CartPole-v1", str(model), "--episodes", "5", "--json", *SMALL_MCTS])
    record = json.loads(capsys.readouterr().out)
    assert status == 0
    assert record["episodes"] == 5
    assert record["normalized_return"] >= 0.8
    assert record["return_model"] > record["return_random"]
    for key in ("return_model", "return_random", "return_oracle"):
        assert isinstance(record[key], float)
    assert record["model"]["model_steps"] > record["model"]["lengths"][0] * 8  # many rollouts per real step

    # The baselines are cached per env, config and seed: asking again reads them back.
    status = main(["plan", "CartPole-v1", "--oracle-only", "--episodes", "5", "--json", *SMALL_MCTS])
    again = json.loads(capsys.readouterr().out)
    assert status == 0 and again["oracle"]["cached"]
    assert again["return_oracle"] == record["return_oracle"] and again["return_model"] is None


def test_a_model_that_hangs_mid_plan_times_out_and_the_cli_exits_cleanly(tmp_path, capsys):
    model = tmp_path / "hangs.py"
    model.write_text(HANGS_AFTER_50)
    status = main(["plan", "CartPole-v1", str(model), "--episodes", "1", "--timeout", "2", *SMALL_MCTS])
    out, err = capsys.readouterr()
    assert status == 1
    assert "timeout" in err and "episode 0, step 0" in err
    assert "Traceback" not in out + err
    assert "normalized return: the model's run ended early (timeout)" in out


def test_cem_with_the_true_pendulum_dynamics_reaches_the_oracle():
    config = make_config("cem", horizon=20, iterations=4, num_samples=60, num_elites=8, replan_every=10)
    result = evaluate("Pendulum-v1", PENDULUM, config, episodes=2, seed=0, max_steps=100)
    assert result.model.ok, result.model.message
    assert result.normalized_return >= 0.8
    assert result.to_dict()["return_oracle"] > result.to_dict()["return_random"]


def test_compiled_and_python_paths_in_the_worker_plan_alike(kernel_backend):
    """The same decisions whether the worker reaches the model compiled or through Python."""
    config = config_to_dict(make_config("mcts", num_simulations=12, rollout_depth=20, python_wave_size=1))
    states = [np.array([0.01, 0.0, 0.02, -0.1]), np.array([0.0, 0.3, -0.05, 0.4])]
    chosen = {}
    for compile_ in (True, False):
        with ModelWorker(CARTPOLE, discrete=True, compile=compile_) as worker:
            reset = worker.call(plan_reset, config=config, n_actions=2)
            assert reset.ok and reset.value["access"] == ("compiled" if compile_ else "python")
            replies = [worker.call(plan_act, state=s, seed=3) for s in states]
            assert all(r.ok for r in replies), [r.summary() for r in replies]
            chosen[compile_] = [r.value for r in replies]
    assert chosen[True] == chosen[False]  # same actions, visits, values and model steps


def test_a_model_raising_mid_plan_reports_its_line():
    with ModelWorker(RAISES_OFF_CENTRE, discrete=True) as worker:
        config = config_to_dict(make_config("mcts", num_simulations=5, rollout_depth=10))
        assert worker.call(plan_reset, config=config, n_actions=2).ok
        result = worker.call(plan_act, state=np.zeros(4), seed=0)
    assert result.status == "exception"
    assert "left the centre" in result.message and result.line == 7


def test_blackjack_has_no_oracle_and_its_normalized_return_is_undefined(tmp_path, capsys):
    status = main(["plan", "Blackjack-v1", "--oracle-only", "--episodes", "1"])
    out = capsys.readouterr().out
    assert status == 0
    assert "unavailable: Blackjack has no oracle" in out


def test_receding_horizon_cem_executes_part_of_each_plan_and_warm_starts():
    from codeworld._model import load_model
    from codeworld.planning import CemPlanner, ModelAccess

    model = load_model(PENDULUM, discrete=False)
    config = make_config("cem", horizon=10, iterations=2, num_samples=30, num_elites=5, replan_every=3)
    planner = CemPlanner(config, action_low=[-2.0], action_high=[2.0])
    actions = planner.act(ModelAccess(compiled=model), np.array([-1.0, 0.0, 0.0]), seed=1)
    assert len(actions) == 3 and all(-2.0 <= a[0] <= 2.0 for a in actions)
    shifted, _ = planner._initial()
    np.testing.assert_array_equal(shifted[:7], planner._mean[3:])  # the warm start
    np.testing.assert_array_equal(shifted[7:], 0.0)
    planner.reset()
    assert np.all(planner._initial()[0] == 0.0)
    open_loop = CemPlanner(make_config("cem", horizon=10, iterations=1, num_samples=10, num_elites=2),
                           action_low=[-2.0], action_high=[2.0])
    assert len(open_loop.act(ModelAccess(compiled=model), np.array([-1.0, 0.0, 0.0]), seed=1)) == 10


@pytest.mark.parametrize("backend_name", ["cpp", "numba"])
def test_cem_on_two_threads_in_the_worker_plans_as_on_one(backend_name, monkeypatch):
    """Threads are allowed by the worker's seccomp filter, and the plan does not depend on them."""
    monkeypatch.setenv("CODEWORLD_BACKEND", backend_name)
    plans = {}
    for threads in (1, 2):
        config = config_to_dict(make_config("cem", horizon=15, iterations=3, num_samples=40, num_elites=5,
                                            threads=threads))
        with ModelWorker(PENDULUM, discrete=False) as worker:
            reset = worker.call(plan_reset, config=config, action_low=[-2.0],
                                action_high=[2.0])
            assert reset.ok and reset.value["access"] == "compiled", reset.summary()
            reply = worker.call(plan_act, state=np.array([1.0, 0.0, 0.5]), seed=4)
            assert reply.ok, reply.summary()
            plans[threads] = reply.value
    assert plans[1] == plans[2]


def test_cached_oracle_results_ignore_the_thread_count(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path))
    small = {"horizon": 4, "iterations": 1, "num_samples": 6, "num_elites": 2}
    first = evaluate("Pendulum-v1", None, make_config("cem", **small), episodes=1, seed=0, max_steps=3,
                     policies=("oracle",))
    again = evaluate("Pendulum-v1", None, make_config("cem", threads=2, **small), episodes=1, seed=0,
                     max_steps=3, policies=("oracle",))
    other = evaluate("Pendulum-v1", None, make_config("cem", **{**small, "num_samples": 7}), episodes=1,
                     seed=0, max_steps=3, policies=("oracle",))
    assert not first.oracle.cached and again.oracle.cached and not other.oracle.cached
    assert again.oracle.returns == first.oracle.returns


def test_an_oracle_run_stopped_mid_way_starts_again_after_its_last_finished_episode(tmp_path):
    # a paper-protocol oracle runs for hours: a stop (a crash, a session's end) loses at most the
    # episode it was in, and the result is the one an unbroken run gives
    small = {"horizon": 4, "iterations": 1, "num_samples": 6, "num_elites": 2}
    config = make_config("cem", **small)
    whole = evaluate("Pendulum-v1", None, config, episodes=4, seed=3, max_steps=5,
                     policies=("random", "oracle"), use_cache=False)

    class Stop(Exception):
        pass

    def stop_in_third(policy, episode, step):
        if episode == 2 and step == 3:
            raise Stop

    kept = tmp_path / "episodes"  # a folder that travels with a repository, not the cache
    for policy in ("random", "oracle"):
        with pytest.raises(Stop):
            evaluate("Pendulum-v1", None, config, episodes=4, seed=3, max_steps=5,
                     policies=(policy,), use_cache=False, resume=True, progress=stop_in_third, keep_dir=kept)
    assert sorted(p.name.split("-")[2] for p in kept.glob("*.partial.json")) == ["oracle", "random"]
    seen = []
    again = evaluate("Pendulum-v1", None, config, episodes=4, seed=3, max_steps=5,
                     policies=("random", "oracle"), use_cache=False, resume=True, keep_dir=kept,
                     progress=lambda policy, episode, step: seen.append((policy, episode)))
    assert not list(kept.glob("*.partial.json"))
    assert sorted(set(seen)) == [(p, e) for p in ("oracle", "random") for e in (2, 3)]
    assert again.random.returns == whole.random.returns
    assert again.oracle.returns == whole.oracle.returns
    assert again.oracle.lengths == whole.oracle.lengths == [5] * 4
    assert again.oracle.model_steps == whole.oracle.model_steps
    # finished: nothing kept, and without resume a run starts from the first episode
    seen.clear()
    evaluate("Pendulum-v1", None, config, episodes=4, seed=3, max_steps=5, policies=("oracle",),
             use_cache=False, resume=True, progress=lambda policy, episode, step: seen.append(episode))
    assert sorted(set(seen)) == [0, 1, 2, 3]


def test_a_negative_thread_count_is_a_config_error():
    with pytest.raises(ValueError, match="threads"):
        make_config("cem", threads=-1)


def test_a_program_without_a_step_ends_the_model_run_with_a_record_not_an_exception():
    result = evaluate("CartPole-v1", "import numpy as np\nx = np.zeros(4)\n", make_config("mcts"), episodes=1,
                      seed=0, max_steps=5, policies=("model",))
    assert result.model.status == "exception"
    assert "not a world model" in result.model.message and "def step" in result.model.message
    assert result.model.returns == []


def test_an_env_without_a_time_limit_cuts_planning_episodes_at_the_default_cap():
    # CliffWalking never truncates; a model that predicts no movement keeps the agent at the start.
    stays = "import numpy as np\n\ndef step(state, action):\n    return state, -1.0, False\n"
    config = make_config("mcts", num_simulations=4, rollout_depth=3)
    result = evaluate("CliffWalking-v0", stays, config, episodes=1, seed=0, policies=("model",))
    assert result.max_steps == UNLIMITED_ENV_MAX_STEPS
    assert result.model.lengths == [UNLIMITED_ENV_MAX_STEPS]

"""Training a policy inside a code world model (`codeworld train`), and the vector env it trains in."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from codeworld.cli import main
from codeworld.planning import CodeWorldEnv, CodeWorldVectorEnv

MODELS = Path(__file__).parent / "models"
CARTPOLE = (MODELS / "cartpole_functional.py").read_text()
PENDULUM = (MODELS / "pendulum_functional.py").read_text()

# True CartPole physics that raises once the pole leans past 0.1 rad: during training, not at load.
RAISING_CARTPOLE = CARTPOLE.replace(
    "    done = x < -X_LIMIT",
    "    if abs(theta) > 0.1:\n        raise ValueError('pole too far')\n    done = x < -X_LIMIT")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# -- the vector env --------------------------------------------------------------------------------


def test_a_batch_step_equals_n_single_steps_and_ended_copies_restart_next_step():
    n = 5
    start = np.tile([0.01, -0.02, 0.03, 0.01], (n, 1)) * np.arange(1, n + 1)[:, None]
    start[3] = [0.0, 0.0, 0.2, 2.0]  # falls at once
    actions = np.array([[0, 1, 1, 0, 1], [1, 1, 0, 0, 1], [0, 0, 1, 1, 0]])
    vec = CodeWorldVectorEnv("CartPole-v1", CARTPOLE, n)
    single = CodeWorldEnv("CartPole-v1", CARTPOLE)
    try:
        vec.reset(seed=3, options={"states": start})
        obs, rewards, terminated, truncated, _ = vec.step(actions[0])
        for i in range(n):
            single.reset(options={"state": start[i]})
            o, r, term, trunc, _ = single.step(int(actions[0][i]))
            np.testing.assert_array_equal(obs[i], o)
            assert rewards[i] == r and terminated[i] == term and truncated[i] == trunc
        assert terminated[3] and not terminated[[0, 1, 2, 4]].any()
        before = vec.states.copy()
        obs, rewards, terminated, truncated, _ = vec.step(actions[1])
        assert rewards[3] == 0.0 and not terminated[3] and not truncated[3]  # restarted, not stepped
        assert np.all(np.abs(obs[3]) <= 0.05)  # a CartPole start state
        for i in (0, 1, 2, 4):
            single.reset(options={"state": before[i]})
            o, r, term, _, _ = single.step(int(actions[1][i]))
            np.testing.assert_array_equal(obs[i], o)
            assert rewards[i] == r and terminated[i] == term
        assert vec.model_steps == n + n - 1
    finally:
        vec.close()
        single.close()


def test_same_step_autoreset_returns_the_final_observation_in_the_infos():
    vec = CodeWorldVectorEnv("CartPole-v1", CARTPOLE, 3, autoreset_mode=AutoresetMode.SAME_STEP)
    try:
        start = np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.2, 2.0], [0.0, 0.0, 0.0, 0.0]])
        vec.reset(seed=0, options={"states": start})
        obs, rewards, terminated, truncated, infos = vec.step(np.ones(3, dtype=np.int64))
        assert list(terminated) == [False, True, False] and rewards[1] == 1.0
        assert list(infos["_final_obs"]) == [False, True, False]
        assert infos["final_obs"][1][2] > 0.2  # the pole past the limit
        assert np.all(np.abs(obs[1]) <= 0.05)  # already restarted
        assert vec.observation_space.contains(obs)
    finally:
        vec.close()


def test_copies_are_truncated_at_the_time_limit():
    vec = CodeWorldVectorEnv("Pendulum-v1", PENDULUM, 4, max_episode_steps=3)
    try:
        vec.reset(seed=1)
        assert vec.start_source == "env reset"
        flags = [vec.step(np.zeros((4, 1), dtype=np.float32))[3] for _ in range(4)]
        assert [f.all() for f in flags] == [False, False, True, False]  # the 4th step restarts them
    finally:
        vec.close()


# The checker warns about the real envs' own spaces (CartPole's unbounded velocities, Pendulum's
# [-2, 2] actions), as it does for the real envs; any other warning (determinism, dtypes, data
# outside the spaces) fails.
@pytest.mark.filterwarnings("ignore:.*Box observation space (minimum|maximum) value is:UserWarning")
@pytest.mark.filterwarnings("ignore:.*symmetric and normalized space:UserWarning")
def test_the_gymnasium_env_checker_passes():
    from gymnasium.utils.env_checker import check_env

    for env_id, source in (("CartPole-v1", CARTPOLE), ("Pendulum-v1", PENDULUM)):
        env = CodeWorldEnv(env_id, source)
        try:
            check_env(env, skip_render_check=True)
        finally:
            env.close()


def test_seeded_resets_repeat_and_a_logged_dataset_starts_from_its_recorded_episodes(tmp_path, cache):
    vec = CodeWorldVectorEnv("CartPole-v1", CARTPOLE, 8)
    try:
        first, _ = vec.reset(seed=7)
        again, _ = vec.reset(seed=7)
        np.testing.assert_array_equal(first, again)
    finally:
        vec.close()
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 5, size=(30, 1)).astype(np.float64)
    actions = rng.integers(0, 2, size=(30, 1)).astype(np.float64)
    path = tmp_path / "counter.npz"
    np.savez(path, obs=obs, actions=actions, rewards=np.zeros(30), next_obs=obs + actions,
             terminated=np.zeros(30, bool), truncated=np.zeros(30, bool),
             episode_start=np.repeat([0, 10, 20], 10))
    source = "def step(state, action):\n    return state + action, 0.0, False\n"
    vec = CodeWorldVectorEnv(f"data:{path}", source, 16)
    try:
        starts, _ = vec.reset(seed=0)
        assert vec.start_source == "recorded episodes"
        assert set(starts[:, 0]) <= {obs[0, 0], obs[10, 0], obs[20, 0]}
        next_obs, *_ = vec.step(np.ones(16, dtype=np.int64))
        np.testing.assert_array_equal(next_obs, starts + 1)
    finally:
        vec.close()


def test_a_model_that_hangs_ends_the_step_with_a_timeout():
    from codeworld.planning import WorldModelError
    from codeworld.sandbox import SandboxLimits

    hanging = "def step(state, action):\n    while state[0] > 1.0:\n        pass\n    return state, 0.0, False\n"
    vec = CodeWorldVectorEnv("CartPole-v1", hanging, 2, limits=SandboxLimits(timeout_s=1.0, preload_numba=True))
    try:
        vec.reset(seed=0, options={"states": np.zeros((2, 4))})
        vec.step(np.zeros(2, dtype=np.int64))  # fine while the cart is near the centre
        vec.reset(seed=0, options={"states": np.full((2, 4), 2.0)})
        with pytest.raises(WorldModelError, match="timeout"):
            vec.step(np.zeros(2, dtype=np.int64))
    finally:
        vec.close()


# -- the command -----------------------------------------------------------------------------------

@pytest.fixture
def sb3():
    """The train command's tests need stable-baselines3 (the train extra; the dev extra has it)."""
    return pytest.importorskip("stable_baselines3")


def test_train_runs_in_a_true_model_and_evaluates_on_the_real_env(tmp_path, cache, sb3, capsys, monkeypatch):
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    model = _write(tmp_path, "cartpole.py", CARTPOLE)
    out = tmp_path / "record.json"
    code = main(["train", "CartPole-v1", model, "--algo", "ppo", "--steps", "256", "--num-envs", "4",
                 "--episodes", "3", "--json", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    record = json.loads(capsys.readouterr().out)
    assert record == json.loads(out.read_text())
    assert record["status"] == "ok" and record["real_env_steps_in_training"] == 0
    assert record["model_steps"] >= 256 and record["compiled"] is True
    assert len(record["returns_real_env"]) == 3 and all(r >= 1 for r in record["returns_real_env"])
    assert record["return_real_env"] == pytest.approx(np.mean(record["returns_real_env"]))
    assert record["return_random"] > 0 and record["wall_seconds"] > 0
    assert record["start_states"] == "env reset"
    assert not list(temp.glob("SB3-*"))  # no empty log folder of stable-baselines3 left behind


def test_dqn_trains_on_a_module_registered_env(tmp_path, cache, sb3, monkeypatch, capsys):
    package = tmp_path / "trainpole_codeworld_test"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import gymnasium\n"
        "gymnasium.register(id='TrainPole-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv',"
        " max_episode_steps=50)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        model = _write(tmp_path, "cartpole.py", CARTPOLE)
        code = main(["train", "trainpole_codeworld_test:TrainPole-v0", model, "--algo", "dqn",
                     "--steps", "300", "--episodes", "2", "--set", "learning_starts=50", "--json"])
        assert code == 0, capsys.readouterr().err
        record = json.loads(capsys.readouterr().out)
        assert record["algo"] == "dqn" and record["algo_kwargs"] == {"learning_starts": 50}
        assert record["model_steps"] >= 300 and record["max_episode_steps"] == 50
        assert len(record["returns_real_env"]) == 2 and max(record["returns_real_env"]) <= 50
    finally:
        gym.registry.pop("TrainPole-v0", None)


def test_an_env_with_tuple_observations_trains_on_the_models_encoding(tmp_path, cache, sb3, capsys):
    model = _write(tmp_path, "blackjack.py", "def step(state, action):\n    return state, 0.0, True\n")
    code = main(["train", "Blackjack-v1", model, "--steps", "64", "--num-envs", "2", "--episodes", "2",
                 "--json"])
    assert code == 0, capsys.readouterr().err
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "ok" and len(record["returns_real_env"]) == 2
    assert all(r in (-1.0, 0.0, 1.0, 1.5) for r in record["returns_real_env"])


def test_a_model_that_raises_during_training_stops_with_its_error_and_step(tmp_path, cache, sb3, capsys):
    model = _write(tmp_path, "raising.py", RAISING_CARTPOLE)
    out = tmp_path / "record.json"
    code = main(["train", "CartPole-v1", model, "--steps", "2000", "--num-envs", "4", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert "training step" in err and "ValueError: pole too far" in err and "line " in err
    record = json.loads(out.read_text())
    assert record["status"] == "exception" and 0 <= record["failed_at_step"] < 2000


@pytest.mark.parametrize("argv, message", [
    (["train", "Pendulum-v1", "MODEL", "--algo", "dqn"], "dqn trains on discrete actions"),
    (["train", "CartPole-v1", "MODEL", "--algo", "sac"], "sac trains on continuous actions"),
    (["train", "NoSuchEnv-v9", "MODEL"], "unknown"),
    (["train", "CartPole-v1", "MODEL", "--steps", "0"], "--steps must be at least 1"),
    (["train", "CartPole-v1", "MODEL", "--set", "no_such_argument=1", "--steps", "10"], "ppo:"),
])
def test_bad_input_is_a_one_line_error(tmp_path, cache, sb3, capsys, argv, message):
    model = _write(tmp_path, "cartpole.py", CARTPOLE)
    assert main([model if a == "MODEL" else a for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_file_that_is_no_model_is_named(tmp_path, cache, capsys):
    model = _write(tmp_path, "nothing.py", "x = 1\n")
    assert main(["train", "CartPole-v1", model]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"codeworld train: {model}: no world model found") and err.count("\n") == 1


def test_a_policy_trains_from_python_without_the_command_line(tmp_path, cache, sb3):
    from codeworld.training import ModelFailedError, TrainResult, train_policy

    result = train_policy("CartPole-v1", CARTPOLE, steps=64, num_envs=2, episodes=2, seed=1,
                          save_policy=tmp_path / "policy.zip")
    assert isinstance(result, TrainResult) and result.status == "ok" and result.model_steps >= 64
    assert result.record()["returns_real_env"] == result.returns_real_env and "policy" not in result.record()
    assert (tmp_path / "policy.zip").is_file() and result.policy.predict(np.zeros(4))[0] in (0, 1)
    with pytest.raises(ModelFailedError, match="the model failed at training step") as failed:
        train_policy("CartPole-v1", RAISING_CARTPOLE, steps=2000, num_envs=2, episodes=1)
    assert failed.value.record["status"] == "exception"
    with pytest.raises(ValueError, match="sac trains on continuous actions"):
        train_policy("CartPole-v1", CARTPOLE, algo="sac")

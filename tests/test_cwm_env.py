"""A code world model as a Gymnasium environment: spaces, agreement with the real env, autoreset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codeworld.envs import encode_obs, make_env
from codeworld.envs.registry import set_state_from_obs
from codeworld.planning import CodeWorldEnv, CodeWorldVectorEnv, WorldModelError

CARTPOLE = (Path(__file__).parent / "models" / "cartpole_functional.py").read_text()


@pytest.fixture(scope="module")
def vector_env():
    env = CodeWorldVectorEnv("CartPole-v1", CARTPOLE, 6)
    yield env
    env.close()


def test_vector_env_agrees_with_the_real_env_from_the_same_states(vector_env):
    real = make_env("CartPole-v1")
    real.reset(seed=0)
    rng = np.random.default_rng(0)
    obs, _ = vector_env.reset(seed=10)
    assert obs.shape == (6, 4) and obs.dtype == np.float32
    assert vector_env.single_observation_space == real.observation_space
    assert vector_env.single_action_space == real.action_space
    compared = 0
    ended = np.zeros(6, dtype=bool)
    for _ in range(40):
        actions = rng.integers(0, 2, 6)
        before = vector_env.states.copy()
        obs, rewards, terminated, truncated, _ = vector_env.step(actions)
        for i in np.flatnonzero(~ended):
            set_state_from_obs(real, "CartPole-v1", before[i])
            real_obs, real_reward, real_terminated, _, _ = real.unwrapped.step(int(actions[i]))
            np.testing.assert_allclose(obs[i], real_obs, rtol=1e-5, atol=1e-6)
            assert rewards[i] == real_reward and terminated[i] == real_terminated
            compared += 1
        ended = terminated | truncated  # the next step resets these copies (autoreset)
    assert compared > 150
    real.close()


def test_vector_env_autoresets_an_ended_copy_on_the_next_step(vector_env):
    start = np.tile([0.0, 0.0, 0.0, 0.0], (6, 1))
    start[2] = [0.0, 0.0, 0.2, 2.0]  # falls at once
    vector_env.reset(options={"states": start})
    _, _, terminated, _, _ = vector_env.step(np.ones(6, dtype=np.int64))
    assert terminated[2] and not terminated[[0, 1, 3, 4, 5]].any()
    obs, rewards, terminated, _, _ = vector_env.step(np.ones(6, dtype=np.int64))
    assert rewards[2] == 0.0 and not terminated[2]
    assert np.all(np.abs(obs[2]) <= 0.05)  # a fresh CartPole start state


def test_single_env_steps_the_model_with_the_real_spaces():
    env = CodeWorldEnv("CartPole-v1", CARTPOLE, compile=False, max_episode_steps=3)
    real = make_env("CartPole-v1")
    try:
        assert env.observation_space == real.observation_space and env.action_space == real.action_space
        obs, _ = env.reset(seed=4)
        real_obs, _ = real.reset(seed=4)
        np.testing.assert_array_equal(obs, real_obs)
        for t in range(3):
            obs, reward, terminated, truncated, _ = env.step(t % 2)
            real_obs, real_reward, *_ = real.step(t % 2)
            np.testing.assert_allclose(encode_obs("CartPole-v1", obs), real_obs, rtol=1e-5, atol=1e-6)
            assert reward == real_reward and not terminated
        assert truncated  # the step cap
    finally:
        env.close()
        real.close()


def test_a_failing_model_raises_a_world_model_error():
    source = "def step(state, action):\n    return state, float('nan'), False\n"
    env = CodeWorldEnv("CartPole-v1", source, compile=False)
    try:
        env.reset(seed=0)
        with pytest.raises(WorldModelError, match="NaN"):
            env.step(0)
    finally:
        env.close()

"""The CWMB registry, observation encoding, setting the simulator from observations, descriptions."""

from __future__ import annotations

import numpy as np
import pytest

from codeworld.cli import main
from codeworld.envs import UnknownEnvError, encode_obs, get_spec, list_envs, make_env, resolve_env, step_from_obs
from codeworld.envs.registry import encode_action, set_state_from_obs
from codeworld.envs._descriptions import KEPT_SECTIONS, describe, description_path

PAPER_IDS = ["Blackjack-v1", "CliffWalking-v0", "Taxi-v3", "CartPole-v1", "MountainCar-v0", "Acrobot-v1",
             "Pendulum-v1", "Reacher-v4", "Pusher-v4", "InvertedPendulum-v4",
             "InvertedDoublePendulum-v4", "HalfCheetah-v4", "Hopper-v4", "Swimmer-v4", "Walker2d-v4",
             "Ant-v4", "Humanoid-v4", "HumanoidStandup-v4"]


def test_registry_has_the_18_cwmb_envs_and_accepts_the_papers_ids():
    assert len(list_envs()) == 18
    assert [get_spec(p).paper_id for p in PAPER_IDS] == PAPER_IDS
    assert get_spec("Taxi-v3").env_id == "Taxi-v4"
    assert get_spec("CliffWalking-v0").env_id == "CliffWalking-v1"
    discrete = [e for e in list_envs() if get_spec(e).discrete]
    assert discrete == ["Blackjack-v1", "CliffWalking-v1", "Taxi-v4", "CartPole-v1", "MountainCar-v0",
                        "Acrobot-v1"]
    assert all(get_spec(e).planner == ("mcts" if e in discrete else "cem") for e in list_envs())


def test_unknown_id_raises_with_close_matches():
    with pytest.raises(UnknownEnvError, match="did you mean CartPole-v1"):
        get_spec("Cartpole-v1")
    with pytest.raises(KeyError):
        get_spec("NotAnEnv-v9")


def test_resolve_env_keeps_a_spec_and_looks_an_id_up():
    spec = get_spec("Taxi-v4")
    assert resolve_env(spec) is spec and resolve_env("Taxi-v3") is spec
    with pytest.raises(UnknownEnvError, match="did you mean CartPole-v1"):
        resolve_env("Cartpole-v1")
    with pytest.raises(TypeError, match="an EnvSpec or an id string, got int"):
        resolve_env(3)
    with pytest.raises(TypeError, match="resolve_env takes an EnvSpec too"):
        get_spec(spec)  # a lookup takes an id: code holding a spec has nothing to look up


def test_a_spec_acts_as_the_functions_that_take_its_id():
    spec = get_spec("CartPole-v1")
    env = spec.make()
    obs, _ = env.reset(seed=3)
    assert np.array_equal(spec.encode_obs(obs), encode_obs("CartPole-v1", obs))
    assert spec.decode_action(np.array([1.0])) == 1 and spec.encode_action(1).tolist() == [1.0]
    state = spec.encode_obs(obs)
    by_spec = spec.step_from_obs(env, state, np.array([0.0]))
    assert np.array_equal(by_spec[0], step_from_obs(env, "CartPole-v1", state, np.array([0.0]))[0])
    env.close()


@pytest.mark.parametrize("env_id", list_envs())
def test_spec_matches_the_gymnasium_spaces(env_id):
    spec = get_spec(env_id)
    env = make_env(env_id)
    obs, _ = env.reset(seed=3)
    assert encode_obs(env_id, obs).shape == (spec.obs_dim,)
    assert encode_obs(env_id, obs).dtype == np.float64
    if spec.discrete:
        assert env.action_space.n == spec.n_actions and spec.action_dim == 1
    else:
        assert tuple(env.action_space.low) == spec.action_low
        assert tuple(env.action_space.high) == spec.action_high
        assert spec.action_dim == env.action_space.shape[0]
    assert spec.max_episode_steps == env.spec.max_episode_steps
    env.close()


def test_blackjack_tuple_is_three_numbers_and_cannot_be_set():
    spec = get_spec("Blackjack-v1")
    assert encode_obs("Blackjack-v1", (14, 10, 1)).tolist() == [14.0, 10.0, 1.0]
    assert not spec.settable
    with pytest.raises(ValueError, match="cannot be set"):
        set_state_from_obs(make_env("Blackjack-v1"), "Blackjack-v1", np.zeros(3))


def _reproduced(env_id: str, steps: int = 40, seed: int = 0) -> float:
    """Fraction of real transitions the simulator set from the observation reproduces in tolerance."""
    spec = get_spec(env_id)
    real, sim = make_env(env_id), make_env(env_id)
    obs, _ = real.reset(seed=seed)
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(steps):
        if spec.discrete:
            action = int(rng.integers(spec.n_actions))
        else:
            action = rng.uniform(spec.action_low, spec.action_high).astype(np.float32)
        next_obs, reward, terminated, truncated, _ = real.step(action)
        pred, pred_reward, pred_term = step_from_obs(sim, env_id, encode_obs(env_id, obs),
                                                     encode_action(env_id, action))
        truth = encode_obs(env_id, next_obs)
        ok = np.all(np.abs(pred - truth) <= spec.state_atol + spec.state_rtol * np.abs(truth))
        ok &= abs(pred_reward - reward) <= spec.reward_atol + spec.reward_rtol * abs(reward)
        hits += bool(ok and pred_term == terminated)
        obs = next_obs
        if terminated or truncated:
            obs, _ = real.reset()
    return hits / steps


@pytest.mark.parametrize("env_id", ["CliffWalking-v1", "Taxi-v4", "CartPole-v1", "MountainCar-v0",
                                    "Acrobot-v1", "Pendulum-v1", "InvertedPendulum-v4",
                                    "InvertedDoublePendulum-v4", "HalfCheetah-v4", "Swimmer-v4",
                                    "Pusher-v4"])
def test_simulator_set_from_observation_reproduces_real_transitions(env_id):
    assert _reproduced(env_id) == 1.0


def test_mujoco_setter_zeroes_the_excluded_x_position():
    env = make_env("HalfCheetah-v4")
    obs, _ = env.reset(seed=1)
    env.unwrapped.data.qpos[0] = 5.0
    set_state_from_obs(env, "HalfCheetah-v4", encode_obs("HalfCheetah-v4", obs))
    assert env.unwrapped.data.qpos[0] == 0.0
    np.testing.assert_array_equal(env.unwrapped.data.qpos[1:], obs[:8])


@pytest.mark.parametrize("env_id", list_envs())
def test_description_keeps_the_documented_sections_and_drops_the_rest(env_id):
    text = describe(env_id)
    assert text.startswith(f"# {get_spec(env_id).env_id}\n")
    assert "## Action Space" in text and "## Observation Space" in text
    titles = [line[3:].rstrip(":").lower() for line in text.splitlines() if line.startswith("## ")]
    assert set(titles) - {"world-model contract"} <= set(KEPT_SECTIONS)
    for dropped in ("Version History", "## Arguments", "http://", "https://", "```", "gym.make"):
        assert dropped not in text
    assert "## World-model contract" in text
    # the reviewable copy under data/ is up to date with the installed Gymnasium
    assert description_path(env_id).read_text(encoding="utf-8") == text


def test_description_drops_citation_marks_and_keeps_bracketed_values():
    from codeworld.envs._descriptions import _clean

    text = _clean('By Sutton and Barto [<a href="#ref">1</a>]. The goal is at [3, 11], state `[47]`.')
    assert text == "By Sutton and Barto. The goal is at [3, 11], state `[47]`."
    cliff = describe("CliffWalking-v1")
    assert "goal located at [3, 11]" in cliff and "enters state `[47]`" in cliff


def test_v4_mujoco_description_comes_from_v5_docstring():
    text = describe("Hopper-v4")
    assert "v5 version" in text
    assert "## Rewards" in text and "## Episode End" in text


def test_cli_envs_and_describe(capsys):
    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    assert all(env_id in out for env_id in list_envs())
    assert main(["describe", "Taxi-v3"]) == 0
    assert capsys.readouterr().out.startswith("# Taxi-v4")
    assert main(["describe", "Nope-v0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown CWMB environment" in err


def test_spec_methods_set_and_step_the_simulator():
    spec = get_spec("CartPole-v1")
    env = make_env("CartPole-v1")
    obs = np.array([0.1, -0.2, 0.03, 0.4])
    spec.set_state_from_obs(env, obs)
    np.testing.assert_array_equal(env.unwrapped.state, obs)
    next_obs, reward, terminated = spec.step_from_obs(env, obs, np.array([1.0]))
    assert next_obs.shape == (4,) and reward == 1.0 and terminated is False
    assert next_obs[0] == pytest.approx(0.1 - 0.2 * 0.02)


def test_description_tables_are_compacted_and_a_constant_column_is_said_once():
    from codeworld.envs._descriptions import compact_tables

    table = "\n".join([
        "Text before.",
        "| Num | Action        | Min  | Max |",
        "|-----|---------------|------|-----|",
        "| 0   | push left     | -Inf | Inf |",
        "| 1   | push right    | -Inf | Inf |",
        "| 2   | do nothing    | -Inf | 5   |",
        "Text after."])
    assert compact_tables(table).splitlines() == [
        "Text before.",
        "| Num | Action | Max |",
        "|---|---|---|",
        "| 0 | push left | Inf |",
        "| 1 | push right | Inf |",
        "| 2 | do nothing | 5 |",
        "(In every row: Min = -Inf.)",
        "Text after."]
    # a table of two rows keeps every column; a ragged one only loses its padding
    assert compact_tables("| a | b |\n|---|---|\n| 1   | 2 |") == "| a | b |\n|---|---|\n| 1 | 2 |"
    assert compact_tables("| a |  b |\n| 1 |") == "| a | b |\n| 1 |"
    # the MuJoCo tables say their bounds once
    ant = describe("Ant-v4")
    assert "| 0 | z-coordinate of the torso (centre) |" in ant and "-Inf | Inf" not in ant

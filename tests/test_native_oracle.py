"""The native oracle: many copies of a MuJoCo environment stepped at once on MuJoCo's thread pool
must step exactly as the Gymnasium environment's own ``step`` does."""

from __future__ import annotations

import numpy as np
import pytest

from codeworld.envs import get_spec, list_envs
from codeworld.planning import make_config
from codeworld.planning._cem import CemPlanner
from codeworld.planning._oracle import OracleModel
from codeworld.planning.planners import ModelAccess

MUJOCO_ENVS = [e for e in list_envs() if get_spec(e).family == "mujoco" and not get_spec(e).discrete]


def test_every_continuous_mujoco_env_of_the_benchmark_is_covered():
    assert len(MUJOCO_ENVS) == 11  # the 12 continuous CWMB envs but Pendulum (classic control)


@pytest.mark.parametrize("env_id", MUJOCO_ENVS)
def test_batched_steps_equal_the_environments_own_steps(env_id):
    spec = get_spec(env_id)
    oracle = OracleModel(spec, threads=2)
    assert oracle.native
    copies, steps = 3, 25
    envs = [spec.make() for _ in range(copies)]
    for env in envs:
        env.reset(seed=3)
    rng = np.random.default_rng(7)
    actions = rng.uniform(spec.action_low, spec.action_high, size=(steps, copies, spec.action_dim))
    states = np.stack([oracle.state_of(env) for env in envs])
    live = list(range(copies))
    try:
        for t in range(steps):
            nxt, rewards, dones = oracle.step_batch(states[live], actions[t, live])
            for row, i in enumerate(live):
                _obs, reward, terminated, _trunc, _info = envs[i].unwrapped.step(spec.decode_action(actions[t, i]))
                # The simulator's whole integration state (qpos, qvel, warm start, time, ...), and
                # what the next reward reads from before the step, equal the environment's.
                np.testing.assert_array_equal(nxt[row], oracle.state_of(envs[i]))
                assert rewards[row] == pytest.approx(reward, rel=1e-6, abs=1e-6)
                assert bool(dones[row]) == terminated
                states[i] = nxt[row]
            live = [i for row, i in enumerate(live) if not dones[row]]
            if not live:
                break
    finally:
        for env in envs:
            env.close()
        oracle.close()


def test_terminations_are_found_where_the_environment_terminates():
    # InvertedPendulum ends within a few random steps: the flags above are checked where they are set.
    spec = get_spec("InvertedPendulum-v4")
    oracle = OracleModel(spec)
    env = spec.make()
    env.reset(seed=0)
    state = oracle.state_of(env)[None]
    try:
        for _ in range(50):
            state, _reward, done = oracle.step_batch(state, np.array([[3.0]]))
            _, _, terminated, _, _ = env.unwrapped.step(spec.decode_action(np.array([3.0])))
            assert bool(done[0]) == terminated
            if terminated:
                break
        assert terminated
    finally:
        env.close()
        oracle.close()


# (Not Reacher: its reward reads positions MuJoCo derived before the step's last substep, which the
# step-by-step oracle recomputes from the restored state, a few float32 ulps away.)
@pytest.mark.parametrize("env_id", ["HalfCheetah-v4", "Hopper-v4"])
def test_cem_plans_the_same_natively_and_step_by_step(env_id):
    spec = get_spec(env_id)
    config = make_config("cem", horizon=6, iterations=2, num_samples=12, num_elites=3)
    plans = {}
    for native in (False, True):
        oracle = OracleModel(spec, native=native)
        assert oracle.native == native
        env = spec.make()
        env.reset(seed=1)
        planner = CemPlanner(config, spec.action_low, spec.action_high)
        plan = planner.act(ModelAccess(step_batch=oracle.step_batch, oracle=True), oracle.state_of(env), seed=5)
        plans[native] = (np.array(plan), planner.last_info["predicted_return"])
        env.close()
        oracle.close()
    np.testing.assert_array_equal(plans[True][0], plans[False][0])
    assert plans[True][1] == plans[False][1]

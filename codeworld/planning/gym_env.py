"""A code world model as a Gymnasium environment, single (`CodeWorldEnv`) and vectorized (`CodeWorldVectorEnv`).

RL libraries can train inside a learned model: the observation and action spaces are the real
environment's, start states come from resets of the real environment (trusted, in this process),
and every transition is predicted by the model in a sandbox worker. The vector env predicts all
copies in one request, which a compiled model serves in one native loop.

A model that fails (raises, returns something outside the contract, hangs) makes ``step`` raise
`WorldModelError` with the sandbox's record: the environment cannot go on from a missing state.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space


class WorldModelError(RuntimeError):
    """The world model failed to predict a transition.

    Attributes:
        result: the `codeworld.sandbox.SandboxResult` of the failed request.
    """

    def __init__(self, result):
        super().__init__(f"the world model failed: {result.summary()}")
        self.result = result


def _decode_obs(space: gym.Space, flat: np.ndarray):
    """An encoded (flat float64) state back to an observation of `space`."""
    if isinstance(space, gym.spaces.Box):
        return np.asarray(flat, dtype=space.dtype).reshape(space.shape)
    if isinstance(space, gym.spaces.Discrete):
        return int(round(float(flat[0])))
    if isinstance(space, gym.spaces.Tuple):
        return tuple(int(round(float(x))) for x in flat)
    raise TypeError(f"cannot decode an observation of {space}")


class _ModelBackend:
    """What both envs share: the spec, the real env for start states, the worker with the model."""

    def __init__(self, env_id: str, source: str, compile: bool, limits):
        from codeworld.envs import get_spec, make_env
        from codeworld.sandbox import ModelWorker, SandboxLimits

        self.spec = get_spec(env_id)
        self.real = make_env(self.spec.env_id)
        self.worker = ModelWorker(source, discrete=self.spec.discrete, compile=compile,
                                  limits=limits or SandboxLimits(preload_numba=compile))
        loaded = self.worker.load()
        if not loaded.ok:
            self.close()
            raise WorldModelError(loaded)

    def start_state(self, seed: int | None) -> np.ndarray:
        from codeworld.envs import encode_obs

        obs, _ = self.real.reset(seed=seed)
        return encode_obs(self.spec.env_id, obs)

    def encode_actions(self, actions, n: int) -> np.ndarray:
        return np.asarray(actions, dtype=np.float64).reshape(n, self.spec.action_dim)

    def predict(self, states: np.ndarray, actions: np.ndarray):
        pred = self.worker.predict(states, actions)
        if not pred.ok:
            raise WorldModelError(pred.result)
        return pred.next_states, pred.rewards, pred.dones

    def close(self) -> None:
        self.worker.close()
        self.real.close()


class CodeWorldEnv(gym.Env):
    """One copy of a CWMB environment simulated by a code world model.

    Args:
        env_id: the CWMB environment the model describes (its spaces are used).
        source: the model program.
        compile: try Numba compilation of the model.
        max_episode_steps: truncate after this many steps (default: the real env's limit).
        limits: sandbox limits for the model's worker.

    ``reset(options={"state": s})`` starts from the encoded state ``s`` instead of a real reset.
    """

    metadata = {"render_modes": []}

    def __init__(self, env_id: str, source: str, *, compile: bool = True, max_episode_steps: int | None = None,
                 limits=None):
        self._backend = _ModelBackend(env_id, source, compile, limits)
        spec = self._backend.spec
        self.observation_space = self._backend.real.observation_space
        self.action_space = self._backend.real.action_space
        self.max_episode_steps = max_episode_steps or spec.max_episode_steps
        self.state: np.ndarray | None = None
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if options and "state" in options:
            self.state = np.asarray(options["state"], dtype=np.float64).ravel().copy()
        else:
            self.state = self._backend.start_state(seed)
        self._t = 0
        return _decode_obs(self.observation_space, self.state), {}

    def step(self, action):
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        actions = self._backend.encode_actions(action, 1)
        nxt, rew, done = self._backend.predict(self.state[None, :], actions)
        self.state = nxt[0].copy()
        self._t += 1
        truncated = self.max_episode_steps is not None and self._t >= self.max_episode_steps
        return _decode_obs(self.observation_space, self.state), float(rew[0]), bool(done[0]), truncated, {}

    def close(self) -> None:
        self._backend.close()


class CodeWorldVectorEnv(VectorEnv):
    """`num_envs` copies of a CWMB environment simulated by a code world model, stepped together.

    Autoreset follows Gymnasium's default (next step): the step after an episode ends resets that
    copy and returns its new start observation with reward 0.

    Args:
        env_id: the CWMB environment the model describes.
        source: the model program.
        num_envs: number of copies.
        compile: try Numba compilation of the model.
        max_episode_steps: truncate after this many steps (default: the real env's limit).
        limits: sandbox limits for the model's worker.

    ``reset(options={"states": S})`` starts the copies from the encoded states ``S`` (num_envs rows).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, env_id: str, source: str, num_envs: int, *, compile: bool = True,
                 max_episode_steps: int | None = None, limits=None):
        self._backend = _ModelBackend(env_id, source, compile, limits)
        self.num_envs = int(num_envs)
        self.single_observation_space = self._backend.real.observation_space
        self.single_action_space = self._backend.real.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.max_episode_steps = max_episode_steps or self._backend.spec.max_episode_steps
        self.states = np.zeros((self.num_envs, self._backend.spec.obs_dim))
        self._t = np.zeros(self.num_envs, dtype=np.int64)
        self._needs_reset = np.zeros(self.num_envs, dtype=bool)
        self._seed_counter: int | None = None

    def _observations(self):
        obs = [_decode_obs(self.single_observation_space, s) for s in self.states]
        if isinstance(self.single_observation_space, gym.spaces.Box):
            return np.stack(obs)
        if isinstance(self.single_observation_space, gym.spaces.Discrete):
            return np.array(obs, dtype=self.single_observation_space.dtype)
        return tuple(np.array(col) for col in zip(*obs))

    def _fresh_state(self) -> np.ndarray:
        seed = None
        if self._seed_counter is not None:
            seed = self._seed_counter
            self._seed_counter += 1
        return self._backend.start_state(seed)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if options and "states" in options:
            states = np.asarray(options["states"], dtype=np.float64)
            self.states = states.reshape(self.num_envs, -1).copy()
        else:
            self._seed_counter = seed
            self.states = np.stack([self._fresh_state() for _ in range(self.num_envs)])
        self._t[:] = 0
        self._needs_reset[:] = False
        return self._observations(), {}

    def step(self, actions):
        actions = self._backend.encode_actions(actions, self.num_envs)
        rewards = np.zeros(self.num_envs)
        terminations = np.zeros(self.num_envs, dtype=bool)
        truncations = np.zeros(self.num_envs, dtype=bool)
        live = np.flatnonzero(~self._needs_reset)
        for i in np.flatnonzero(self._needs_reset):
            self.states[i] = self._fresh_state()
            self._t[i] = 0
        if live.size:
            nxt, rew, done = self._backend.predict(self.states[live], actions[live])
            self.states[live] = nxt
            rewards[live] = rew
            terminations[live] = done
            self._t[live] += 1
            if self.max_episode_steps is not None:
                truncations[live] = self._t[live] >= self.max_episode_steps
        self._needs_reset = terminations | truncations
        return self._observations(), rewards, terminations, truncations, {}

    def close_extras(self, **kwargs: Any) -> None:
        self._backend.close()

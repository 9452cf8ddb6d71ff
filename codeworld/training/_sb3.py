"""Adapters to stable-baselines3: a quiet agent on the CPU, and a model's vector env as SB3's ``VecEnv``."""

from __future__ import annotations

from typing import Any

import numpy as np


def sb3_agent(class_name: str, venv, *, seed: int, **kwargs: Any):
    """A stable-baselines3 agent (``PPO``, ``DQN``, ...) with an MLP policy on the CPU that logs
    nowhere: SB3's default logger makes an empty ``SB3-<time>`` folder in the temp directory at
    every ``learn()``, and codeworld keeps its own records."""
    import stable_baselines3
    from stable_baselines3.common.logger import Logger

    agent = getattr(stable_baselines3, class_name)("MlpPolicy", venv, seed=seed, device="cpu", verbose=0, **kwargs)
    agent.set_logger(Logger(folder=None, output_formats=[]))
    return agent


def sb3_vec_env(env):
    """Wrap a same-step `CodeWorldVectorEnv` in stable-baselines3's ``VecEnv`` interface."""
    from stable_baselines3.common.vec_env import VecEnv

    class _Wrapped(VecEnv):
        def __init__(self, inner):
            self.inner = inner
            super().__init__(inner.num_envs, inner.single_observation_space, inner.single_action_space)
            self._actions = None

        def reset(self):
            seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
            obs, _ = self.inner.reset(seed=seed)
            self._reset_seeds()
            self._reset_options()
            return obs

        def step_async(self, actions):
            self._actions = actions

        def step_wait(self):
            obs, rewards, terminated, truncated, infos = self.inner.step(self._actions)
            dones = terminated | truncated
            out = [{} for _ in range(self.num_envs)]
            if "_final_obs" in infos:
                for i in np.flatnonzero(infos["_final_obs"]):
                    out[i]["terminal_observation"] = infos["final_obs"][i]
                    out[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            return obs, rewards.astype(np.float32), dones, out

        def close(self):
            self.inner.close()

        def get_attr(self, attr_name, indices=None):
            return [getattr(self.inner, attr_name)] * len(self._get_indices(indices))

        def set_attr(self, attr_name, value, indices=None):
            setattr(self.inner, attr_name, value)

        def env_method(self, method_name, *args, indices=None, **kwargs):
            return [getattr(self.inner, method_name)(*args, **kwargs)] * len(self._get_indices(indices))

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * len(self._get_indices(indices))

        def _get_indices(self, indices):
            if indices is None:
                return range(self.num_envs)
            return [indices] if isinstance(indices, int) else indices

    return _Wrapped(env)

"""The oracle: the true simulator as a planner's model, restored from saved simulator state.

The planner's state for the oracle is the simulator's own state vector (not the observation):

* classic control: ``env.unwrapped.state`` (CartPole, MountainCar, Pendulum, Acrobot);
* toy text: the state index ``env.unwrapped.s`` (Taxi, CliffWalking);
* MuJoCo: the integration state of ``mj_getState`` (time, qpos, qvel, actuator activations,
  the warm start of the constraint solver, controls), restored with ``mj_setState`` and
  ``mj_forward``: no deep copies.

`SIM_STATES` maps a family to its save/restore pair. Blackjack has no oracle here: its next state
depends on cards drawn from the env's random generator.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class SimState:
    """How to save and restore one family of simulators as a float64 vector.

    Attributes:
        save: ``save(unwrapped_env) -> np.ndarray``.
        restore: ``restore(unwrapped_env, vector)``.
    """

    save: Callable[[Any], np.ndarray]
    restore: Callable[[Any, np.ndarray], None]


def _save_classic(env) -> np.ndarray:
    return np.array(env.state, dtype=np.float64).ravel()


def _restore_classic(env, vector: np.ndarray) -> None:
    env.state = np.array(vector, dtype=np.float64)
    if hasattr(env, "steps_beyond_terminated"):  # CartPole warns when stepped after termination
        env.steps_beyond_terminated = None


def _save_toy_text(env) -> np.ndarray:
    return np.array([float(env.s)])


def _restore_toy_text(env, vector: np.ndarray) -> None:
    env.s = int(round(float(vector[0])))
    env.lastaction = None


def _mujoco_spec():
    import mujoco

    return mujoco.mjtState.mjSTATE_INTEGRATION


def _save_mujoco(env) -> np.ndarray:
    import mujoco

    spec = _mujoco_spec()
    out = np.empty(mujoco.mj_stateSize(env.model, spec))
    mujoco.mj_getState(env.model, env.data, out, spec)
    return out


def _restore_mujoco(env, vector: np.ndarray) -> None:
    import mujoco

    mujoco.mj_setState(env.model, env.data, np.ascontiguousarray(vector, dtype=np.float64), _mujoco_spec())
    mujoco.mj_forward(env.model, env.data)


SIM_STATES: dict[str, SimState] = {
    "classic_control": SimState(_save_classic, _restore_classic),
    "toy_text": SimState(_save_toy_text, _restore_toy_text),
    "mujoco": SimState(_save_mujoco, _restore_mujoco),
}


class OracleUnavailable(ValueError):
    """The environment's simulator cannot be saved and restored, so it has no oracle."""


class OracleModel:
    """The true simulator of a CWMB environment behind a batched step (in the parent: it is trusted).

    Args:
        env_id: the CWMB environment.
    """

    def __init__(self, env_id: str):
        from codeworld.envs import get_spec, make_env

        self.spec = get_spec(env_id)
        if self.spec.env_id.startswith("Blackjack"):
            raise OracleUnavailable("Blackjack has no oracle: its next state depends on random card draws")
        if self.spec.family not in SIM_STATES:
            raise OracleUnavailable(f"{self.spec.env_id}: no way to save and restore a {self.spec.family} simulator")
        self.sim_state = SIM_STATES[self.spec.family]
        self.env = make_env(self.spec.env_id)
        self.env.reset(seed=0)
        self.sim = self.env.unwrapped
        self.steps = 0

    def state_of(self, env) -> np.ndarray:
        """The simulator state of another instance of the same env (the one being evaluated)."""
        return self.sim_state.save(env.unwrapped)

    def step_batch(self, states: np.ndarray, actions: np.ndarray):
        """Step the true simulator from each state: (next_states, rewards, dones)."""
        from codeworld.envs import decode_action

        n = len(states)
        next_states = np.empty_like(states, dtype=np.float64)
        rewards = np.empty(n)
        dones = np.empty(n, dtype=np.uint8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(n):
                self.sim_state.restore(self.sim, states[i])
                _obs, reward, terminated, _trunc, _info = self.sim.step(decode_action(self.spec.env_id, actions[i]))
                next_states[i] = self.sim_state.save(self.sim)
                rewards[i] = float(reward)
                dones[i] = bool(terminated)
        self.steps += n
        return next_states, rewards, dones

    def close(self) -> None:
        self.env.close()

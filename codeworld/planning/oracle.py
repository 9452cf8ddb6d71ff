"""The oracle: the true simulator as a planner's model, restored from saved simulator state.

The planner's state for the oracle is the simulator's own state vector (not the observation):

* classic control: ``env.unwrapped.state`` (CartPole, MountainCar, Pendulum, Acrobot);
* toy text: the state index ``env.unwrapped.s`` (Taxi, CliffWalking);
* MuJoCo: the integration state of ``mj_getState`` (time, qpos, qvel, actuator activations,
  the warm start of the constraint solver, controls), restored with ``mj_setState`` and
  ``mj_forward``: no deep copies;
* any other environment whose state can be saved and restored only as a whole: a deep copy, kept
  by the oracle, whose planner state is the copy's index (`codeworld.envs.simstate.DEEP_COPY`).

The spec of each environment says which of these applies (`EnvSpec.sim_state`), or why none does
(`EnvSpec.oracle_note`: Blackjack's next state depends on cards drawn from the env's random
generator; logged data has no simulator).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from codeworld.envs.simstate import SimState

if TYPE_CHECKING:
    from codeworld.envs import EnvSpec


class OracleUnavailable(ValueError):
    """The environment's simulator cannot be saved and restored, so it has no oracle."""


class OracleModel:
    """The true simulator of an environment behind a batched step (in the parent: it is trusted).

    Args:
        env: the environment's spec, or its id.

    Raises:
        OracleUnavailable: its simulator cannot be saved and restored (the message says why).
    """

    def __init__(self, env: EnvSpec | str):
        from codeworld.envs import resolve_env

        self.spec = resolve_env(env)
        if not self.spec.has_oracle:
            raise OracleUnavailable(self.spec.oracle_note)
        self.sim_state: SimState = self.spec.sim_state
        # A mechanism whose saved state is not a vector (a deep copy): the planner's state is the
        # index of the saved object here.
        self._saved: list[Any] | None = None if self.sim_state.vector else []
        self.env = self.spec.make()
        self.env.reset(seed=0)
        self.sim = self.env.unwrapped
        self.steps = 0
        # A stochastic simulator restored with its random generator would replay the real env's
        # next draws (a clairvoyant oracle): it gets fresh ones from here at every simulated step.
        self._rng = np.random.default_rng(0) if self.spec.stochastic else None

    def _save(self, env) -> np.ndarray:
        state = self.sim_state.save(env)
        if self._saved is None:
            return state
        self._saved.append(state)
        return np.array([float(len(self._saved) - 1)])

    def _restore(self, vector: np.ndarray) -> None:
        if self._saved is None:
            self.sim_state.restore(self.sim, vector)
        else:
            self.sim_state.restore(self.sim, self._saved[int(vector[0])])

    def state_of(self, env) -> np.ndarray:
        """The simulator state of another instance of the same env (the one being evaluated).

        A planner searches from this state afresh at every decision, so the saved copies of the
        previous decision are dropped here.
        """
        if self._saved is not None:
            self._saved.clear()
        return self._save(env.unwrapped)

    def step_batch(self, states: np.ndarray, actions: np.ndarray):
        """Step the true simulator from each state: (next_states, rewards, dones)."""
        n = len(states)
        next_states = np.empty_like(states, dtype=np.float64)
        rewards = np.empty(n)
        dones = np.empty(n, dtype=np.uint8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(n):
                self._restore(states[i])
                if self._rng is not None:
                    self.sim.np_random = np.random.default_rng(int(self._rng.integers(2**63)))
                _obs, reward, terminated, _trunc, _info = self.sim.step(self.spec.decode_action(actions[i]))
                next_states[i] = self._save(self.sim)
                rewards[i] = float(reward)
                dones[i] = bool(terminated)
        self.steps += n
        return next_states, rewards, dones

    def close(self) -> None:
        self.env.close()

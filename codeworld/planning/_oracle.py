"""The oracle: the true simulator as a planner's model, restored from saved simulator state.

The planner's state for the oracle is the simulator's own state vector (not the observation):

* classic control: ``env.unwrapped.state`` (CartPole, MountainCar, Pendulum, Acrobot);
* toy text: the state index ``env.unwrapped.s`` (Taxi, CliffWalking);
* MuJoCo: the integration state of ``mj_getState`` (time, qpos, qvel, actuator activations,
  the warm start of the constraint solver, controls), restored with ``mj_setState`` and
  ``mj_forward``: no deep copies. An environment whose reward and termination are known over a
  batch (`codeworld.envs._mujoco_tasks`) is stepped natively instead: every candidate at once on
  MuJoCo's thread pool (`MujocoBatchStep`), its state followed by the few numbers its next reward
  reads from before the step (the task's carry);
* any other environment whose state can be saved and restored only as a whole: a deep copy, kept
  by the oracle, whose planner state is the copy's index (`codeworld.envs._simstate.DEEP_COPY`).

The spec of each environment says which of these applies (`EnvSpec.sim_state`), or why none does
(`EnvSpec.oracle_note`: Blackjack's next state depends on cards drawn from the env's random
generator; logged data has no simulator).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from codeworld.envs import _simstate as simstate
from codeworld.envs._simstate import SimState

if TYPE_CHECKING:
    from codeworld.envs import EnvSpec


class OracleUnavailable(ValueError):
    """The environment's simulator cannot be saved and restored, so it has no oracle."""


def _has_mujoco_batch() -> bool:
    """Whether the installed MuJoCo has ``mujoco.batch`` (MuJoCo 4; older ones step one at a time)."""
    try:
        from mujoco import batch  # noqa: F401
    except ImportError:
        return False
    return True


class MujocoBatchStep:
    """Many copies of a Gymnasium MuJoCo environment stepped at once on MuJoCo's thread pool.

    ``mujoco.batch.Batch`` keeps one integration state row per copy and steps the rows in C on
    `threads` threads; each step repeats the action for the environment's ``frame_skip``
    substeps, as ``do_simulation`` does (the action written to ``ctrl`` as float32, as the env
    gets it, and clamped to the actuators' ranges by MuJoCo itself, as in the env; CEM's samples
    are already clipped to the action box), and the reward and termination come from the task
    (`codeworld.envs._mujoco_tasks`), vectorised. A planner state is the ``mjSTATE_INTEGRATION``
    vector followed by the task's carry. States, rewards and terminations equal the environment's
    own ``step`` (tests/test_native_oracle.py).

    Args:
        env: the unwrapped Gymnasium environment (its model is shared, not copied).
        task: its batched reward.
        threads: MuJoCo threads (0: every core this process may use). Results do not depend on it.
    """

    def __init__(self, env, task, threads: int = 0):
        import mujoco

        from codeworld.kernels._cem import resolve_threads

        self.env = env
        self.task = task
        self.threads = resolve_threads(threads)
        self.spec = mujoco.mjtState.mjSTATE_INTEGRATION
        self.nstate = mujoco.mj_stateSize(env.model, self.spec)
        self._batch = None
        self._data = None  # a scratch MjData for the forces computed after a step

    def state_of(self, data) -> np.ndarray:
        """The planner state of an ``MjData`` of the environment's model, as it is now."""
        import mujoco

        state = np.empty(self.nstate)
        mujoco.mj_getState(self.env.model, data, state, self.spec)
        return np.concatenate([state, self.task.carry_of(self.env, self.task.fields_of(data), 1)[0]])

    def _batch_for(self, n: int):
        from mujoco import batch as mujoco_batch

        if self._batch is None or self._batch.nsim < n:
            # A persistent batch keeps each copy's whole MjData, which the forces computed after
            # the step (mj_rnePostConstraint) read.
            self._batch = mujoco_batch.Batch(self.env.model, nsim=n, nthread=self.threads,
                                             persistent=self.task.post_constraint)
            # A derived field is copied out by the calls made after it is bound: bind them now.
            for name in ("qpos", "qvel", "ctrl", *self.task.fields):
                self._batch.bind(name)
        return self._batch

    def _fields(self, batch, n: int) -> dict[str, np.ndarray]:
        if not self.task.post_constraint:
            return {name: batch.bind(name)[:n] for name in self.task.fields}
        import mujoco

        if self._data is None:
            self._data = mujoco.MjData(self.env.model)
        out = {name: np.empty((n, *np.shape(getattr(self._data, name)))) for name in self.task.fields}
        for i in range(n):
            batch.get_data(i, self._data)
            mujoco.mj_rnePostConstraint(self.env.model, self._data)
            for name in self.task.fields:
                out[name][i] = getattr(self._data, name)
        return out

    def __call__(self, states: np.ndarray, actions: np.ndarray):
        """Step each state with its action: (next_states, rewards, dones)."""
        from codeworld.envs._mujoco_tasks import BatchStep

        states = np.asarray(states, dtype=np.float64)
        n = len(states)
        batch = self._batch_for(n)
        ids = None if n == batch.nsim else np.arange(n)
        batch.state[:n] = states[:, :self.nstate]
        qpos0 = batch.bind("qpos")[:n].copy()
        # The action as the environment passes it on (float32, EnvSpec.decode_action).
        action = np.asarray(actions, dtype=np.float32).reshape(n, -1)
        batch.bind("ctrl")[:n] = action
        batch.step(ids, nstep=self.env.frame_skip)
        fields = self._fields(batch, n)
        step = BatchStep(self.env, qpos0, states[:, self.nstate:], batch.bind("qpos")[:n],
                         batch.bind("qvel")[:n], action, batch.bind("ctrl")[:n], fields)
        rewards, terminated = self.task.reward(step)
        carry = self.task.carry_of(self.env, fields, n)
        next_states = np.concatenate([batch.state[:n], carry], axis=1)
        return next_states, np.asarray(rewards, dtype=np.float64), np.asarray(terminated, dtype=np.uint8)


class OracleModel:
    """The true simulator of an environment behind a batched step (in the parent: it is trusted).

    Args:
        env: the environment's spec, or its id.
        native: step a MuJoCo environment whose reward is known over a batch through
            `MujocoBatchStep` (False: one copy at a time through the environment's ``step``, the
            path every other environment takes).
        threads: MuJoCo threads of the native path (0: every core this process may use).

    Raises:
        OracleUnavailable: its simulator cannot be saved and restored (the message says why).
    """

    def __init__(self, env: EnvSpec | str, native: bool = True, threads: int = 0):
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
        self._native: MujocoBatchStep | None = None
        if native and not self.spec.stochastic and self.sim_state is simstate.MUJOCO:
            from codeworld.envs._mujoco_tasks import task_of

            task = task_of(self.sim)
            if task is not None and _has_mujoco_batch():
                self._native = MujocoBatchStep(self.sim, task, threads)

    @property
    def native(self) -> bool:
        """Whether the simulator is stepped natively, many copies at once (`MujocoBatchStep`)."""
        return self._native is not None

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
        if self._native is not None:
            return self._native.state_of(env.unwrapped.data)
        if self._saved is not None:
            self._saved.clear()
        return self._save(env.unwrapped)

    def step_batch(self, states: np.ndarray, actions: np.ndarray):
        """Step the true simulator from each state: (next_states, rewards, dones)."""
        n = len(states)
        if self._native is not None:
            self.steps += n
            return self._native(states, actions)
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
        self._native = None
        self.env.close()

"""The rewards and terminations of Gymnasium's MuJoCo environments, vectorised over a batch.

The native oracle (`codeworld.planning._oracle`) steps many copies of a MuJoCo simulator at once on
MuJoCo's own thread pool (``mujoco.batch``) and needs each environment's reward and termination
for every copy without calling the environment's ``step``. This module holds them, one `MujocoTask`
per Gymnasium environment class, written from that class's ``step`` (Gymnasium 1.4:
``gymnasium/envs/mujoco/*_v4.py`` and ``pusher_v5.py``, which codeworld's Pusher-v4 is made from)
and reading the weights and ranges from the environment instance, so an environment made with
other keyword arguments is scored by its own. An environment class not listed here has no
batched task, and the oracle steps it one copy at a time through ``step``.

What a step sees, as the Gymnasium class sees it:

* positions and velocities after the step (``qpos``, ``qvel``) and before it (``qpos0``);
* the action as the simulator got it (float32, `EnvSpec.decode_action`) and ``data.ctrl``;
* fields MuJoCo derives from the state (``xpos``, ``xipos``, ``site_xpos``, ``cfrc_ext``): after
  ``mj_step`` they describe the state before the step's last substep, and MuJoCo's batch gives
  them as ``mj_step`` leaves them, so they match the environment's;
* a few numbers some rewards read from the derived fields *before* the step (Ant's torso, the
  Humanoid's centre of mass, Reacher's fingertip-to-target vector): the *carry*, computed after
  each step for the next one and, for the first, from the real environment's ``MjData``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass
class BatchStep:
    """One step of n copies of a simulator, as its reward needs it (arrays with a leading n).

    Attributes:
        env: the unwrapped Gymnasium environment (weights, ranges, model, body ids).
        qpos0: positions before the step.
        carry0: the task's carry before the step (n, 0 when it has none).
        qpos, qvel: positions and velocities after the step.
        action: the action as the simulator got it (float32, as the environment computes its
            control cost).
        ctrl: ``data.ctrl`` after the step (the action as float64).
        fields: the derived fields the task names, after the step.
    """

    env: Any
    qpos0: np.ndarray
    carry0: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    action: np.ndarray
    ctrl: np.ndarray
    fields: dict[str, np.ndarray]


Reward = Callable[[BatchStep], tuple[np.ndarray, np.ndarray]]
Carry = Callable[[Any, dict[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class MujocoTask:
    """A Gymnasium MuJoCo environment's reward and termination over a batch.

    Attributes:
        fields: the derived ``MjData`` fields the reward or the carry reads.
        reward: ``reward(step) -> (rewards (n,), terminated (n,) bool)``.
        carry: ``carry(env, fields) -> (n, k)``: what the next step's reward reads from before it;
            None when nothing.
        post_constraint: the reward reads forces MuJoCo computes only in
            ``mj_rnePostConstraint`` (``cfrc_ext``), which the environment calls after each step.
        applies: ``applies(env)``: whether the task covers this instance (None: always); one made
            with options the task does not model steps through ``step``.
    """

    fields: tuple[str, ...]
    reward: Reward
    carry: Carry | None = None
    post_constraint: bool = False
    applies: Callable[[Any], bool] | None = None

    def carry_of(self, env, fields: dict[str, np.ndarray], n: int) -> np.ndarray:
        """The carry of n states from their derived fields ((n, 0) for a task without one)."""
        if self.carry is None:
            return np.zeros((n, 0))
        return np.asarray(self.carry(env, fields), dtype=np.float64).reshape(n, -1)

    def fields_of(self, data) -> dict[str, np.ndarray]:
        """The task's derived fields of one ``MjData``, with a leading axis of 1."""
        return {name: np.asarray(getattr(data, name))[None].copy() for name in self.fields}


# -- pieces the environments share ---------------------------------------------------------------


def _ctrl_cost(step: BatchStep, weight: float) -> np.ndarray:
    """``weight * sum(square(action))`` in the action's float32, as the environments compute it."""
    return (weight * np.sum(np.square(step.action), axis=1)).astype(np.float64)


def _healthy_reward(env, healthy: np.ndarray) -> np.ndarray:
    return (healthy | bool(env._terminate_when_unhealthy)).astype(np.float64) * env._healthy_reward


def _terminated(env, healthy: np.ndarray) -> np.ndarray:
    return ~healthy if env._terminate_when_unhealthy else np.zeros(len(healthy), bool)


def _in(x: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    """``low < x < high``, elementwise."""
    low, high = bounds
    return (low < x) & (x < high)


def _body(env, name: str) -> int:
    import mujoco

    return mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_BODY, name)


# -- the environments ----------------------------------------------------------------------------


def _forward_x(step: BatchStep) -> np.ndarray:
    return (step.qpos[:, 0] - step.qpos0[:, 0]) / step.env.dt


def _half_cheetah(step: BatchStep):
    env = step.env
    reward = env._forward_reward_weight * _forward_x(step) - _ctrl_cost(step, env._ctrl_cost_weight)
    return reward, np.zeros(len(reward), bool)


def _swimmer(step: BatchStep):
    return _half_cheetah(step)  # the same terms: forward velocity of qpos[0], control cost


def _hopper(step: BatchStep):
    env = step.env
    state = np.concatenate([step.qpos, step.qvel], axis=1)[:, 2:]
    healthy = (np.all(_in(state, env._healthy_state_range), axis=1)
               & _in(step.qpos[:, 1], env._healthy_z_range) & _in(step.qpos[:, 2], env._healthy_angle_range))
    reward = (env._forward_reward_weight * _forward_x(step) + _healthy_reward(env, healthy)
              - _ctrl_cost(step, env._ctrl_cost_weight))
    return reward, _terminated(env, healthy)


def _walker(step: BatchStep):
    env = step.env
    healthy = _in(step.qpos[:, 1], env._healthy_z_range) & _in(step.qpos[:, 2], env._healthy_angle_range)
    reward = (env._forward_reward_weight * _forward_x(step) + _healthy_reward(env, healthy)
              - _ctrl_cost(step, env._ctrl_cost_weight))
    return reward, _terminated(env, healthy)


def _torso_xy(env, fields):
    return fields["xpos"][:, _body(env, "torso"), :2]


def _ant(step: BatchStep):
    env = step.env
    x_velocity = (_torso_xy(env, step.fields)[:, 0] - step.carry0[:, 0]) / env.dt
    state = np.concatenate([step.qpos, step.qvel], axis=1)
    low, high = env._healthy_z_range
    healthy = np.all(np.isfinite(state), axis=1) & (low <= state[:, 2]) & (state[:, 2] <= high)
    reward = x_velocity + _healthy_reward(env, healthy) - _ctrl_cost(step, env._ctrl_cost_weight)
    return reward, _terminated(env, healthy)


def _mass_centre_xy(env, fields):
    mass = env.model.body_mass
    return (np.einsum("b,nbj->nj", mass, fields["xipos"]) / mass.sum())[:, :2]


def _humanoid(step: BatchStep):
    env = step.env
    x_velocity = (_mass_centre_xy(env, step.fields)[:, 0] - step.carry0[:, 0]) / env.dt
    healthy = _in(step.qpos[:, 2], env._healthy_z_range)
    ctrl_cost = env._ctrl_cost_weight * np.sum(np.square(step.ctrl), axis=1)
    reward = env._forward_reward_weight * x_velocity + _healthy_reward(env, healthy) - ctrl_cost
    return reward, _terminated(env, healthy)


def _humanoid_standup(step: BatchStep):
    env = step.env
    uph_cost = step.qpos[:, 2] / env.model.opt.timestep
    ctrl_cost = 0.1 * np.sum(np.square(step.ctrl), axis=1)
    impact_cost = np.minimum(0.5e-6 * np.sum(np.square(step.fields["cfrc_ext"]), axis=(1, 2)), 10)
    reward = uph_cost - ctrl_cost - impact_cost + 1
    return reward, np.zeros(len(reward), bool)


def _fingertip_to_target(env, fields):
    xpos = fields["xpos"]
    return xpos[:, _body(env, "fingertip")] - xpos[:, _body(env, "target")]


def _reacher(step: BatchStep):
    # The reward is taken before the step: the distance the carry holds, the action's cost.
    reward = -np.linalg.norm(step.carry0, axis=1) - _ctrl_cost(step, 1.0)
    return reward, np.zeros(len(reward), bool)


def _pusher(step: BatchStep):
    env = step.env
    xpos = step.fields["xpos"]
    obj = xpos[:, _body(env, "object")]
    near = -np.linalg.norm(obj - xpos[:, _body(env, "tips_arm")], axis=1) * env._reward_near_weight
    dist = -np.linalg.norm(obj - xpos[:, _body(env, "goal")], axis=1) * env._reward_dist_weight
    ctrl = -_ctrl_cost(step, 1.0) * env._reward_control_weight
    return dist + ctrl + near, np.zeros(len(dist), bool)


def _inverted_pendulum(step: BatchStep):
    obs = np.concatenate([step.qpos, step.qvel], axis=1)
    terminated = ~np.all(np.isfinite(obs), axis=1) | (np.abs(obs[:, 1]) > 0.2)
    return np.ones(len(obs)), terminated


def _inverted_double_pendulum(step: BatchStep):
    site = step.fields["site_xpos"][:, 0]
    x, y = site[:, 0], site[:, 2]
    v1, v2 = step.qvel[:, 1], step.qvel[:, 2]
    reward = 10 - (0.01 * x**2 + (y - 2) ** 2) - (1e-3 * v1**2 + 5e-3 * v2**2)
    return reward, y <= 1


def _tasks() -> dict[type, MujocoTask]:
    from gymnasium.envs.mujoco import (ant_v4, half_cheetah_v4, hopper_v4, humanoid_v4, humanoidstandup_v4,
                                       inverted_double_pendulum_v4, inverted_pendulum_v4, pusher_v5, reacher_v4,
                                       swimmer_v4, walker2d_v4)

    return {
        half_cheetah_v4.HalfCheetahEnv: MujocoTask((), _half_cheetah),
        swimmer_v4.SwimmerEnv: MujocoTask((), _swimmer),
        hopper_v4.HopperEnv: MujocoTask((), _hopper),
        walker2d_v4.Walker2dEnv: MujocoTask((), _walker),
        ant_v4.AntEnv: MujocoTask(("xpos",), _ant, carry=_torso_xy,
                                   applies=lambda env: not env._use_contact_forces),
        humanoid_v4.HumanoidEnv: MujocoTask(("xipos",), _humanoid, carry=_mass_centre_xy),
        humanoidstandup_v4.HumanoidStandupEnv: MujocoTask(("cfrc_ext",), _humanoid_standup,
                                                         post_constraint=True),
        reacher_v4.ReacherEnv: MujocoTask(("xpos",), _reacher, carry=_fingertip_to_target),
        pusher_v5.PusherEnv: MujocoTask(("xpos",), _pusher),
        inverted_pendulum_v4.InvertedPendulumEnv: MujocoTask((), _inverted_pendulum),
        inverted_double_pendulum_v4.InvertedDoublePendulumEnv: MujocoTask(("site_xpos",),
                                                                          _inverted_double_pendulum),
    }


_TASKS: dict[type, MujocoTask] | None = None


def task_of(env) -> MujocoTask | None:
    """The batched task of an (unwrapped) Gymnasium MuJoCo environment, or None (exact class only:
    a subclass may change the reward)."""
    global _TASKS
    if _TASKS is None:
        try:
            _TASKS = _tasks()
        except ImportError:  # Gymnasium without its MuJoCo environments
            _TASKS = {}
    task = _TASKS.get(type(env))
    return task if task is not None and (task.applies is None or task.applies(env)) else None

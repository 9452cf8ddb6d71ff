"""Saving and restoring a simulator's state: the one mechanism the oracle and the collector share.

A `SimState` says how to save the state of an unwrapped Gymnasium environment and put it back.
Each environment spec carries the one that works for it (or None, with the reason):

* ``classic_control``: the ``state`` attribute (CartPole, MountainCar, Pendulum, Acrobot, and any
  environment that keeps its whole state there), saved as a float64 vector;
* ``toy_text``: the state index ``s`` (Taxi, CliffWalking, FrozenLake, RTFM);
* ``mujoco``: the integration state of ``mj_getState`` (time, qpos, qvel, actuator activations,
  the warm start of the constraint solver, controls), restored with ``mj_setState`` and
  ``mj_forward``;
* ``deep_copy``: a deep copy of every attribute of the environment (its random generator
  included), for an environment with none of the above; the saved state is an opaque object.

`ATTRIBUTE_COPY` is the snapshot the collector of the committed CWMB buffers uses (the whole
``MjData`` for MuJoCo, else deep copies of a few named attributes with the random generator): it is
kept as it is so that those buffers regenerate byte for byte.

A mechanism is only given to an environment that is not in the CWMB registry after
`verify_restore` has checked, on the real environment, that restoring a saved state reproduces the
transitions that followed it.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class SimState:
    """How to save and restore one kind of simulator.

    Attributes:
        name: the mechanism's name (``"classic_control"``, ``"toy_text"``, ``"mujoco"``,
            ``"deep_copy"``, ``"attribute_copy"``).
        save: ``save(unwrapped_env) -> state``.
        restore: ``restore(unwrapped_env, state)``.
        vector: whether the saved state is a float64 vector (the oracle's planner state); when
            not, the oracle keeps the saved objects and plans over their indices.
    """

    name: str
    save: Callable[[Any], Any]
    restore: Callable[[Any, Any], None]
    vector: bool = True


def _save_classic(env) -> np.ndarray:
    return np.array(env.state, dtype=np.float64).ravel()


def _state_dtype(old: np.ndarray):
    """The state's own float dtype (float32 for some environments), else float64."""
    return old.dtype if np.issubdtype(old.dtype, np.floating) else np.float64


def _restore_classic(env, vector: np.ndarray) -> None:
    old = np.asarray(env.state)
    env.state = np.array(vector, dtype=_state_dtype(old)).reshape(old.shape)
    if hasattr(env, "steps_beyond_terminated"):  # CartPole warns when stepped after termination
        env.steps_beyond_terminated = None


def _save_toy_text(env) -> np.ndarray:
    return np.array([float(env.s)])


def _restore_toy_text(env, vector: np.ndarray) -> None:
    env.s = int(round(float(np.asarray(vector).reshape(-1)[0])))
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


# Attributes a deep copy leaves alone: rendering handles, which cannot be copied and are no state.
_NOT_STATE = ("render_mode", "screen", "clock", "window", "viewer", "renderer", "mujoco_renderer",
              "isopen", "metadata", "spec")


def _save_deep_copy(env) -> dict:
    return copy.deepcopy({k: v for k, v in vars(env).items() if k not in _NOT_STATE})


def _restore_deep_copy(env, saved: dict) -> None:
    for key, value in copy.deepcopy(saved).items():
        setattr(env, key, value)


# The attributes that hold a toy-text or classic-control simulator's mutable state in the CWMB
# collector's snapshot (the rest, such as Taxi's transition table, is fixed and too large to copy
# at every planning step).
_STATE_ATTRIBUTES = ("s", "lastaction", "player", "dealer", "state", "steps_beyond_terminated",
                     "last_u", "_np_random")


def _is_mujoco(env) -> bool:
    return hasattr(env, "model") and hasattr(env, "data")


def _save_attributes(env) -> Any:
    if _is_mujoco(env):
        import mujoco

        snapshot = mujoco.MjData(env.model)
        mujoco.mj_copyData(snapshot, env.model, env.data)
        return snapshot
    return {k: copy.deepcopy(v) for k, v in vars(env).items() if k in _STATE_ATTRIBUTES}


def _restore_attributes(env, saved: Any) -> None:
    if _is_mujoco(env):
        import mujoco

        mujoco.mj_copyData(env.data, env.model, saved)
    else:
        for key, value in saved.items():
            setattr(env, key, copy.deepcopy(value))


CLASSIC_CONTROL = SimState("classic_control", _save_classic, _restore_classic)
TOY_TEXT = SimState("toy_text", _save_toy_text, _restore_toy_text)
MUJOCO = SimState("mujoco", _save_mujoco, _restore_mujoco)
DEEP_COPY = SimState("deep_copy", _save_deep_copy, _restore_deep_copy, vector=False)
ATTRIBUTE_COPY = SimState("attribute_copy", _save_attributes, _restore_attributes, vector=False)


def candidates(env) -> list[SimState]:
    """The mechanisms that may fit an unwrapped env, most specific first (to be verified)."""
    out = []
    if _is_mujoco(env):
        out.append(MUJOCO)
    if isinstance(getattr(env, "s", None), (int, np.integer)):
        out.append(TOY_TEXT)
    state = getattr(env, "state", None)
    if state is not None:
        try:
            if np.asarray(state, dtype=np.float64).size > 0:
                out.append(CLASSIC_CONTROL)
        except (TypeError, ValueError):
            pass
    out.append(DEEP_COPY)
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal observations, rewards or flags (nested tuples and dicts of arrays allowed)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(map(_same, a, b))
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except (TypeError, ValueError):
        return a == b


def rollout(env, actions: list) -> list:
    """Step the unwrapped `env` through `actions` (stopping at termination): the step results."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for action in actions:
            obs, reward, terminated, _truncated, _info = env.step(action)
            out.append((obs, float(reward), bool(terminated)))
            if terminated:
                break
    return out


def verify_restore(env, sim_state: SimState, actions: list, checkpoints: int = 3) -> str | None:
    """Check that restoring a saved state replays the same transitions; None when it does.

    From a few points of a trajectory of `actions` on the unwrapped `env` (already reset), the
    state is saved, a few steps are taken, the state is restored and the same steps are taken
    again: they must give the same observations, rewards and terminations.

    Returns:
        None, or why the mechanism does not restore this environment.
    """
    span = max(1, len(actions) // (checkpoints + 1))
    position = 0
    for _ in range(checkpoints):
        try:
            saved = sim_state.save(env)
            first = rollout(env, actions[position:position + span])
            sim_state.restore(env, saved)
            again = rollout(env, actions[position:position + span])
        except Exception as exc:  # an attribute of the wrong kind, an uncopyable object...
            return f"{sim_state.name}: {type(exc).__name__}: {exc}"
        if not _same([r for r in first], [r for r in again]):
            return f"{sim_state.name}: restoring a saved state did not reproduce the same steps"
        if first and first[-1][2]:
            return None  # the episode ended: what was checked is enough
        position += span
    return None


def draws_random_numbers(env, sim_state: SimState, actions: list) -> bool:
    """Whether the env's transitions depend on its random generator: from one saved state, the
    same actions under two different seeds of ``np_random`` give different steps."""
    saved = sim_state.save(env)
    outcomes = []
    for seed in range(8):
        sim_state.restore(env, saved)
        env.np_random = np.random.default_rng(seed)
        outcomes.append(rollout(env, actions))
    sim_state.restore(env, saved)
    return any(not _same(outcomes[0], other) for other in outcomes[1:])

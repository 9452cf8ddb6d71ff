"""Specs of environments outside the CWMB registry, derived from their Gymnasium spaces.

Any environment ``gymnasium.make`` can make is accepted by its id, with keyword arguments: the id
``"FrozenLake-v1"`` with ``is_slippery=False`` is the environment ``FrozenLake-v1,is_slippery=false``
(`canonical_id`). That string is its id everywhere in codeworld (buffers are named by it, runs
record it), and `get_spec` rebuilds the spec from it in any process (`resolve_spec` is the
registry's resolver of such ids). ``module:EnvId`` imports the module that registers the
environment first, as ``gymnasium.make`` does. `env_spec` takes the keyword arguments as Python's;
`register_env` makes an environment class known at run time.

What is derived (`derive_spec`):

* the encoding of observations as a flat float64 state: ``Discrete`` is one number, ``Box``,
  ``MultiDiscrete`` and ``MultiBinary`` are flattened, ``Tuple`` and ``Dict`` are the concatenation
  of their parts (a ``Dict``'s keys name the numbers in the prompts); any other space is an
  `UnsupportedSpaceError` naming it;
* the actions: ``Discrete`` (MCTS) or a bounded ``Box`` (CEM); ``MultiDiscrete`` and
  ``MultiBinary`` action spaces of at most `MAX_JOINT_ACTIONS` combinations become one discrete
  action (the index of the combination, last component fastest);
* tolerances from the observation's dtype (integers exact, float32 to a few ulps, float64 tight);
* how to save and restore the simulator (`codeworld.envs._simstate`: ``mujoco``, ``toy_text``
  ``s``, ``classic_control`` ``state``, else a deep copy), each verified on the real environment
  to replay the same steps after a restore; it gives the oracle and the paper's collection planner
  (an environment whose steps depend on its random generator is marked stochastic, and the oracle
  then draws fresh random numbers at each simulated step instead of the real env's next ones);
* how to set the simulator from an observation (the ceiling): the ``s`` index of a discrete
  observation, a ``state`` that the observation is, or MuJoCo's ``qpos``/``qvel`` read from it;
  verified to reproduce recorded transitions. Where none fits, the reason is kept and reported.
"""

from __future__ import annotations

import importlib
import json
import re
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from codeworld.envs import _simstate as simstate
from codeworld.envs.registry import (
    CEM,
    CONTINUOUS,
    DISCRETE,
    EXACT,
    FLOAT32,
    FLOAT64_SIM,
    MCTS,
    EnvSpec,
    UnknownEnvError,
    mujoco_setter,
    register_spec,
    resolve_env,
    runtime_spec,
    unknown_env_error,
)

MAX_JOINT_ACTIONS = 4096
SUPPORTED_SPACES = "Discrete, Box, MultiDiscrete, MultiBinary, Tuple, Dict"


class UnsupportedSpaceError(ValueError):
    """An observation or action space codeworld cannot encode (the message is one line)."""


# ------------------------------------------------------------------------------ ids and kwargs


def parse_value(text: str) -> Any:
    """A keyword argument's value from text: JSON (``false``, ``3``, ``[1, 2]``), Python's
    ``True``/``False``/``None``, else the text itself."""
    text = text.strip()
    python = {"True": True, "False": False, "None": None}
    if text in python:
        return python[text]
    try:
        return json.loads(text)
    except ValueError:
        return text


def format_value(value: Any) -> str:
    """The text of a value in a canonical id (a plain string unquoted when that reads back the same)."""
    if isinstance(value, str) and "," not in value and parse_value(value) == value:
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def split_items(text: str) -> list[str]:
    """Split ``a=1,b=[1,2],c="x,y"`` at the commas outside brackets and quotes."""
    items, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == "," and depth == 0:
            items.append("".join(current))
            current = []
            continue
        current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def parse_kwargs(items: list[str] | str | None) -> dict[str, Any]:
    """``["is_slippery=false", "map_name=4x4,size=3"]`` as keyword arguments.

    Raises:
        ValueError: an item without ``=``.
    """
    if items is None:
        return {}
    if isinstance(items, str):
        items = [items]
    out: dict[str, Any] = {}
    for chunk in items:
        for item in split_items(chunk):
            key, sep, value = item.partition("=")
            if not sep or not key.strip().isidentifier():
                raise ValueError(f"environment keyword arguments are KEY=VALUE, got {item!r}")
            out[key.strip()] = parse_value(value)
    return out


def canonical_id(name: str, kwargs: dict[str, Any] | None = None) -> str:
    """The id of `name` made with `kwargs`: ``name,key=value,...`` with the keys sorted."""
    base, own = split_id(name)
    merged = {**own, **(kwargs or {})}
    return base + "".join(f",{k}={format_value(merged[k])}" for k in sorted(merged))


def split_id(env_id: str) -> tuple[str, dict[str, Any]]:
    """``"FrozenLake-v1,is_slippery=false"`` as ``("FrozenLake-v1", {"is_slippery": False})``."""
    base, sep, rest = env_id.partition(",")
    return base.strip(), parse_kwargs(rest) if sep else {}


def split_module(name: str) -> tuple[str | None, str]:
    """``"mypkg.envs:MyEnv-v0"`` as ``("mypkg.envs", "MyEnv-v0")``; no module: ``(None, name)``."""
    module, sep, gym_id = name.rpartition(":")
    if sep and module and re.fullmatch(r"[A-Za-z_][\w.]*", module):
        return module, gym_id
    return None, name


def safe_name(env_id: str) -> str:
    """`env_id` as a file name (no path separators or shell-unfriendly characters)."""
    return re.sub(r"[^A-Za-z0-9._=,-]+", "_", env_id).strip("_") or "env"


# ------------------------------------------------------------------------------ spaces


@dataclass(frozen=True)
class Layout:
    """How one space becomes (or comes from) a flat float64 vector.

    Attributes:
        size: numbers in the flat vector.
        names: a name for each number ("" where the space has no names).
        exact: whether every number is an integer (compared exactly).
        float32: whether some number is a float32 value.
        encode: ``encode(value) -> list of floats``.
    """

    size: int
    names: tuple[str, ...]
    exact: bool
    float32: bool
    encode: Callable[[Any], list]


def _indexed(prefix: str, shape: tuple[int, ...]) -> tuple[str, ...]:
    if not prefix:
        return ("",) * int(np.prod(shape, dtype=int))
    if shape == ():
        return (prefix,)
    return tuple(f"{prefix}[{','.join(map(str, idx))}]" for idx in np.ndindex(*shape))


def space_layout(space, prefix: str = "", where: str = "observation") -> Layout:
    """The flat encoding of a Gymnasium space (see the module docstring).

    Raises:
        UnsupportedSpaceError: for a space of another kind, naming it.
    """
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        return Layout(1, (prefix,), True, False, lambda v: [float(np.asarray(v).reshape(-1)[0])])
    if isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        shape = tuple(space.shape)
        size = int(np.prod(shape, dtype=int))
        integer = np.issubdtype(space.dtype, np.integer) or np.issubdtype(space.dtype, np.bool_)
        return Layout(size, _indexed(prefix, shape), bool(integer), space.dtype == np.float32,
                      lambda v: np.asarray(v, dtype=np.float64).reshape(-1).tolist())
    if isinstance(space, (spaces.Tuple, spaces.Dict)):
        items = (list(space.spaces.items()) if isinstance(space, spaces.Dict)
                 else list(enumerate(space.spaces)))
        parts = []
        for key, sub in items:
            name = f"{prefix}.{key}" if prefix and isinstance(key, str) else (
                str(key) if isinstance(key, str) else f"{prefix}[{key}]")
            parts.append((key, space_layout(sub, name, where)))

        def encode(value, parts=parts):
            out: list = []
            for key, layout in parts:
                out.extend(layout.encode(value[key]))
            return out

        return Layout(sum(p.size for _, p in parts), tuple(n for _, p in parts for n in p.names),
                      all(p.exact for _, p in parts), any(p.float32 for _, p in parts), encode)
    raise UnsupportedSpaceError(
        f"the {where} space {space} ({type(space).__name__}) is not supported "
        f"(supported: {SUPPORTED_SPACES})")


@dataclass(frozen=True)
class ActionCoding:
    """How a stored action row becomes an action of the environment."""

    discrete: bool
    n_actions: int
    low: tuple[float, ...]
    high: tuple[float, ...]
    decode: Callable[[np.ndarray], Any]
    doc: str


def action_coding(space) -> ActionCoding:
    """The action encoding of a Gymnasium action space (see the module docstring).

    Raises:
        UnsupportedSpaceError: for another kind of space, an unbounded Box, or too many joint actions.
    """
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        doc = f"an int in 0..{int(space.n) - 1}" + (f" (the environment's action minus {start})" if start else "")
        return ActionCoding(True, int(space.n), (), (),
                            lambda a: start + int(round(float(np.asarray(a).reshape(-1)[0]))), doc)
    if isinstance(space, spaces.Box):
        low = np.asarray(space.low, dtype=np.float64).reshape(-1)
        high = np.asarray(space.high, dtype=np.float64).reshape(-1)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise UnsupportedSpaceError(f"the action space {space} (Box) is unbounded; CEM needs finite bounds")
        dtype, shape = space.dtype, tuple(space.shape)
        return ActionCoding(False, 0, tuple(low.tolist()), tuple(high.tolist()),
                            lambda a: np.asarray(a, dtype=dtype).reshape(shape).copy(), "")
    if isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary)):
        if isinstance(space, spaces.MultiBinary):
            nvec = np.full(int(np.prod(space.shape)), 2)
            start = np.zeros_like(nvec)
        else:
            nvec = np.asarray(space.nvec).reshape(-1)
            start = np.asarray(getattr(space, "start", np.zeros_like(nvec))).reshape(-1)
        total = int(np.prod(nvec, dtype=np.int64))
        if total > MAX_JOINT_ACTIONS:
            raise UnsupportedSpaceError(
                f"the action space {space} ({type(space).__name__}) has {total} joint actions "
                f"(at most {MAX_JOINT_ACTIONS} are planned over)")
        shape, dtype = tuple(space.shape), space.dtype

        def decode(a, nvec=nvec, start=start, shape=shape, dtype=dtype):
            index = int(round(float(np.asarray(a).reshape(-1)[0])))
            parts = np.array(np.unravel_index(index, tuple(nvec))) + start
            return parts.astype(dtype).reshape(shape)

        doc = (f"an int in 0..{total - 1}, the index of the joint action: components "
               f"{nvec.tolist()} values each, the last component varying fastest")
        return ActionCoding(True, total, (), (), decode, doc)
    raise UnsupportedSpaceError(f"the action space {space} ({type(space).__name__}) is not supported "
                                "(supported: Discrete, Box, MultiDiscrete, MultiBinary)")


# ------------------------------------------------------------------------------ deriving a spec


def import_module_of(name: str) -> str:
    """Import the module of a ``module:EnvId`` name (if any); return the bare Gymnasium id."""
    module, gym_id = split_module(name)
    if module is not None:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(f"cannot import {module!r} to register {gym_id!r}: {exc}") from None
    return gym_id


def _gym_make(gym_id: str, kwargs: dict[str, Any]):
    import gymnasium as gym

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gym.make(gym_id, **kwargs)


def _action_sequence(coding: ActionCoding, n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    if coding.discrete:
        rows = rng.integers(0, coding.n_actions, size=(n, 1)).astype(np.float64)
    else:
        rows = rng.uniform(coding.low, coding.high, size=(n, len(coding.low)))
    return [coding.decode(row) for row in rows]


def _verified_sim_state(make, coding: ActionCoding) -> tuple[simstate.SimState | None, str, bool]:
    """The first save/restore mechanism verified on the env; (mechanism, why none, stochastic)."""
    env = make()
    try:
        env.reset(seed=0)
        actions = _action_sequence(coding, 30, seed=0)
        failures = []
        for mechanism in simstate.candidates(env.unwrapped):
            why = simstate.verify_restore(env.unwrapped, mechanism, actions)
            if why is None:
                env.reset(seed=0)  # from the start, not from where the check ended (maybe a terminal state)
                return mechanism, "", simstate.draws_random_numbers(env.unwrapped, mechanism, actions)
            failures.append(why)
        return None, ("the simulator's state cannot be saved and restored (" + "; ".join(failures) + ")"), False
    finally:
        env.close()


def _obs_setters(env, layout_size: int, obs_space) -> list[tuple[str, Callable]]:
    """Ways that may set this simulator from an encoded observation (to be verified)."""
    from gymnasium import spaces

    out = []
    if hasattr(env, "model") and hasattr(env, "data"):
        for excluded in range(3):
            if layout_size == env.model.nq - excluded + env.model.nv:
                out.append((f"qpos[{excluded}:] and qvel", mujoco_setter(excluded)))
    if isinstance(obs_space, spaces.Discrete) and isinstance(getattr(env, "s", None), (int, np.integer)):
        start = int(obs_space.start)

        def set_index(env, obs, start=start):
            env.s = int(round(float(obs[0]))) - start
            if hasattr(env, "lastaction"):
                env.lastaction = None

        out.append(("the state index s", set_index))
    state = getattr(env, "state", None)
    if state is not None:
        try:
            old = np.asarray(state)
            shape, dtype = old.shape, simstate._state_dtype(np.asarray(state, dtype=old.dtype))
        except (TypeError, ValueError):
            shape = None
        if shape is not None and int(np.prod(shape, dtype=int)) == layout_size:
            def set_state(env, obs, shape=shape, dtype=dtype):
                env.state = np.array(obs, dtype=dtype).reshape(shape)
                if hasattr(env, "steps_beyond_terminated"):
                    env.steps_beyond_terminated = None

            out.append(("the state attribute", set_state))
    return out


def _close(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> bool:
    return bool(np.all(np.abs(np.asarray(a) - np.asarray(b)) <= atol + rtol * np.abs(np.asarray(b))))


def _verified_setter(make, layout: Layout, coding: ActionCoding, obs_space, tol: dict):
    """A setter from observations that reproduces real transitions; (setter, why none)."""
    env, probe = make(), make()
    try:
        obs, _ = env.reset(seed=1)
        probe.reset(seed=2)
        candidates = _obs_setters(probe.unwrapped, layout.size, obs_space)
        if not candidates:
            return None, ("the observation does not determine the simulator's state (no state "
                          "index s, state attribute or qpos/qvel that it gives)")
        actions = _action_sequence(coding, 20, seed=1)
        records = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for action in actions:
                nxt, reward, terminated, truncated, _ = env.unwrapped.step(action)
                records.append((np.asarray(layout.encode(obs)), action, np.asarray(layout.encode(nxt)),
                                float(reward), bool(terminated)))
                obs = nxt
                if terminated:
                    break
        failures = []
        for name, setter in candidates:
            ok = True
            for state, action, nxt, reward, terminated in records:
                try:
                    setter(probe.unwrapped, state)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        got, got_reward, got_term, _, _ = probe.unwrapped.step(action)
                except Exception:  # the setter does not fit this simulator
                    ok = False
                    break
                if not (_close(layout.encode(got), nxt, tol["state_atol"], tol["state_rtol"])
                        and _close(got_reward, reward, tol["reward_atol"], tol["reward_rtol"])
                        and bool(got_term) == terminated):
                    ok = False
                    break
            if ok:
                return setter, ""
            failures.append(name)
        return None, ("setting the simulator from an observation (" + ", ".join(failures) +
                      ") did not reproduce its transitions: the observation does not determine "
                      "the state, or the dynamics are random")
    finally:
        env.close()
        probe.close()


def _tolerances(layout: Layout) -> dict:
    if layout.exact:
        return dict(EXACT)
    return dict(FLOAT32 if layout.float32 else FLOAT64_SIM)


def _state_doc(layout: Layout) -> str:
    if any(layout.names):
        return f"{layout.size} numbers: " + ", ".join(n or "?" for n in layout.names)
    return ""


def derive_spec(env_id: str) -> EnvSpec:
    """The spec of a Gymnasium environment named by `env_id` (``[module:]Id[,key=value...]``).

    Raises:
        UnknownEnvError: Gymnasium does not know the id (or its module cannot be imported).
        UnsupportedSpaceError: its observation or action space cannot be encoded.
    """
    import gymnasium as gym

    name, kwargs = split_id(env_id)
    try:
        gym_id = import_module_of(name)
        gym.spec(gym_id)
    except ImportError as exc:
        raise UnknownEnvError(str(exc)) from None
    except gym.error.Error:
        raise UnknownEnvError(None) from None
    canonical = canonical_id(name, kwargs)
    try:
        env = _gym_make(gym_id, kwargs)
    except TypeError as exc:  # an unknown keyword argument
        raise ValueError(f"{canonical}: gymnasium.make failed: {exc}") from None
    try:
        layout = space_layout(env.observation_space)
        coding = action_coding(env.action_space)
        unwrapped = env.unwrapped
        mujoco = hasattr(unwrapped, "model") and hasattr(unwrapped, "data")
        max_steps = env.spec.max_episode_steps if env.spec is not None else None
        obs_space = env.observation_space
    except UnsupportedSpaceError as exc:
        raise UnsupportedSpaceError(f"{canonical}: {exc}") from None
    finally:
        env.close()

    def make():
        return _gym_make(gym_id, kwargs)

    tol = _tolerances(layout)
    sim_state, no_oracle, stochastic = _verified_sim_state(make, coding)
    setter, no_ceiling = _verified_setter(make, layout, coding, obs_space, tol)
    family = "mujoco" if mujoco else ("toy_text" if layout.exact else "classic_control")
    return EnvSpec(
        env_id=canonical, paper_id=canonical, gym_id=gym_id, family=family,
        action_kind=DISCRETE if coding.discrete else CONTINUOUS, n_actions=coding.n_actions,
        action_low=coding.low, action_high=coding.high, obs_dim=layout.size,
        action_dim=1 if coding.discrete else len(coding.low),
        planner=MCTS if coding.discrete else CEM, paper_exact=layout.exact,
        max_episode_steps=max_steps, stochastic=stochastic, state_setter=setter,
        gym_kwargs=tuple(sorted(kwargs.items())), module=split_module(name)[0],
        sim_state=sim_state, no_oracle_reason=no_oracle, no_ceiling_reason=no_ceiling,
        obs_encoder=lambda obs: layout.encode(obs), action_decoder=coding.decode,
        state_names=layout.names if any(layout.names) else (), state_doc=_state_doc(layout),
        action_doc=coding.doc, shipped=False, **tol,
    )


def resolve_spec(env_id: str) -> EnvSpec:
    """The spec of a Gymnasium id, for `get_spec` (the registry's last resolver: it takes any id):
    the spec made before under the id's canonical spelling (`canonical_id`), else `derive_spec`'s.

    Raises:
        UnknownEnvError: Gymnasium does not know the id; the message names close CWMB ids.
        UnsupportedSpaceError: its observation or action space cannot be encoded.
    """
    spec = runtime_spec(canonical_id(env_id))
    if spec is not None:
        return spec
    try:
        return derive_spec(env_id)
    except UnknownEnvError as exc:
        raise unknown_env_error(env_id, exc.args[0] if exc.args else None) from None


# ------------------------------------------------------------------------------ run-time environments


def env_spec(env_id: str, **kwargs: Any) -> EnvSpec:
    """The spec of `env_id` made with keyword arguments, e.g. ``env_spec("FrozenLake-v1",
    is_slippery=False)`` (the same as ``get_spec("FrozenLake-v1,is_slippery=false")``)."""
    return resolve_env(canonical_id(env_id, kwargs) if kwargs else env_id)


def register_env(env_id: str, entry_point: Any = None, *, kwargs: dict[str, Any] | None = None,
                 description: str | None = None, max_episode_steps: int | None = None) -> EnvSpec:
    """Make an environment known to codeworld (and to Gymnasium) in this process.

    Args:
        env_id: its Gymnasium id (``module:EnvId`` imports the module that registers it).
        entry_point: the environment class or ``"module:Class"``; registered with Gymnasium under
            `env_id` when Gymnasium does not know the id yet.
        kwargs: keyword arguments it is made with (they become part of its codeworld id).
        description: the description for the LLM (default: the class docstring, cleaned).
        max_episode_steps: Gymnasium's time limit, when registering it.

    Returns:
        Its spec; ``spec.env_id`` is the id every command and function takes.
    """
    import gymnasium as gym

    name, _ = split_id(env_id)
    if entry_point is not None:
        _module, gym_id = split_module(name)
        if gym_id not in gym.registry:
            gym.register(id=gym_id, entry_point=entry_point, max_episode_steps=max_episode_steps)
    spec = env_spec(env_id, **(kwargs or {}))
    if description is not None:
        spec = register_spec(replace(spec, description=description))
    return spec

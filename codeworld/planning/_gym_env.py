"""A code world model as a Gymnasium environment, single (`CodeWorldEnv`) and vectorized (`CodeWorldVectorEnv`).

RL libraries can train inside a learned model with no real interaction: the observation and action
spaces are the real environment's, and every transition is predicted by the model in a sandbox
worker. Start states come from the environment's own resets when it has a simulator (a pool of
seeded resets, made once in this process: resets, not steps), else from the first states of the
recorded episodes (logged data).

The vector env keeps its copies' states inside the worker: one request per ``step`` carries the
actions, and the worker resets the copies that ended (from the pool), steps the others in one
native loop (a compiled model) and sends back states, rewards and flags; observations are decoded
from the states with whole-array operations. Autoreset follows Gymnasium's vector API: next-step
(its default) or same-step (with ``final_obs`` in the infos, as stable-baselines3 expects).

A model that fails (raises, returns something outside the contract, hangs) makes ``step`` raise
`WorldModelError` with the sandbox's record and the copy it failed on: the environment cannot go
on from a missing state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from codeworld._model_worker import loaded_model
from codeworld.sandbox._ops import OpFailure

if TYPE_CHECKING:
    from codeworld.envs import EnvSpec
    from codeworld.sandbox import SandboxLimits

# Seeded resets of the real environment drawn from by `reset` and autoreset (see `StartStates`).
DEFAULT_START_POOL = 1024


class WorldModelError(RuntimeError):
    """The world model failed to predict a transition.

    Attributes:
        result: the `codeworld.sandbox.SandboxResult` of the failed request.
        copy: the index of the copy whose transition failed (vector env), when known.
    """

    def __init__(self, result, copy: int | None = None):
        super().__init__(f"the world model failed: {result.summary()}")
        self.result = result
        self.copy = copy


# -- spaces and observation decoding --------------------------------------------------------------


def _decodable(space: gym.Space) -> bool:
    """Whether an encoded state turns back into an observation of `space` (see `decode_batch`)."""
    if isinstance(space, (gym.spaces.Box, gym.spaces.Discrete)):
        return True
    return isinstance(space, gym.spaces.Tuple) and all(isinstance(s, gym.spaces.Discrete) for s in space)


def model_spaces(spec: EnvSpec, real_env=None, encoded: bool = False) -> tuple[gym.Space, gym.Space]:
    """The (observation, action) spaces a policy trained in the model sees.

    The real environment's spaces when the model's flat encoding maps back to them (a Box, a
    Discrete, a tuple of Discretes; integer or box actions the env takes as they are), else the
    encoding itself: a float64 Box of the state's length, and ``Discrete(n_actions)`` or the action
    box. A logged dataset (no simulator), or `encoded` asked for, gets the encoding.
    """
    obs_space = act_space = None
    if encoded:
        real_env = None
    if real_env is not None and spec.obs_encoder is None and _decodable(real_env.observation_space):
        obs_space = real_env.observation_space
    if real_env is not None and spec.action_decoder is None:
        space = real_env.action_space
        if isinstance(space, gym.spaces.Discrete) and spec.discrete and int(space.start) == 0:
            act_space = space
        elif isinstance(space, gym.spaces.Box) and not spec.discrete and space.shape == (spec.action_dim,):
            act_space = space
    if obs_space is None:
        obs_space = gym.spaces.Box(-np.inf, np.inf, (spec.obs_dim,), np.float64)
    if act_space is None:
        act_space = (gym.spaces.Discrete(spec.n_actions) if spec.discrete else
                     gym.spaces.Box(np.array(spec.action_low, np.float32), np.array(spec.action_high, np.float32)))
    return obs_space, act_space


def decode_batch(space: gym.Space, states: np.ndarray):
    """Encoded states (n, d) back to a batch of observations of `space` (whole-array operations)."""
    n = len(states)
    if isinstance(space, gym.spaces.Box):
        return states.astype(space.dtype).reshape((n,) + space.shape)
    if isinstance(space, gym.spaces.Discrete):
        return np.rint(states[:, 0]).astype(space.dtype)
    if isinstance(space, gym.spaces.Tuple):
        return tuple(np.rint(states[:, i]).astype(s.dtype) for i, s in enumerate(space))
    raise TypeError(f"cannot decode an observation of {space}")


def _decode_obs(space: gym.Space, flat: np.ndarray):
    """One encoded (flat float64) state back to an observation of `space`."""
    if isinstance(space, gym.spaces.Box):
        return np.asarray(flat, dtype=space.dtype).reshape(space.shape)
    if isinstance(space, gym.spaces.Discrete):
        return space.dtype.type(int(round(float(flat[0]))))
    if isinstance(space, gym.spaces.Tuple):
        return tuple(int(round(float(x))) for x in flat)
    raise TypeError(f"cannot decode an observation of {space}")


# -- start states ---------------------------------------------------------------------------------


class StartStates:
    """Where episodes in the model start: seeded resets of the real environment, or recorded starts.

    With a simulator, `pool(seed)` is ``size`` encoded observations of ``real.reset(seed=seed + i)``
    (seed None: unseeded resets), made once per seed; without one, the first state of every
    recorded episode of the environment's default buffer.

    Args:
        spec: the environment's spec.
        real_env: the real environment (None for logged data).
        size: how many resets make a pool.
    """

    def __init__(self, spec: EnvSpec, real_env=None, size: int = DEFAULT_START_POOL):
        self.spec = spec
        self.real = real_env
        self.size = int(size)
        self.source = "env reset" if real_env is not None else "recorded episodes"
        self._pool: np.ndarray | None = None
        self._seed: int | None = None

    def pool(self, seed: int | None = None) -> np.ndarray:
        if self._pool is not None and (seed is None or seed == self._seed):
            return self._pool
        if self.real is None:
            from codeworld.envs._buffer_format import load_buffer
            from codeworld.envs._buffers import default_buffer

            buffer = load_buffer(default_buffer(self.spec), self.spec)
            firsts = np.unique(buffer.episode_start)
            self._pool = np.ascontiguousarray(buffer.obs[firsts], dtype=np.float64).reshape(len(firsts), -1)
        else:
            self._pool = np.stack([
                self.spec.encode_obs(self.real.reset(seed=None if seed is None else seed + i)[0])
                for i in range(self.size)])
        self._seed = seed
        return self._pool

    def one(self, seed: int | None) -> np.ndarray:
        """One start state: a real reset with `seed` (with a simulator), else a recorded start drawn by it."""
        if self.real is not None:
            return self.spec.encode_obs(self.real.reset(seed=seed)[0])
        pool = self.pool()
        return pool[np.random.default_rng(seed).integers(len(pool))].copy()


class _ModelBackend:
    """What both envs share: the spec, the real env (spaces, start states), the worker with the model."""

    def __init__(self, spec: EnvSpec, source: str, compile: bool, limits, start_pool: int = DEFAULT_START_POOL,
                 encoded_spaces: bool = False):
        from codeworld._model_worker import ModelWorker
        from codeworld.sandbox import SandboxLimits

        self.spec = spec
        self.real = spec.make() if spec.simulator else None
        self.observation_space, self.action_space = model_spaces(self.spec, self.real, encoded_spaces)
        self.starts = StartStates(self.spec, self.real, start_pool)
        self.worker = ModelWorker(source, discrete=self.spec.discrete, compile=compile,
                                  limits=limits or SandboxLimits(preload_numba=compile))
        loaded = self.worker.load()
        if not loaded.ok:
            self.close()
            raise WorldModelError(loaded)

    @property
    def compiled(self) -> bool:
        return bool(self.worker.info.get("compiled"))

    def encode_actions(self, actions, n: int) -> np.ndarray:
        return np.asarray(actions, dtype=np.float64).reshape(n, self.spec.action_dim)

    def predict(self, states: np.ndarray, actions: np.ndarray):
        pred = self.worker.predict(states, actions)
        if not pred.ok:
            raise WorldModelError(pred.result)
        return pred.next_states, pred.rewards, pred.dones

    def close(self) -> None:
        self.worker.close()
        if self.real is not None:
            self.real.close()


class CodeWorldEnv(gym.Env):
    """One copy of an environment simulated by a code world model.

    Args:
        env: the environment the model describes: an id or its `EnvSpec` (its spaces are used).
        source: the model program.
        compile: try Numba compilation of the model.
        max_episode_steps: truncate after this many steps (default: the real env's limit).
        limits: sandbox limits for the model's worker.

    ``reset(options={"state": s})`` starts from the encoded state ``s`` instead of a start state.
    """

    metadata = {"render_modes": []}

    def __init__(self, env: EnvSpec | str, source: str, *, compile: bool = True,
                 max_episode_steps: int | None = None, limits: SandboxLimits | None = None):
        from codeworld.envs import resolve_env

        self._backend = _ModelBackend(resolve_env(env), source, compile, limits)
        self.observation_space = self._backend.observation_space
        self.action_space = self._backend.action_space
        self.max_episode_steps = max_episode_steps or self._backend.spec.max_episode_steps
        self.state: np.ndarray | None = None
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if options and "state" in options:
            self.state = np.asarray(options["state"], dtype=np.float64).ravel().copy()
        else:
            self.state = self._backend.starts.one(seed)
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


# -- the worker side of the vector env ------------------------------------------------------------


class _Collector:
    """Stands in for the worker context so that `op_predict` hands its results back here."""

    def __init__(self, ctx):
        self.state = ctx.state
        self.chunks: list[dict] = []

    def emit(self, partial: dict) -> None:
        self.chunks.append(partial)


def _predict_in_worker(ctx, states: np.ndarray, actions: np.ndarray):
    """(next_states, rewards, dones) of a batch, with `op_predict`'s paths and failure records."""
    from codeworld._model_worker import op_predict

    model = loaded_model(ctx)
    if model.compiled:
        from codeworld.kernels._rollout import step_batch

        nxt, rew, done, _status, stepped = step_batch(model, states, actions)
        if stepped == len(states):
            return nxt, rew, done
    collector = _Collector(ctx)  # the slow path, or a failure to describe
    op_predict(collector, states=states, actions=actions)
    nxt = np.concatenate([c["next_states"] for c in collector.chunks]) if collector.chunks else states[:0]
    return (nxt.reshape(len(states), -1), np.concatenate([c["rewards"] for c in collector.chunks]),
            np.concatenate([c["dones"] for c in collector.chunks]))


def op_vector_reset(ctx, states: np.ndarray, pool: np.ndarray, seed: int | None,
                    max_episode_steps: int | None, same_step: bool) -> None:
    """Keep the copies' states, the start pool and the autoreset rule in the worker."""
    ctx.state["vector"] = {
        "states": np.ascontiguousarray(states, dtype=np.float64),
        "pool": np.ascontiguousarray(pool, dtype=np.float64),
        "rng": np.random.default_rng(seed),
        "t": np.zeros(len(states), dtype=np.int64),
        "needs_reset": np.zeros(len(states), dtype=bool),
        "max_steps": max_episode_steps,
        "same_step": same_step,
    }


def op_vector_step(ctx, actions: np.ndarray) -> dict:
    """One step of every copy: reset the ended ones (next-step mode), step the rest in one batch.

    Returns ``states`` (after the step), ``rewards``, ``terminated``, ``truncated``, ``reset`` (the
    copies that restarted this step) and, in same-step mode, ``final`` (index -> final state).
    A failing transition raises `OpFailure` whose ``transition`` is the copy.
    """
    return _vector_step(ctx, ctx.state["vector"], np.ascontiguousarray(actions, dtype=np.float64))


# The layout of the memory the parent and the serving worker share: (name, dtype, columns or 0).
def _shared_layout(n: int, obs_dim: int, action_dim: int) -> list[tuple[str, Any, tuple]]:
    return [("actions", np.float64, (n, action_dim)), ("states", np.float64, (n, obs_dim)),
            ("final_states", np.float64, (n, obs_dim)), ("rewards", np.float64, (n,)),
            ("terminated", np.bool_, (n,)), ("truncated", np.bool_, (n,)), ("reset", np.bool_, (n,)),
            ("final", np.bool_, (n,))]


def _shared_arrays(path: str, n: int, obs_dim: int, action_dim: int, create: bool) -> dict[str, np.ndarray]:
    """Views of the shared file at `path` as the named arrays of `_shared_layout`."""
    layout = _shared_layout(n, obs_dim, action_dim)
    sizes = [int(np.prod(shape)) * np.dtype(dtype).itemsize for _, dtype, shape in layout]
    offsets = np.concatenate([[0], np.cumsum([(s + 63) // 64 * 64 for s in sizes])])
    import mmap

    if create:
        with open(path, "wb") as handle:
            handle.truncate(int(offsets[-1]))
    with open(path, "r+b") as handle:  # plain arrays over the mapping (np.memmap costs per operation)
        buffer = np.frombuffer(mmap.mmap(handle.fileno(), int(offsets[-1])), dtype=np.uint8)
    return {name: buffer[offsets[i]:offsets[i] + sizes[i]].view(dtype).reshape(shape)
            for i, (name, dtype, shape) in enumerate(layout)}


def op_vector_serve(ctx, path: str, requests: str, replies: str, n: int, obs_dim: int, action_dim: int) -> None:
    """Step the copies on request until told to stop, through memory shared with the parent.

    The parent writes the actions into the shared file and one byte ``S`` into the `requests`
    pipe; the worker steps (as `op_vector_step`), writes states, rewards and flags back and
    answers ``K``, or ``E`` before ending the op with the failure. ``Q`` (or the parent gone) ends it.
    """
    import os

    shared = _shared_arrays(path, n, obs_dim, action_dim, create=False)
    v = ctx.state["vector"]
    shared["states"][:] = v["states"]
    v["states"] = shared["states"]  # stepped in place from now on
    inbox = os.open(requests, os.O_RDONLY)
    outbox = os.open(replies, os.O_WRONLY)
    try:
        while True:
            command = os.read(inbox, 1)
            if command != b"S":
                return
            try:
                reply = _vector_step(ctx, v, shared["actions"])
            except BaseException:
                os.write(outbox, b"E")
                raise
            for key in ("rewards", "terminated", "truncated", "reset"):
                shared[key][:] = reply[key]
            shared["final"][:] = False
            if "final" in reply:
                idx, finals = reply["final"]
                shared["final"][idx] = True
                shared["final_states"][idx] = finals
            os.write(outbox, b"K")
    finally:
        v["states"] = np.array(shared["states"])
        os.close(inbox)
        os.close(outbox)


def _vector_step(ctx, v: dict, actions: np.ndarray) -> dict:
    states, t, pool, rng = v["states"], v["t"], v["pool"], v["rng"]
    n = len(states)
    rewards = np.zeros(n)
    terminated = np.zeros(n, dtype=bool)
    truncated = np.zeros(n, dtype=bool)
    restarting = v["needs_reset"]
    if restarting.any():
        idx = np.flatnonzero(restarting)
        states[idx] = pool[rng.integers(len(pool), size=len(idx))]
        t[idx] = 0
        live = np.flatnonzero(~restarting)
    else:
        live = None
    try:
        if live is None:
            nxt, rew, done = _predict_in_worker(ctx, states, actions)
            states[:] = nxt
            rewards[:], terminated[:] = rew, done
            t += 1
        elif len(live):
            nxt, rew, done = _predict_in_worker(ctx, states[live], actions[live])
            states[live] = nxt
            rewards[live], terminated[live] = rew, done
            t[live] += 1
    except OpFailure as failure:
        if failure.transition is not None:
            copy = int(failure.transition if live is None else live[failure.transition])
            failure.message = failure.message.replace(f"transition {failure.transition}:", f"copy {copy}:", 1)
            failure.transition = copy
        raise
    if v["max_steps"] is not None:
        truncated = (t >= v["max_steps"]) & ~restarting
    ended = terminated | truncated
    reply = {"rewards": rewards, "terminated": terminated, "truncated": truncated, "reset": restarting}
    if v["same_step"] and ended.any():
        idx = np.flatnonzero(ended)
        reply["final"] = (idx, states[idx].copy())
        states[idx] = pool[rng.integers(len(pool), size=len(idx))]
        t[idx] = 0
        v["needs_reset"] = np.zeros(n, dtype=bool)
    else:
        v["needs_reset"] = ended
    reply["states"] = states
    return reply


class CodeWorldVectorEnv(VectorEnv):
    """`num_envs` copies of an environment simulated by a code world model, stepped together.

    Autoreset follows Gymnasium's vector API. In next-step mode (the default) the step after an
    episode ends restarts that copy and returns its new start observation with reward 0 and both
    flags false. In same-step mode the ended copy restarts at once: the step returns the new start
    observation, and ``infos["final_obs"]`` / ``infos["_final_obs"]`` hold the last observation.

    Args:
        env: the environment the model describes: an id or its `EnvSpec`.
        source: the model program.
        num_envs: number of copies.
        compile: try Numba compilation of the model.
        max_episode_steps: truncate after this many steps (default: the real env's limit).
        limits: sandbox limits for the model's worker.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default) or ``AutoresetMode.SAME_STEP``.
        start_pool: how many seeded real resets the copies start from (see `StartStates`).
        encoded_spaces: use the model's encoding as the spaces, not the real env's (see `model_spaces`).

    ``reset(options={"states": S})`` starts the copies from the encoded states ``S`` (num_envs rows).
    ``states`` holds the copies' encoded states after the last call; ``model_steps`` counts the
    transitions the model predicted.
    """

    def __init__(self, env: EnvSpec | str, source: str, num_envs: int, *, compile: bool = True,
                 max_episode_steps: int | None = None, limits: SandboxLimits | None = None,
                 autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
                 start_pool: int = DEFAULT_START_POOL, encoded_spaces: bool = False):
        from codeworld.envs import resolve_env

        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset mode {autoreset_mode} is not supported (next-step or same-step)")
        self._backend = _ModelBackend(resolve_env(env), source, compile, limits, start_pool, encoded_spaces)
        self.metadata = {"autoreset_mode": autoreset_mode, "render_modes": []}
        self.num_envs = int(num_envs)
        self.single_observation_space = self._backend.observation_space
        self.single_action_space = self._backend.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.max_episode_steps = max_episode_steps or self._backend.spec.max_episode_steps
        self.states = np.zeros((self.num_envs, self._backend.spec.obs_dim))
        self.model_steps = 0
        self._same_step = autoreset_mode == AutoresetMode.SAME_STEP
        self._pool_seed: int | None = None
        self._rng = np.random.default_rng()
        self._channel: dict | None = None

    @property
    def start_source(self) -> str:
        """``"env reset"`` or ``"recorded episodes"``: where episodes start."""
        return self._backend.starts.source

    @property
    def compiled(self) -> bool:
        """Whether the model runs compiled (one native loop per batch)."""
        return self._backend.compiled

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._pool_seed = seed
            self._rng = np.random.default_rng(seed)
        pool = self._backend.starts.pool(self._pool_seed)
        if options and "states" in options:
            states = np.asarray(options["states"], dtype=np.float64).reshape(self.num_envs, -1)
        else:
            states = pool[self._rng.integers(len(pool), size=self.num_envs)]
        self.states = np.ascontiguousarray(states, dtype=np.float64).copy()
        self._stop_serving()
        result = self._backend.worker.call(
            op_vector_reset, states=self.states, pool=pool, seed=int(self._rng.integers(2**63)),
            max_episode_steps=self.max_episode_steps, same_step=self._same_step)
        if not result.ok:
            raise WorldModelError(result)
        self._start_serving()
        return decode_batch(self.single_observation_space, self.states), {}

    # -- the shared-memory channel to the worker ---------------------------------------------------

    def _start_serving(self) -> None:
        """Have the worker serve steps through shared memory and two pipes in its directory."""
        import os

        box = self._backend.worker.sandbox
        workdir = box.workdir
        if workdir is None:
            return  # stepping falls back to one request per step
        paths = {name: os.path.join(workdir, f"vector-{name}") for name in ("memory", "requests", "replies")}
        for name in ("requests", "replies"):
            if not os.path.exists(paths[name]):
                os.mkfifo(paths[name], 0o600)
        spec = self._backend.spec
        shared = _shared_arrays(paths["memory"], self.num_envs, spec.obs_dim, spec.action_dim, create=True)
        # Read-write ends: opening them does not wait for the worker; its ends are one-way.
        requests = os.open(paths["requests"], os.O_RDWR)
        replies = os.open(paths["replies"], os.O_RDWR)
        started = box.begin(op_vector_serve, path=paths["memory"], requests=paths["requests"],
                            replies=paths["replies"], n=self.num_envs, obs_dim=spec.obs_dim,
                            action_dim=spec.action_dim)
        self._channel = {"shared": shared, "requests": requests, "replies": replies}
        if not started.ok:
            self._close_channel()
            raise WorldModelError(started)

    def _close_channel(self) -> None:
        import os

        channel, self._channel = self._channel, None
        if channel is not None:
            os.close(channel["requests"])
            os.close(channel["replies"])

    def _stop_serving(self) -> None:
        import os

        if self._channel is None:
            return
        try:
            os.write(self._channel["requests"], b"Q")
        except OSError:
            pass
        self._backend.worker.sandbox.finish(timeout_s=10.0)
        self._close_channel()

    def _served_step(self, actions: np.ndarray) -> dict:
        """One step through the shared memory; a failure ends the serving op and raises."""
        import os
        import select
        import time

        channel = self._channel
        box = self._backend.worker.sandbox
        channel["shared"]["actions"][:] = actions
        os.write(channel["requests"], b"S")
        deadline = time.monotonic() + box.limits.timeout_s
        answer = b""
        while True:
            ready, _, _ = select.select([channel["replies"]], [], [], min(0.5, max(0.0, deadline - time.monotonic())))
            if ready:
                answer = os.read(channel["replies"], 1)
                break
            if not box.alive or time.monotonic() >= deadline:
                break
        if answer == b"K":
            shared = channel["shared"]
            reply = {key: shared[key].copy() for key in ("states", "rewards", "terminated", "truncated", "reset")}
            if self._same_step and shared["final"].any():
                idx = np.flatnonzero(shared["final"])
                reply["final"] = (idx, shared["final_states"][idx].copy())
            return reply
        result = box.finish(timeout_s=10.0 if answer == b"E" else 0.0)
        self._close_channel()
        if result.ok:  # the op ended without a failure record: the channel broke
            result.status, result.message = "crashed", "the worker stopped serving steps"
        raise WorldModelError(result, copy=result.transition)

    def step(self, actions):
        actions = self._backend.encode_actions(actions, self.num_envs)
        if self._channel is not None:
            reply = self._served_step(actions)
        else:
            result = self._backend.worker.call(op_vector_step, actions=actions)
            if not result.ok:
                raise WorldModelError(result, copy=result.transition)
            reply = result.value
        self.states = reply["states"]
        self.model_steps += int(self.num_envs - reply["reset"].sum()) if not self._same_step else self.num_envs
        obs = decode_batch(self.single_observation_space, self.states)
        infos: dict[str, Any] = {}
        if "final" in reply:
            idx, finals = reply["final"]
            mask = np.zeros(self.num_envs, dtype=bool)
            mask[idx] = True
            final_obs = np.empty(self.num_envs, dtype=object)
            for i, state in zip(idx, finals):
                final_obs[i] = _decode_obs(self.single_observation_space, state)
            infos = {"final_obs": final_obs, "_final_obs": mask, "final_info": {}, "_final_info": mask}
        return obs, reply["rewards"], reply["terminated"], reply["truncated"], infos

    def close_extras(self, **kwargs: Any) -> None:
        self._stop_serving()
        self._backend.close()

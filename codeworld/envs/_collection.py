"""Collecting CWMB replay buffers with the paper's protocol, seeded and reproducible.

The protocol (CWMB paper, section 4): 10 episodes of at most 100 steps; about half from a random
policy, half from a planner acting on the real environment at increasing effort. The planner here
is *random shooting* on the true simulator (kept so that the committed buffers regenerate byte for
byte; codeworld's MCTS and CEM planners are for planning with a world model): at every step it
draws K action sequences of horizon H, rolls each out on a copy of the real simulator state, and
takes the first action of the sequence with the highest return. Effort level e = 1..5 uses
K = 4e sequences. The protocol is recorded in the buffer's sidecar.

Every random number comes from ``numpy.random.default_rng([seed, episode, ...])`` (never from the
env's action space), and env resets are seeded, so the same versions and seed give the same
buffer, byte for byte.
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass

import numpy as np

from codeworld.envs._buffer_format import ReplayBuffer, make_buffer
from codeworld.envs.registry import EnvSpec, resolve_env
from codeworld.envs._simstate import SimState


@dataclass(frozen=True)
class CollectionConfig:
    """The collection protocol (defaults: the CWMB paper's).

    Attributes:
        episodes: number of episodes (paper: 10).
        max_steps: longest episode; a longer one is cut and marked truncated (paper: 100).
        random_episodes: how many of the episodes, first, use the uniform random policy (paper:
            about half).
        seed: base seed of env resets and every random draw.
        horizon: planning horizon H of the random-shooting controller.
        sequences_per_effort: K = this * effort sequences per step; effort goes 1, 2, ... over the
            planner episodes.
    """

    episodes: int = 10
    max_steps: int = 100
    random_episodes: int = 5
    seed: int = 0
    horizon: int = 10
    sequences_per_effort: int = 4


def _sample_actions(spec: EnvSpec, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform random actions, float64 rows (a discrete action as one number, continuous as float32 values)."""
    if spec.discrete:
        return rng.integers(0, spec.n_actions, size=shape + (1,)).astype(np.float64)
    low = np.asarray(spec.action_low)
    high = np.asarray(spec.action_high)
    sample = rng.uniform(low, high, size=shape + (spec.action_dim,))
    return sample.astype(np.float32).astype(np.float64)


def collection_state(spec: EnvSpec) -> SimState | None:
    """How the collector's planner saves and restores the real simulator (None: it cannot)."""
    if not spec.simulator:
        return None
    return spec.collect_state or spec.sim_state


def _shooting_action(spec: EnvSpec, env, rng: np.random.Generator, n_sequences: int, horizon: int) -> np.ndarray:
    """The first action of the best of `n_sequences` random sequences rolled out on the real sim."""
    snap = collection_state(spec)
    sim = env.unwrapped
    start = snap.save(sim)
    sequences = _sample_actions(spec, rng, (n_sequences, horizon))
    best, best_return = 0, -np.inf
    for k in range(n_sequences):
        snap.restore(sim, start)
        total = 0.0
        for t in range(horizon):
            _, reward, terminated, _, _ = env.unwrapped.step(spec.decode_action(sequences[k, t]))
            total += float(reward)
            if terminated:
                break
        if total > best_return:
            best, best_return = k, total
    snap.restore(sim, start)
    return sequences[best, 0]


def collect_buffer(env: EnvSpec | str, config: CollectionConfig | None = None) -> ReplayBuffer:
    """Collect a replay buffer of `env` (a spec or an id) with the CWMB protocol (see the module
    docstring).

    An environment whose simulator cannot be saved and restored gets random episodes only (the
    planner needs to roll out from the current state); the sidecar says so.

    Returns:
        The buffer; its ``metadata`` is the sidecar record (versions, seed, protocol).
    """
    import warnings

    config = config or CollectionConfig()
    spec = resolve_env(env)
    real = spec.make()
    can_plan = collection_state(spec) is not None
    rows: dict[str, list] = {k: [] for k in ("obs", "actions", "rewards", "next_obs", "terminated",
                                             "truncated", "episode_start")}
    policies = []
    for episode in range(config.episodes):
        effort = episode - config.random_episodes + 1 if can_plan else 0
        policies.append("random" if effort <= 0 else f"random_shooting(effort={effort})")
        obs, _ = real.reset(seed=config.seed * 1000 + episode)
        rng = np.random.default_rng([config.seed, episode])
        start = len(rows["rewards"])
        for t in range(config.max_steps):
            if effort <= 0:
                action = _sample_actions(spec, rng, ())
            else:
                n_seq = config.sequences_per_effort * effort
                action = _shooting_action(spec, real, rng, n_seq, config.horizon)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                next_obs, reward, terminated, truncated, _ = real.step(spec.decode_action(action))
            cut = t + 1 == config.max_steps
            rows["obs"].append(spec.encode_obs(obs))
            rows["actions"].append(spec.encode_action(action))
            rows["rewards"].append(float(reward))
            rows["next_obs"].append(spec.encode_obs(next_obs))
            rows["terminated"].append(bool(terminated))
            rows["truncated"].append(bool(not terminated and (truncated or cut)))
            rows["episode_start"].append(start)
            obs = next_obs
            if terminated or truncated:
                break
    real.close()
    metadata = {
        "env_id": spec.env_id,
        "paper_id": spec.paper_id,
        "gym_id": spec.gym_id,
        **({"gym_kwargs": dict(spec.gym_kwargs)} if not spec.shipped and spec.gym_kwargs else {}),
        "versions": collection_versions(),
        "seed": config.seed,
        "protocol": {
            **asdict(config),
            "policies": policies,
            "planner": "random shooting on the true simulator: K = sequences_per_effort * effort "
                       "uniform random action sequences of length horizon, first action of the "
                       "best return",
            **({} if can_plan else {"random_only": "the simulator's state cannot be saved and "
                                   f"restored, so every episode is random ({spec.oracle_note})"}),
            "truncated": "set on the last step of an episode cut by Gymnasium's time limit or by "
                         "max_steps; never together with terminated",
        },
    }
    arrays = {k: np.array(v) for k, v in rows.items()}
    return make_buffer(spec, metadata=metadata, **arrays)


def collection_versions() -> dict[str, str]:
    """Versions that determine the collected data (recorded in sidecars)."""
    import gymnasium
    import mujoco

    return {
        "gymnasium": gymnasium.__version__,
        "mujoco": mujoco.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }

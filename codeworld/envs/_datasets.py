"""Logged data without a simulator: a dataset of transitions and a description, as an environment.

Two sources are accepted, each named by an id that any process can resolve again:

* ``data:FILE.npz``: a buffer in codeworld's format (`codeworld.envs._buffer_format`;
  ``FILE.npz`` on the command line means the same). The spec is read from the data: the state's
  length from ``obs``; the actions are discrete when ``actions`` is one column of non-negative
  integers (``n_actions`` = the largest + 1), continuous otherwise (bounds: the data's range). The
  JSON sidecar may say otherwise with ``action_kind``, ``n_actions``, ``action_low``,
  ``action_high``, and may carry ``description``; a ``FILE.md`` beside the data is also read as its
  description.
* ``minari:DATASET_ID``: a Minari dataset (the Farama standard for offline RL data; the optional
  extra ``codeworld[minari]``) already on this machine (Minari's local dataset folder; nothing is
  downloaded). Its observation and action spaces give the encoding (as for a Gymnasium id,
  `codeworld.envs.derive`); its episodes are converted once into codeworld's format in the user
  cache; its description is the dataset's own, unless ``--description`` gives another.

Tolerances follow the data: integer-valued states compare exactly, float32 values to a few ulps.
Scoring and synthesis work on such an environment; there is no ceiling, no oracle, and planning
needs an environment to act in (the spec says so: ``simulator=False``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from codeworld.envs._buffer_format import BufferError, ReplayBuffer, save_buffer, sidecar_path
from codeworld.envs.derive import action_coding, safe_name, space_layout
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
)

NO_SIMULATOR = "no simulator: the environment is a logged dataset"
# Prefixes of ids that name logged data instead of a Gymnasium environment.
DATA_PREFIXES = ("data:", "minari:")


def data_id(path: str | Path) -> str:
    """The id of a dataset file: ``data:`` and its absolute path."""
    return "data:" + str(Path(path).expanduser().resolve())


def _tolerances(values: np.ndarray) -> dict:
    values = np.asarray(values, dtype=np.float64)
    if np.all(values == np.round(values)):
        return dict(EXACT)
    if np.all(values.astype(np.float32).astype(np.float64) == values):
        return dict(FLOAT32)
    return dict(FLOAT64_SIM)


def _read_description(path: Path, sidecar: dict) -> str | None:
    if sidecar.get("description"):
        return str(sidecar["description"])
    beside = path.with_suffix(".md")
    return beside.read_text(encoding="utf-8") if beside.is_file() else None


def _spec(env_id: str, *, obs_dim: int, discrete: bool, n_actions: int, low, high, tol: dict,
          description: str | None, dataset: str, state_names=(), state_doc="", action_doc="",
          action_decoder=None, obs_encoder=None) -> EnvSpec:
    exact = tol["state_atol"] == 0 and tol["state_rtol"] == 0
    return EnvSpec(
        env_id=env_id, paper_id=env_id, gym_id="", family="toy_text" if exact else "classic_control",
        action_kind=DISCRETE if discrete else CONTINUOUS, n_actions=n_actions if discrete else 0,
        action_low=() if discrete else tuple(float(x) for x in low),
        action_high=() if discrete else tuple(float(x) for x in high), obs_dim=obs_dim,
        action_dim=1 if discrete else len(low), planner=MCTS if discrete else CEM,
        paper_exact=exact, max_episode_steps=None, simulator=False, dataset=dataset,
        no_oracle_reason=NO_SIMULATOR, no_ceiling_reason=NO_SIMULATOR, description=description,
        state_names=tuple(state_names), state_doc=state_doc, action_doc=action_doc,
        action_decoder=action_decoder, obs_encoder=obs_encoder, **tol,
    )


def npz_spec(env_id: str) -> EnvSpec:
    """The spec of a ``data:FILE.npz`` dataset (see the module docstring)."""
    path = Path(env_id[len("data:"):]).expanduser()
    if not path.is_file():
        raise UnknownEnvError(f"{env_id}: no such dataset file")
    try:
        with np.load(path, allow_pickle=False) as archive:
            obs = np.asarray(archive["obs"], dtype=np.float64)
            next_obs = np.asarray(archive["next_obs"], dtype=np.float64)
            actions = np.asarray(archive["actions"], dtype=np.float64)
            rewards = np.asarray(archive["rewards"], dtype=np.float64)
    except Exception as exc:  # a missing key, not an npz file...
        raise BufferError(f"{path}: not a readable dataset ({type(exc).__name__}: {exc})") from None
    sidecar: dict = {}
    if sidecar_path(path).is_file():
        sidecar = json.loads(sidecar_path(path).read_text(encoding="utf-8"))
    obs = obs.reshape(len(obs), -1)
    actions = actions.reshape(len(actions), -1)
    kind = sidecar.get("action_kind")
    integral = actions.shape[1] == 1 and np.all(actions == np.round(actions)) and np.all(actions >= 0)
    discrete = kind == "discrete" or (kind is None and bool(integral))
    n_actions = int(sidecar.get("n_actions") or (int(actions.max()) + 1 if discrete else 0))
    low = sidecar.get("action_low") or actions.min(axis=0).tolist()
    high = sidecar.get("action_high") or actions.max(axis=0).tolist()
    tol = _tolerances(np.concatenate([obs.reshape(-1), next_obs.reshape(-1)]))
    if tol["state_atol"] == 0 and not np.all(rewards == np.round(rewards)):
        tol.update(reward_atol=FLOAT64_SIM["reward_atol"], reward_rtol=FLOAT64_SIM["reward_rtol"])
    return _spec(data_id(path), obs_dim=obs.shape[1], discrete=discrete, n_actions=n_actions,
                 low=low, high=high, tol=tol, description=_read_description(path, sidecar),
                 dataset=str(path.resolve()), state_names=sidecar.get("state_names", ()))


def _minari_dataset(dataset_id: str):
    try:
        import minari
    except ImportError:
        raise UnknownEnvError(f"minari:{dataset_id}: Minari is not installed (pip install "
                              "'codeworld[minari]')") from None
    local = minari.list_local_datasets()
    if dataset_id not in local:
        raise UnknownEnvError(f"minari:{dataset_id}: no such local Minari dataset (local: "
                              f"{', '.join(sorted(local)) or 'none'}; download it with minari first)")
    return minari, minari.load_dataset(dataset_id)


def minari_spec(env_id: str) -> EnvSpec:
    """The spec of a ``minari:DATASET_ID`` dataset (see the module docstring); converts its
    episodes into codeworld's format in the user cache on first use."""
    from codeworld._paths import cache_root

    dataset_id = env_id[len("minari:"):]
    minari, dataset = _minari_dataset(dataset_id)
    layout = space_layout(dataset.observation_space)
    coding = action_coding(dataset.action_space)
    key = json.dumps({"id": dataset_id, "steps": int(dataset.total_steps),
                      "episodes": int(dataset.total_episodes), "minari": minari.__version__,
                      "path": str(getattr(dataset.spec, "data_path", ""))}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    path = cache_root() / "buffers" / f"minari-{safe_name(dataset_id)}-{digest}.npz"
    tol = dict(EXACT if layout.exact else (FLOAT32 if layout.float32 else FLOAT64_SIM))
    metadata = getattr(getattr(dataset, "storage", None), "metadata", None) or {}
    description = metadata.get("description") or None
    spec = _spec(env_id, obs_dim=layout.size, discrete=coding.discrete, n_actions=coding.n_actions,
                 low=coding.low, high=coding.high, tol=tol, description=description,
                 dataset=str(path), state_names=layout.names if any(layout.names) else (),
                 state_doc=(f"{layout.size} numbers: " + ", ".join(layout.names)) if any(layout.names) else "",
                 action_doc=coding.doc, action_decoder=coding.decode,
                 obs_encoder=layout.encode)
    if not path.is_file():
        rows: dict[str, list] = {k: [] for k in ("obs", "actions", "rewards", "next_obs", "terminated",
                                                 "truncated", "episode_start")}
        for episode in dataset.iterate_episodes():
            start = len(rows["rewards"])
            n = len(episode.rewards)
            observations = _unstack(episode.observations, n + 1)
            actions = _unstack(episode.actions, n)
            for t in range(n):
                rows["obs"].append(layout.encode(observations[t]))
                rows["next_obs"].append(layout.encode(observations[t + 1]))
                rows["actions"].append(_encode_action(coding, dataset.action_space, actions[t]))
                rows["rewards"].append(float(episode.rewards[t]))
                rows["terminated"].append(bool(episode.terminations[t]))
                rows["truncated"].append(bool(episode.truncations[t]) and not bool(episode.terminations[t]))
                rows["episode_start"].append(start)
        dtypes = {"terminated": bool, "truncated": bool, "episode_start": np.int64}
        arrays = {k: np.asarray(v, dtype=dtypes.get(k, np.float64)) for k, v in rows.items()}
        buffer = ReplayBuffer(env_id, **arrays, metadata={})
        tmp = path.with_name(path.stem + f".tmp{os.getpid()}.npz")
        save_buffer(buffer, tmp, metadata={"env_id": env_id, "source": f"Minari dataset {dataset_id}",
                                           "minari": minari.__version__})
        os.replace(sidecar_path(tmp), sidecar_path(path))
        os.replace(tmp, path)
    return spec


def _unstack(values: Any, n: int) -> list:
    """Per-step items of a Minari episode field (dicts and tuples of arrays are split by step)."""
    if isinstance(values, dict):
        per_key = {k: _unstack(v, n) for k, v in values.items()}
        return [{k: per_key[k][i] for k in values} for i in range(n)]
    if isinstance(values, tuple):
        parts = [_unstack(v, n) for v in values]
        return [tuple(p[i] for p in parts) for i in range(n)]
    return [values[i] for i in range(n)]


def _encode_action(coding, space, action) -> list:
    """A Minari action as codeworld's stored row (a joint discrete action as its index)."""
    from gymnasium import spaces

    if coding.discrete and isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary)):
        nvec = (np.full(int(np.prod(space.shape)), 2) if isinstance(space, spaces.MultiBinary)
                else np.asarray(space.nvec).reshape(-1))
        start = np.asarray(getattr(space, "start", np.zeros_like(nvec))).reshape(-1)
        parts = np.asarray(action).reshape(-1).astype(np.int64) - start
        return [float(np.ravel_multi_index(tuple(parts), tuple(nvec)))]
    if coding.discrete:
        return [float(np.asarray(action).reshape(-1)[0]) - float(space.start)]
    return np.asarray(action, dtype=np.float64).reshape(-1).tolist()


def dataset_spec(env_id: str) -> EnvSpec:
    """The spec of a dataset id (``data:...`` or ``minari:...``)."""
    if env_id.startswith("minari:"):
        return minari_spec(env_id)
    return npz_spec(env_id)


def resolve_spec(env_id: str) -> EnvSpec | None:
    """The spec of a dataset id, for `get_spec` (the registry's resolver of logged data); None for
    an id of another kind."""
    return dataset_spec(env_id) if env_id.startswith(DATA_PREFIXES) else None

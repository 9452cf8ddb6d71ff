"""The replay-buffer file: codeworld's ``.npz`` format with a JSON sidecar, and the paper's layout.

Which file is an environment's buffer is `codeworld.envs._buffers`' concern (it re-exports these
names, and is where they are imported from).

A codeworld buffer holds N transitions in episode order:

=============== ============== ==========================================================
key             shape / dtype  meaning
=============== ============== ==========================================================
obs             (N, d) f8      encoded observation before the step (`encode_obs`)
actions         (N, a) f8      action taken (a discrete action as one number)
rewards         (N,) f8        reward
next_obs        (N, d) f8      encoded observation after the step
terminated      (N,) bool      the environment's own end (what ``done`` means for a model)
truncated       (N,) bool      the episode was cut (time limit, or the collection protocol)
episode_start   (N,) i8        index of the first transition of this transition's episode
=============== ============== ==========================================================

``<name>.json`` beside it records the environment, the versions of Gymnasium and MuJoCo, the seed
and the collection protocol. Files are written with fixed zip timestamps, so the same data gives
the same bytes (and the sidecar's sha256).

The paper's buffers (shipped in ``codeworld/data/paper_buffers/``, see its README; named on the
command line as ``--buffer paper``) have one ``dones`` array meaning
``terminated or truncated``, and float32-valued rewards. `load_buffer` reads them too: a done on
the step where Gymnasium's time limit ends an episode is taken as a truncation, every other done as
a termination, so ``terminated | truncated`` reproduces the paper's ``dones`` exactly.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codeworld.envs.registry import EnvSpec, UnknownEnvError, resolve_env

FORMAT = "codeworld-buffer/1"
CODEWORLD_KEYS = ("obs", "actions", "rewards", "next_obs", "terminated", "truncated", "episode_start")
PAPER_KEYS = ("obs", "actions", "rewards", "next_obs", "dones", "episode_start")
_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class BufferError(ValueError):
    """A buffer file that is missing, unreadable, or breaks the format (one-line message)."""


@dataclass(frozen=True)
class ReplayBuffer:
    """Transitions of one environment, in episode order (see the module docstring for the fields).

    Attributes:
        env_id: codeworld's id of the environment.
        obs, actions, rewards, next_obs, terminated, truncated, episode_start: the arrays.
        source: ``"codeworld"`` or ``"paper"`` (the layout the file was read from).
        metadata: the JSON sidecar (empty when there is none).
        path: the file it was read from, if any.
    """

    env_id: str
    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    episode_start: np.ndarray
    source: str = "codeworld"
    metadata: dict = field(default_factory=dict, compare=False)
    path: str | None = None

    def __len__(self) -> int:
        return len(self.rewards)

    @property
    def dones(self) -> np.ndarray:
        """``terminated | truncated``: the paper's done label."""
        return self.terminated | self.truncated

    @property
    def n_episodes(self) -> int:
        return int(len(np.unique(self.episode_start)))

    def arrays(self) -> dict[str, np.ndarray]:
        """The codeworld arrays by key, as written to the ``.npz`` file."""
        return {key: getattr(self, key) for key in CODEWORLD_KEYS}

    def take(self, n: int) -> "ReplayBuffer":
        """The first `n` transitions (episode starts stay valid)."""
        return ReplayBuffer(self.env_id, *(getattr(self, k)[:n] for k in CODEWORLD_KEYS),
                            source=self.source, metadata=self.metadata, path=self.path)

    def subset(self, mask: np.ndarray) -> "ReplayBuffer":
        """The transitions where `mask` is true, in order, with episode starts renumbered."""
        index = np.flatnonzero(np.asarray(mask, dtype=bool))
        arrays = {key: getattr(self, key)[index] for key in CODEWORLD_KEYS}
        renumbered = np.empty(len(index), dtype=np.int64)
        first: dict[int, int] = {}
        for k, start in enumerate(self.episode_start[index].tolist()):
            renumbered[k] = first.setdefault(start, k)
        arrays["episode_start"] = renumbered
        return ReplayBuffer(self.env_id, **arrays, source=self.source, metadata=self.metadata,
                            path=None)


# The share of a run's episodes held out from everything that learns from data.
HELDOUT_FRACTION = 0.3


@dataclass(frozen=True)
class EpisodeSplit:
    """A buffer's episodes split, with a seed, into training and held-out episodes.

    Episodes are numbered in buffer order from 0. A buffer of one episode is split by position
    (its last transitions held out), which `by_position` says.

    Attributes:
        heldout_fraction: the share of episodes held out (0: nothing held out).
        seed: the seed of the draw.
        n_episodes: episodes in the buffer.
        train_episodes, heldout_episodes: the episode numbers of each part, sorted.
        n_train, n_heldout: transitions in each part.
        by_position: the buffer had one episode, split by position.
    """

    heldout_fraction: float
    seed: int
    n_episodes: int
    train_episodes: tuple[int, ...]
    heldout_episodes: tuple[int, ...]
    n_train: int
    n_heldout: int
    by_position: bool = False

    def to_json(self) -> dict:
        return {"heldout_fraction": self.heldout_fraction, "seed": self.seed,
                "n_episodes": self.n_episodes, "train_episodes": list(self.train_episodes),
                "heldout_episodes": list(self.heldout_episodes), "n_train": self.n_train,
                "n_heldout": self.n_heldout, "by_position": self.by_position}

    @classmethod
    def draw(cls, buffer: ReplayBuffer, heldout_fraction: float = HELDOUT_FRACTION,
             seed: int = 0) -> "EpisodeSplit":
        """Hold out ``round(heldout_fraction * episodes)`` episodes (at least one, and at least
        one left for training) drawn with `seed`."""
        if not 0.0 <= heldout_fraction < 1.0:
            raise ValueError(f"the held-out fraction must be in [0, 1), not {heldout_fraction}")
        episodes = int(len(np.unique(buffer.episode_start)))
        n = len(buffer)
        if heldout_fraction == 0.0 or n < 2:
            return cls(heldout_fraction, seed, episodes, tuple(range(episodes)), (), n, 0)
        if episodes < 2:
            k = min(n - 1, max(1, int(round(n * heldout_fraction))))
            return cls(heldout_fraction, seed, episodes, (0,), (0,), n - k, k, by_position=True)
        k = min(episodes - 1, max(1, int(round(episodes * heldout_fraction))))
        held = sorted(int(e) for e in np.random.default_rng(seed).permutation(episodes)[:k])
        train = tuple(e for e in range(episodes) if e not in held)
        mask = np.isin(cls._episode_of(buffer), held)
        return cls(heldout_fraction, seed, episodes, train, tuple(held),
                   int((~mask).sum()), int(mask.sum()))

    @classmethod
    def from_json(cls, data: dict) -> "EpisodeSplit":
        return cls(float(data["heldout_fraction"]), int(data["seed"]), int(data["n_episodes"]),
                   tuple(int(e) for e in data["train_episodes"]),
                   tuple(int(e) for e in data["heldout_episodes"]), int(data["n_train"]),
                   int(data["n_heldout"]), bool(data.get("by_position", False)))

    @staticmethod
    def _episode_of(buffer: ReplayBuffer) -> np.ndarray:
        return np.unique(buffer.episode_start, return_inverse=True)[1]

    def heldout_mask(self, buffer: ReplayBuffer) -> np.ndarray:
        """True on the held-out transitions of `buffer` (the buffer the split was drawn on).

        Raises:
            ValueError: `buffer` does not have the episodes and transitions the split recorded.
        """
        n = len(buffer)
        episode_of = self._episode_of(buffer)
        episodes = int(episode_of.max()) + 1 if n else 0
        if episodes != self.n_episodes or n != self.n_train + self.n_heldout:
            raise ValueError(f"the recorded split is of a buffer with {self.n_episodes} episodes and "
                             f"{self.n_train + self.n_heldout} transitions, not {episodes} and {n}")
        if self.by_position:
            return np.arange(n) >= self.n_train
        return np.isin(episode_of, self.heldout_episodes)

    def parts(self, buffer: ReplayBuffer) -> tuple[ReplayBuffer, ReplayBuffer | None]:
        """(training, held-out) buffers; held-out is None when nothing is held out."""
        if not self.n_heldout:
            return buffer, None
        held = self.heldout_mask(buffer)
        return buffer.subset(~held), buffer.subset(held)


def _coerce(spec: EnvSpec, arrays: dict[str, Any], where: str) -> dict[str, np.ndarray]:
    """Check shapes, lengths and values; return contiguous arrays of the format's dtypes."""
    try:
        out = {
            "obs": np.ascontiguousarray(arrays["obs"], dtype=np.float64),
            "actions": np.ascontiguousarray(arrays["actions"], dtype=np.float64),
            "rewards": np.ascontiguousarray(arrays["rewards"], dtype=np.float64).reshape(-1),
            "next_obs": np.ascontiguousarray(arrays["next_obs"], dtype=np.float64),
            "episode_start": np.ascontiguousarray(arrays["episode_start"], dtype=np.int64).reshape(-1),
        }
    except (TypeError, ValueError) as exc:
        raise BufferError(f"{where}: a field is not numeric ({exc})") from None
    n = len(out["rewards"])
    for key in ("obs", "next_obs"):
        if out[key].ndim == 1:
            out[key] = out[key].reshape(-1, 1)
    if out["actions"].ndim == 1:
        out["actions"] = out["actions"].reshape(-1, 1)
    for key in ("obs", "next_obs", "actions"):
        if out[key].ndim != 2:
            raise BufferError(f"{where}: {key} has {out[key].ndim} dimensions, expected 2")
    for key, value in out.items():
        if len(value) != n:
            raise BufferError(f"{where}: {key} has {len(value)} rows but rewards has {n}")
    for key in ("terminated", "truncated"):
        value = np.asarray(arrays[key]).reshape(-1)
        if len(value) != n:
            raise BufferError(f"{where}: {key} has {len(value)} rows but rewards has {n}")
        if value.dtype != np.bool_ and not np.isin(value, (0, 1)).all():
            raise BufferError(f"{where}: {key} holds values other than 0/1")
        out[key] = np.ascontiguousarray(value, dtype=bool)
    if n == 0:
        raise BufferError(f"{where}: the buffer holds no transitions")
    for key, dim in (("obs", spec.obs_dim), ("next_obs", spec.obs_dim), ("actions", spec.action_dim)):
        if out[key].shape[1] != dim:
            raise BufferError(f"{where}: {key} rows have {out[key].shape[1]} values, "
                              f"{spec.env_id} needs {dim}")
    for key in ("obs", "actions", "rewards", "next_obs"):
        if not np.all(np.isfinite(out[key])):
            raise BufferError(f"{where}: {key} contains NaN or inf")
    starts = out["episode_start"]
    index = np.arange(n)
    if np.any(starts < 0) or np.any(starts > index) or np.any(starts[starts] != starts):
        raise BufferError(f"{where}: episode_start is not a valid index of each episode's first row")
    return out


def make_buffer(env: EnvSpec | str, *, metadata: dict | None = None, source: str = "codeworld",
                path: str | None = None, **arrays: Any) -> ReplayBuffer:
    """Build a validated `ReplayBuffer` of `env` (a spec or an id) from arrays (keys as in
    `CODEWORLD_KEYS`)."""
    spec = resolve_env(env)
    missing = [k for k in CODEWORLD_KEYS if k not in arrays]
    if missing:
        raise BufferError(f"buffer for {spec.env_id}: missing {', '.join(missing)}")
    clean = _coerce(spec, arrays, path or f"buffer for {spec.env_id}")
    return ReplayBuffer(spec.env_id, **clean, source=source, metadata=dict(metadata or {}), path=path)


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An ``.npz`` archive with fixed timestamps and order, so equal arrays give equal bytes."""
    handle = io.BytesIO()
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key, value in arrays.items():
            payload = io.BytesIO()
            np.lib.format.write_array(payload, np.ascontiguousarray(value), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_FIXED_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, payload.getvalue(), compresslevel=6)
    return handle.getvalue()


def sidecar_path(path: Path | str) -> Path:
    """The JSON sidecar beside a buffer file."""
    return Path(path).with_suffix(".json")


def save_buffer(buffer: ReplayBuffer, path: Path | str, metadata: dict | None = None) -> Path:
    """Write `buffer` to `path` (``.npz``) and its sidecar (``.json``). Returns the npz path.

    The sidecar holds `metadata` (default: the buffer's), the format name, the sizes and the
    npz file's sha256. Each file is written atomically (`codeworld._files.atomic_output`,
    the folder made): a reader sees the old or the new file, never part of one.

    Raises:
        RunWriteError: a file could not be written (an OSError naming it).
    """
    from codeworld._files import atomic_output, write_atomic

    path = Path(path)
    data = _npz_bytes(buffer.arrays())
    record = dict(metadata if metadata is not None else buffer.metadata)
    record.update({
        "format": FORMAT,
        "env_id": buffer.env_id,
        "n_transitions": len(buffer),
        "n_episodes": buffer.n_episodes,
        "n_terminated": int(buffer.terminated.sum()),
        "n_truncated": int(buffer.truncated.sum()),
        "sha256": hashlib.sha256(data).hexdigest(),
    })
    # the sidecar first: once the npz is there, so is the sidecar that describes it
    write_atomic(sidecar_path(path), json.dumps(record, indent=2, sort_keys=True) + "\n")
    with atomic_output(path) as tmp:
        tmp.write_bytes(data)
    return path


def _paper_split_dones(spec: EnvSpec, dones: np.ndarray, episode_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split the paper's ``dones`` into (terminated, truncated) by Gymnasium's time limit."""
    step_in_episode = np.arange(len(dones)) - episode_start
    if spec.max_episode_steps is None:
        at_limit = np.zeros(len(dones), dtype=bool)
    else:
        at_limit = step_in_episode + 1 == spec.max_episode_steps
    truncated = dones & at_limit
    return dones & ~truncated, truncated


def load_buffer(path: Path | str, env: EnvSpec | str | None = None) -> ReplayBuffer:
    """Read a buffer in codeworld's format or the paper's layout (detected from its keys).

    Args:
        path: the ``.npz`` file.
        env: the environment, a spec or an id (default: the sidecar's id, else the file name).

    Raises:
        BufferError: the file is missing or unreadable, lacks keys, has mismatched lengths or
            shapes, or holds NaN/inf (the message is one line).
        UnknownEnvError: nobody knows the environment (see `codeworld.envs.get_spec`).
    """
    path = Path(path)
    if not path.is_file():
        raise BufferError(f"{path}: no such buffer file")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except Exception as exc:  # zipfile, pickle refusal, truncated file: all mean "unreadable"
        raise BufferError(f"{path}: not a readable .npz file ({type(exc).__name__}: {exc})") from None
    metadata: dict = {}
    sidecar = sidecar_path(path)
    if sidecar.is_file():
        try:
            metadata = json.loads(sidecar.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise BufferError(f"{sidecar}: unreadable sidecar ({exc})") from None
    named = env if env is not None else metadata.get("env_id")
    try:
        spec = resolve_env(named or path.stem)
    except UnknownEnvError:
        if named:
            raise
        raise BufferError(f"{path}: cannot tell the environment from the file name; "
                          "pass env, its id or spec") from None

    if all(k in arrays for k in CODEWORLD_KEYS):
        source = "codeworld"
    elif all(k in arrays for k in PAPER_KEYS):
        source = "paper"
        dones = np.asarray(arrays.pop("dones")).reshape(-1).astype(bool)
        starts = np.asarray(arrays["episode_start"]).reshape(-1).astype(np.int64)
        if len(dones) != len(starts):
            raise BufferError(f"{path}: dones has {len(dones)} rows but episode_start has {len(starts)}")
        arrays["terminated"], arrays["truncated"] = _paper_split_dones(spec, dones, starts)
    else:
        missing = [k for k in CODEWORLD_KEYS if k not in arrays]
        raise BufferError(f"{path}: missing key(s) {', '.join(missing)} "
                          f"(found {', '.join(sorted(arrays)) or 'none'})")
    clean = _coerce(spec, arrays, str(path))
    return ReplayBuffer(spec.env_id, **clean, source=source, metadata=metadata, path=str(path))

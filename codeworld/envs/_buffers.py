"""Replay buffers: the file format (`codeworld.envs._buffer_format`, re-exported here) and which
file is the buffer of an environment.

A CWMB environment's buffer is committed in ``codeworld/data/buffers/``; the paper's buffers are
shipped in ``codeworld/data/paper_buffers/`` (named on the command line as ``--buffer paper``); a
logged dataset is its own buffer; any other environment's is collected with the paper's protocol on
first use and cached in the user cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from codeworld._paths import cache_root, data_dir
from codeworld.envs._buffer_format import (
    CODEWORLD_KEYS,
    FORMAT,
    HELDOUT_FRACTION,
    PAPER_KEYS,
    EpisodeSplit,
    BufferError,
    ReplayBuffer,
    load_buffer,
    make_buffer,
    save_buffer,
    sidecar_path,
)
from codeworld.envs._collection import CollectionConfig, collect_buffer, collection_versions
from codeworld.envs.derive import safe_name
from codeworld.envs.registry import EnvSpec, resolve_env

__all__ = [
    "BUFFER_DIR",
    "CODEWORLD_KEYS",
    "FORMAT",
    "HELDOUT_FRACTION",
    "EpisodeSplit",
    "PAPER",
    "PAPER_BUFFER_DIR",
    "PAPER_KEYS",
    "BufferError",
    "ReplayBuffer",
    "buffer_path",
    "cached_buffer_path",
    "default_buffer",
    "load_buffer",
    "make_buffer",
    "paper_buffer_path",
    "resolve_buffer",
    "save_buffer",
    "sidecar_path",
]

BUFFER_DIR = data_dir("buffers")
# The paper's buffers: $CODEWORLD_PAPER_BUFFERS, else the copy shipped in the package.
PAPER_BUFFER_DIR = Path(os.environ.get("CODEWORLD_PAPER_BUFFERS") or data_dir("paper_buffers"))
# The name that stands for the paper's buffer wherever a buffer file is asked for.
PAPER = "paper"


def buffer_path(env: EnvSpec | str, directory: Path | str | None = None) -> Path:
    """Where the buffer of an environment (a spec or an id) is: the committed one of a CWMB
    environment (``codeworld/data/buffers/<env_id>.npz``); for another environment, its file name
    under `directory` (default: the user cache's ``buffers``), or a logged dataset's own file."""
    spec = resolve_env(env)
    if spec.dataset is not None and directory is None:
        return Path(spec.dataset)
    if spec.shipped:
        return Path(directory or BUFFER_DIR) / f"{spec.env_id}.npz"
    return Path(directory or cache_root() / "buffers") / f"{safe_name(spec.env_id)}.npz"


def cached_buffer_path(env: EnvSpec | str, seed: int = 0) -> Path:
    """The user-cache file of the buffer collected for an environment that is not shipped:
    named by its id, and keyed by its keyword arguments, the seed, the collection protocol and the
    versions that determine the data (`collection_versions`)."""
    spec = resolve_env(env)
    key = json.dumps({"env_id": spec.env_id, "gym_id": spec.gym_id, "kwargs": dict(spec.gym_kwargs),
                      "seed": seed, "protocol": repr(CollectionConfig(seed=seed)),
                      "versions": collection_versions(), "format": FORMAT}, sort_keys=True, default=str)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_root() / "buffers" / f"{safe_name(spec.env_id)}-seed{seed}-{digest}.npz"


def default_buffer(env: EnvSpec | str) -> Path:
    """The buffer a command uses when none is named: the committed one of a CWMB environment, a
    logged dataset's own file, else one collected on first use (with the paper's protocol, seed 0)
    and cached in the user cache (`cached_buffer_path`)."""
    spec = resolve_env(env)
    if spec.shipped or spec.dataset is not None:
        return buffer_path(spec)
    path = cached_buffer_path(spec)
    if not path.is_file():  # each file is written atomically: a concurrent reader sees it whole
        save_buffer(collect_buffer(spec, CollectionConfig(seed=0)), path)
    return path


def paper_buffer_path(env: EnvSpec | str, directory: Path | str | None = None) -> Path:
    """The paper's buffer of an environment (named by the paper's id), which may not exist."""
    return Path(directory or PAPER_BUFFER_DIR) / f"{resolve_env(env).paper_id}.npz"


def resolve_buffer(env: EnvSpec | str, buffer: "ReplayBuffer | str | Path | None") -> "ReplayBuffer | Path":
    """What a ``--buffer`` argument names for `env` (a spec or an id): None for the environment's
    default buffer (`default_buffer`), ``"paper"`` for the paper's, else a file (or an already
    loaded `ReplayBuffer`, returned as it is).

    Raises:
        BufferError: ``"paper"`` for an environment the paper released no buffer for.
    """
    if isinstance(buffer, ReplayBuffer):
        return buffer
    if buffer is not None and str(buffer) != PAPER:
        return Path(buffer)
    spec = resolve_env(env)
    if buffer is None:
        return default_buffer(spec)
    path = paper_buffer_path(spec)
    if not spec.shipped or not path.is_file():
        raise BufferError(f"{spec.env_id}: the paper released no replay buffer for "
                          f"this environment (looked for {path})")
    return path

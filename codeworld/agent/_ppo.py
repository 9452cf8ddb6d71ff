"""The PPO baseline of the agent benchmark: stable-baselines3's PPO on an object-level level.

WorldCoder's paper (Tang, Key, Ellis 2024) sets its agent beside deep RL: PPO needs 10^4-10^5
environment steps for a valid policy on basic levels. This module gives the same measurement on
the same levels as `codeworld.agent._loop.WorldCoderAgent`, counted the same way: every training
step is an environment step, and the cost to the first and to reliable success (``reliable``
successful training episodes in a row) is where the training stood when that episode ended.

`StateEncoder` turns an object-level state into a fixed-size vector without knowing the level:
each thing with a position (a cell in a list of cells, or a dict with ``x`` and ``y``) is painted
onto a grid as *words* (the name of the list it sits in, its string values, its true flags, its
whole-number attributes as ``name=value``), one channel per word of the family's vocabulary;
the mission's words and every other leaf of the state (hashed ``path=value`` facts, for states
without positions) follow. `ObjectGymEnv` is the Gymnasium view of an `ObjectEnv` with that
encoding. Needs the ``train`` extra (stable-baselines3 and a CPU build of torch).
"""

from __future__ import annotations

import importlib.util
import json
import time
import zlib
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

from codeworld.agent.envs import ObjectEnv, make_object_env
from codeworld.agent._loop import Milestone


def _minigrid_words() -> tuple[str, ...]:
    from minigrid.core.constants import COLOR_NAMES, OBJECT_TO_IDX

    kinds = tuple(k for k in OBJECT_TO_IDX if k not in ("unseen", "empty", "agent"))
    return (("agent", "objects", "walls", "open", "locked")
            + tuple(f"dir={d}" for d in range(4)) + kinds + tuple(COLOR_NAMES))


# Each family's vocabulary, from its documented state schema: the names of its lists and entities,
# the values its strings take, its flags and its small whole-number attributes. A word outside the
# vocabulary (or every word, for a family without one) lands in one of a few hashed channels.
FAMILY_WORDS: dict[str, Callable[[], tuple[str, ...]]] = {
    "sokoban": lambda: ("agent", "boxes", "targets", "walls"),
    "minigrid": _minigrid_words,
}


def family_words(family: str) -> tuple[str, ...]:
    """The vocabulary of a family's observation encoding (empty for a family without one)."""
    make = FAMILY_WORDS.get(family)
    return make() if make is not None else ()


def _is_cell(value: Any) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value))


def _is_entity(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value.get(k), int) and not isinstance(value.get(k), bool) for k in ("x", "y"))


def entity_words(entity: dict) -> list[str]:
    """The words an entity paints on its cell (position keys left out; nested dicts included)."""
    words = []
    for key, value in sorted(entity.items()):
        if key in ("x", "y") or value is None:
            continue
        if isinstance(value, bool):
            if value:
                words.append(key)
        elif isinstance(value, int):
            words.append(f"{key}={value}")
        elif isinstance(value, str):
            words.append(value)
        elif isinstance(value, dict):
            words += entity_words(value)
    return words


class StateEncoder:
    """A fixed-size vector of an object-level state and its mission, the same layout on every level
    of a family.

    Args:
        words: the vocabulary, one channel each (see `family_words`).
        grid: the side of the square grid positions are painted on; a state wider or taller is
            refused.
        other_channels: hashed channels for words outside the vocabulary.
        fact_channels: hashed channels for the state's other leaves.

    The vector is ``grid * grid * channels`` cell features (1.0 where a word is present), then
    ``channels`` mission features (1.0 for each word of the mission), then ``fact_channels``
    features for everything without a position (1.0 at the hash of each ``path=value``, such as
    ``open.drawer 1=true``; list items share their list's path), all in [0, 1].
    """

    def __init__(self, words: Sequence[str], grid: int = 12, other_channels: int = 8,
                 fact_channels: int = 256):
        if grid < 1 or other_channels < 1 or fact_channels < 1:
            raise ValueError("grid, other_channels and fact_channels must be at least 1")
        self.words = tuple(dict.fromkeys(words))
        self.index = {w: i for i, w in enumerate(self.words)}
        self.grid = grid
        self.other_channels = other_channels
        self.fact_channels = fact_channels
        self.channels = len(self.words) + other_channels
        self.size = grid * grid * self.channels + self.channels + fact_channels

    @classmethod
    def for_family(cls, family: str, grid: int = 12) -> "StateEncoder":
        return cls(family_words(family), grid=grid)

    def channel(self, word: str) -> int:
        """The channel of a word (a hashed one when it is not in the vocabulary)."""
        known = self.index.get(word)
        if known is not None:
            return known
        return len(self.words) + zlib.crc32(word.encode("utf-8")) % self.other_channels

    def cells(self, vector: np.ndarray) -> np.ndarray:
        """The grid part of an encoded vector, shaped ``(grid, grid, channels)`` (row y, column x)."""
        return vector[:self.grid * self.grid * self.channels].reshape(self.grid, self.grid, self.channels)

    def encode(self, state: dict, mission: str = "") -> np.ndarray:
        """The vector of ``state`` and ``mission`` (float32, length `size`).

        Raises:
            ValueError: a position outside the grid.
        """
        cells = np.zeros((self.grid, self.grid, self.channels), dtype=np.float32)

        def paint(x: int, y: int, words: list[str]) -> None:
            if not (0 <= x < self.grid and 0 <= y < self.grid):
                raise ValueError(f"position ({x}, {y}) is outside the encoder's {self.grid}x{self.grid} "
                                 "grid; build the StateEncoder with a larger grid")
            for word in words:
                cells[y, x, self.channel(word)] = 1.0

        facts = np.zeros(self.fact_channels, dtype=np.float32)

        def note(path: str, value: Any) -> None:
            if isinstance(value, dict):
                for key, inner in value.items():
                    note(f"{path}.{key}" if path else str(key), inner)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    note(path, item)
            else:
                fact = f"{path}={json.dumps(value)}".encode("utf-8")
                facts[zlib.crc32(fact) % self.fact_channels] = 1.0

        for key, value in state.items():
            if _is_cell(value):
                paint(value[0], value[1], [key])
            elif _is_entity(value):
                paint(value["x"], value["y"], [key] + entity_words(value))
            elif isinstance(value, (list, tuple)) and value and all(_is_cell(v) or _is_entity(v) for v in value):
                for item in value:
                    if _is_cell(item):
                        paint(item[0], item[1], [key])
                    else:
                        paint(item["x"], item["y"], [key] + entity_words(item))
            else:
                note(key, value)
        said = np.zeros(self.channels, dtype=np.float32)
        for word in mission.lower().replace(",", " ").replace(".", " ").split():
            said[self.channel(word)] = 1.0
        return np.concatenate([cells.reshape(-1), said, facts])


class ObjectGymEnv(gym.Env):
    """An `ObjectEnv` as a Gymnasium env with `StateEncoder` observations.

    Episodes reset with ``seeds`` in turn (from ``seeds[offset]``), as the agent's episodes do, so
    that every method meets the same layouts; without seeds the level's own random stream goes on.
    ``info["success"]`` is True on the step that gets reward.

    Args:
        env: the level.
        encoder: the observation encoding.
        seeds: episode seeds, cycled (None: the env's own sequence).
        offset: where in ``seeds`` this copy starts.
    """

    metadata = {"render_modes": []}

    def __init__(self, env: ObjectEnv, encoder: StateEncoder, seeds: Sequence[int] | None = None,
                 offset: int = 0):
        self.env = env
        self.encoder = encoder
        self.seeds = list(seeds) if seeds else None
        self.offset = offset
        self.observation_space = gym.spaces.Box(0.0, 1.0, (encoder.size,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(env.n_actions)
        self.mission = ""
        self.episodes = 0
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if self.seeds:
            episode_seed = self.seeds[(self.offset + self.episodes) % len(self.seeds)]
        else:
            episode_seed = seed
        state, self.mission = self.env.reset(seed=episode_seed)
        self.episodes += 1
        return self.encoder.encode(state, self.mission), {"seed": episode_seed}

    def step(self, action):
        state, reward, terminated, truncated = self.env.step(int(action))
        self.steps += 1
        return (self.encoder.encode(state, self.mission), float(reward), bool(terminated),
                bool(truncated), {"success": reward > 0})

    def close(self) -> None:
        self.env.close()


@dataclass(frozen=True)
class PPOConfig:
    """PPO's settings: rl-baselines3-zoo's values for MiniGrid-DoorKey-5x5 (from lcswillems'
    rl-starter-files), without its observation and reward normalization.

    Attributes:
        n_envs: copies of the level stepped together; every copy's steps count.
        n_steps: steps per copy in one rollout.
        batch_size: minibatch size of an update.
        n_epochs: passes over a rollout.
        learning_rate, gamma, gae_lambda, clip_range, ent_coef: PPO's usual settings.
        grid: the side of the observation grid (`StateEncoder`).
    """

    n_envs: int = 8
    n_steps: int = 128
    batch_size: int = 64
    n_epochs: int = 10
    learning_rate: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.0
    grid: int = 12

    def algorithm_kwargs(self) -> dict:
        data = asdict(self)
        data.pop("n_envs")
        data.pop("grid")
        return data


def _milestone_callback(budget: int, reliable: int, valid_rate: float, window: int, stop_early: bool):
    from stable_baselines3.common.callbacks import BaseCallback

    class MilestoneCallback(BaseCallback):
        """Counts finished training episodes and notes the milestones; stops at the budget, or
        once every milestone is reached."""

        def __init__(self):
            super().__init__()
            self.episodes = 0
            self.successes = 0
            self.streak = 0
            self.recent: deque[bool] = deque(maxlen=window)
            self.first: Milestone | None = None
            self.reliable: Milestone | None = None
            self.valid: Milestone | None = None

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"]):
                if not done:
                    continue
                success = bool(info.get("success"))
                self.episodes += 1
                self.recent.append(success)
                here = Milestone(self.episodes, self.num_timesteps, 0, 0)
                if success:
                    self.successes += 1
                    self.streak += 1
                    self.first = self.first or here
                    if self.streak >= reliable and self.reliable is None:
                        self.reliable = here
                else:
                    self.streak = 0
                if (self.valid is None and len(self.recent) == window
                        and sum(self.recent) >= valid_rate * window):
                    self.valid = here
            if stop_early and self.reliable is not None and self.valid is not None:
                return False
            return self.num_timesteps < budget

    return MilestoneCallback()


def ppo_baseline(level: str, budget_steps: int, seed: int = 0, reliable: int = 3, *,
                 seeds: Sequence[int] | None = None, max_episode_steps: int | None = None,
                 config: PPOConfig | None = None, valid_rate: float = 0.9, window: int = 100,
                 stop_early: bool = True) -> dict:
    """Train PPO on one level until reliable success or ``budget_steps`` environment steps.

    Args:
        level: ``family:level`` (see `codeworld.agent.make_object_env`).
        budget_steps: the most environment steps, all copies together.
        seed: PPO's seed.
        reliable: successful episodes in a row that count as reliable success.
        seeds: episode seeds, cycled (the agent's layouts); None: the level's own sequence.
        max_episode_steps: the episode limit (None: the level's own).
        config: PPO's settings.
        valid_rate: the success rate over the last ``window`` training episodes at which the
            policy counts as valid (the ``valid_policy`` milestone). A streak of ``reliable``
            successes can come by luck while the policy is still near random on an easy level;
            this milestone cannot.
        window: the training episodes of that rate.
        stop_early: end training once reliable success and a valid policy are both reached
            (off: spend the whole budget).

    Returns:
        The accounting in the shape of `codeworld.agent._loop.summary_row`: ``level``,
        ``episodes``, ``successes``, ``env_steps``, ``llm_calls`` and ``tokens`` (0),
        ``first_success`` and ``reliable_success`` (``episodes``, ``env_steps``, ``llm_calls``,
        ``tokens``; None when not reached), ``wall_seconds``, plus ``method``, ``valid_policy``
        (a milestone too), ``budget_steps``, ``recent_success_rate`` (over the last ``window``
        training episodes) and ``observation_size``.

    Raises:
        ImportError: stable-baselines3 is not installed (the ``train`` extra).
        ValueError: a budget or ``reliable`` below 1.
    """
    if budget_steps < 1 or reliable < 1 or window < 1:
        raise ValueError("budget_steps, reliable and window must be at least 1")
    if not 0.0 < valid_rate <= 1.0:
        raise ValueError(f"valid_rate must be in (0, 1], got {valid_rate}")
    from codeworld.training._algorithms import INSTALL_HINT
    from codeworld.training._sb3 import sb3_agent

    if importlib.util.find_spec("stable_baselines3") is None:
        raise ImportError(f"the PPO baseline needs stable-baselines3: {INSTALL_HINT}")
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv

    config = config or PPOConfig()
    # A small MLP gains nothing from more threads, and they would spin on cores others need.
    torch.set_num_threads(1)
    started = time.perf_counter()
    levels = [make_object_env(level, max_steps=max_episode_steps) for _ in range(config.n_envs)]
    encoder = StateEncoder.for_family(levels[0].family, grid=config.grid)
    copies = [ObjectGymEnv(env, encoder, seeds, offset=i) for i, env in enumerate(levels)]
    venv = DummyVecEnv([lambda e=e: e for e in copies])
    callback = _milestone_callback(budget_steps, reliable, valid_rate, window, stop_early)
    try:
        model = sb3_agent("PPO", venv, seed=seed, **config.algorithm_kwargs())
        model.learn(total_timesteps=budget_steps, callback=callback)
    finally:
        venv.close()
    milestone = (lambda m: None if m is None else asdict(m))
    recent = list(callback.recent)
    return {"method": "ppo", "level": levels[0].name, "episodes": callback.episodes,
            "successes": callback.successes, "env_steps": sum(c.steps for c in copies),
            "llm_calls": 0, "tokens": 0, "first_success": milestone(callback.first),
            "reliable_success": milestone(callback.reliable),
            "valid_policy": milestone(callback.valid), "valid_rate": valid_rate, "window": window,
            "recent_success_rate": round(sum(recent) / len(recent), 3) if recent else 0.0,
            "budget_steps": budget_steps, "seed": seed, "observation_size": encoder.size,
            "config": asdict(config), "wall_seconds": round(time.perf_counter() - started, 2)}

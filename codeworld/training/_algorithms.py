"""The RL algorithms a policy can be trained with inside a model, and their keyword arguments."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from codeworld.registry import Registry

INSTALL_HINT = "pip install 'codeworld[train]' (stable-baselines3 and a CPU build of torch)"


@dataclass(frozen=True)
class Algorithm:
    """An RL algorithm of stable-baselines3 that `codeworld.training.train_policy` offers.

    Attributes:
        name: the ``--algo`` name.
        class_name: its class in ``stable_baselines3``.
        discrete: whether it trains on discrete actions.
        continuous: whether it trains on continuous (box) actions.
    """

    name: str
    class_name: str
    discrete: bool
    continuous: bool

    @property
    def actions(self) -> str:
        return "discrete and continuous" if self.discrete and self.continuous else (
            "discrete" if self.discrete else "continuous")


ALGORITHMS: Registry[Algorithm] = Registry("algorithm", {a.name: a for a in (
    Algorithm("ppo", "PPO", discrete=True, continuous=True),
    Algorithm("dqn", "DQN", discrete=True, continuous=False),
    Algorithm("sac", "SAC", discrete=False, continuous=True),
)})
"""The algorithms `train_policy` offers, by name (``ppo``, ``dqn``, ``sac``): stable-baselines3's
classes of the same names, each for the action spaces it handles."""


def algorithm_kwargs(given: Mapping[str, Any], algo: Algorithm, n_envs: int, steps: int) -> dict[str, Any]:
    """The algorithm's keyword arguments: the `given` ones over rollouts sized to short runs (PPO)."""
    kwargs: dict[str, Any] = {}
    if algo.name == "ppo" and "n_steps" not in given:
        # SB3's 2048 steps per copy would make a short run one long rollout; keep 2048 otherwise.
        n_steps = int(min(2048, max(16, steps // max(1, n_envs) // 4)))
        kwargs["n_steps"] = n_steps
        if "batch_size" not in given:
            rollout = n_steps * n_envs
            kwargs["batch_size"] = 64 if rollout % 64 == 0 else rollout
    kwargs.update(given)
    return kwargs

"""One frozen config per planner; the defaults are the CWMB paper's (Dainese et al., 2024, App. on planning)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class MctsConfig:
    """UCT for discrete actions (csrc/mcts.h).

    Attributes:
        num_simulations: simulations per real step (paper: 25).
        rollout_depth: the longest random rollout from a new leaf (paper: 100 steps).
        c_uct: exploration constant of UCT (paper: 1.0).
        gamma: discount factor (paper: 0.99).
        wave_size: simulations whose leaves are stepped in one batched model call, for compiled
            models and for the oracle. 1 is the paper's sequential UCT.
        python_wave_size: wave size for models on the batched Python path, which is called
            once per wave and rollout depth: larger waves mean fewer Python calls and a search
            further from sequential UCT (ours, not the paper's).
    """

    num_simulations: int = 25
    rollout_depth: int = 100
    c_uct: float = 1.0
    gamma: float = 0.99
    wave_size: int = 1
    python_wave_size: int = 8

    def __post_init__(self) -> None:
        if self.num_simulations < 1 or self.rollout_depth < 0:
            raise ValueError("num_simulations must be >= 1 and rollout_depth >= 0")
        if self.wave_size < 1 or self.python_wave_size < 1:
            raise ValueError("wave sizes must be >= 1")


@dataclass(frozen=True)
class CemConfig:
    """The cross-entropy method for continuous actions (csrc/cem.h).

    The plan is the best sequence sampled in any iteration (the paper's code takes the best of
    the last iteration; on a deterministic model the best seen is never worse).

    Attributes:
        horizon: length of a planned action sequence (paper: 100).
        iterations: refits of the sampling distribution per plan (paper: 20).
        num_samples: sequences sampled per iteration (paper: 1000).
        num_elites: best sequences the distribution is refitted to (paper: 100).
        gamma: discount of rewards along a sequence (1.0: plain sum over the horizon).
        init_std: the initial standard deviation, as a fraction of the half-width of the action
            box; the mean starts at the box's centre. The paper's code starts from
            ``max(|low|, |high|) / 2``, which is 0.5 of the half-width for the CWMB boxes (all
            symmetric about 0).
        replan_every: real steps executed from one plan before planning again. None is the
            paper's open loop (the whole sequence is executed, then a new plan is made); 1 is
            receding-horizon control (MPC).
        warm_start: start a new plan's mean from the previous plan's mean, shifted by the steps
            executed (only matters when replanning).
        threads: threads rolling out the samples through a compiled model (0: every core this
            process may use). Plans do not depend on it, so cached baselines ignore it.
    """

    horizon: int = 100
    iterations: int = 20
    num_samples: int = 1000
    num_elites: int = 100
    gamma: float = 1.0
    init_std: float = 0.5
    replan_every: int | None = None
    warm_start: bool = True
    threads: int = 1

    def __post_init__(self) -> None:
        if self.threads < 0:
            raise ValueError("threads must be >= 0 (0: every core)")
        if min(self.horizon, self.iterations, self.num_samples, self.num_elites) < 1:
            raise ValueError("horizon, iterations, num_samples and num_elites must be >= 1")
        if self.num_elites > self.num_samples:
            raise ValueError("num_elites cannot exceed num_samples")
        if self.replan_every is not None and not 1 <= self.replan_every <= self.horizon:
            raise ValueError("replan_every must be between 1 and horizon (or None for open loop)")

    @property
    def steps_per_plan(self) -> int:
        """How many actions of each plan are executed."""
        return self.horizon if self.replan_every is None else self.replan_every


CONFIG_TYPES: dict[str, type] = {"mcts": MctsConfig, "cem": CemConfig}


def make_config(planner: str, **overrides: Any):
    """The config of `planner` (``"mcts"`` or ``"cem"``) with the paper's defaults and `overrides`.

    Raises:
        KeyError: an unknown planner.
        TypeError: an override that is not a field of that config.
    """
    try:
        cls = CONFIG_TYPES[planner]
    except KeyError:
        raise KeyError(f"unknown planner {planner!r} (known: {', '.join(CONFIG_TYPES)})") from None
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {', '.join(unknown)} (fields: {', '.join(sorted(names))})")
    return replace(cls(), **overrides)


def config_to_dict(config) -> dict:
    """A config as a plain dict with its planner name (for caches, reports and the worker)."""
    planner = next(name for name, cls in CONFIG_TYPES.items() if isinstance(config, cls))
    return {"planner": planner, **{f.name: getattr(config, f.name) for f in fields(config)}}


# Fields that change how fast a plan is made, not which plan: left out of cache keys.
SPEED_ONLY_FIELDS = frozenset({"threads"})


def config_from_dict(data: dict):
    """The inverse of `config_to_dict`."""
    data = dict(data)
    return make_config(data.pop("planner"), **data)

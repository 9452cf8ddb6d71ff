"""Plans that stay where the model is right: the training data's support as a planner setting.

A learned model is right where its data was; a planner that rolls it out visits states the data
never showed, where a wrong model may promise rewards the real environment never pays. With
`SupportConfig` switched on (``codeworld plan --set support.mode=range``), a simulated step whose
new state lies outside the support of the recorded states earns a pessimistic reward instead of
the model's (and, with a cut-off, ends the rollout), so plans keep to the data.

The support is taken from the training episodes of the environment's buffer (`support_of`), sent
to the sandbox worker with the planner's config, and applied there by wrapping the model
(`wrap_access`): a compiled model stays compiled (`codeworld.kernels._support.wrap_compiled`), the
batched Python path tests each batch in one Numba call. The oracle plans on the true simulator
and ignores the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from codeworld.envs import EnvSpec
    from codeworld.planning.planners import ModelAccess

SUPPORT_MODES = ("off", "range", "nearest")


@dataclass(frozen=True)
class SupportConfig:
    """Where a planner trusts the model: the training data's support (off by default, ours, not
    the paper's).

    Attributes:
        mode: ``"off"``; ``"range"``: a state is outside when a component leaves the recorded
            [min, max] widened by `margin` times that component's recorded range on each side;
            ``"nearest"``: that, or when no recorded state lies within `margin` of it in
            root-mean-square distance per component, each component divided by its recorded
            range (a k-d tree of the recorded states; the radius grows with the square root of
            the state's size, so that it means the same for 3 components as for 300).
        margin: the widening of ``range``, and the radius of ``nearest``, in recorded ranges.
        penalty: a simulated step that lands outside earns the lowest recorded reward minus
            `penalty` times the recorded rewards' range (1 when they are all equal), in place of
            the model's reward, which is not trusted there.
        cutoff: such a step also ends the rollout. Where most rewards are negative, ending early
            avoids them: keep the cut-off off there, or raise the penalty.
    """

    mode: str = "off"
    margin: float = 0.1
    penalty: float = 1.0
    cutoff: bool = False

    def __post_init__(self) -> None:
        if self.mode not in SUPPORT_MODES:
            raise ValueError(f"support mode must be one of {', '.join(SUPPORT_MODES)}, got {self.mode!r}")
        if not self.margin >= 0 or not self.penalty >= 0:
            raise ValueError("support margin and penalty must be >= 0")

    @property
    def on(self) -> bool:
        return self.mode != "off"


@dataclass
class Support:
    """The support of recorded states under a `SupportConfig`, as arrays the kernels read.

    Attributes:
        config: the setting.
        arrays: float64 ``low``/``high`` (the widened box), ``offset``/``scale`` (recorded min and
            range), ``data`` (the scaled recorded states), ``lower``/``upper`` (the k-d tree's node
            boxes), int64 ``index``/``start``/``end``/``leaf`` (its nodes; one empty leaf in
            ``range`` mode).
        outside_reward: the reward of a step that lands outside.
    """

    config: SupportConfig
    arrays: dict
    outside_reward: float

    @classmethod
    def fit(cls, config: SupportConfig, states: np.ndarray, rewards: np.ndarray) -> "Support":
        """The support of the recorded `states` (n, n_state), whose transitions earned `rewards`."""
        states = np.asarray(states, dtype=np.float64)
        states = states.reshape(len(states), -1)
        rewards = np.asarray(rewards, dtype=np.float64).ravel()
        if len(states) == 0:
            raise ValueError("the support needs at least one recorded state")
        lo, hi = states.min(axis=0), states.max(axis=0)
        spread = np.where(hi - lo > 0, hi - lo, 1.0)
        widen = config.margin * spread
        r_spread = float(rewards.max() - rewards.min()) if rewards.size else 0.0
        outside = (float(rewards.min()) if rewards.size else 0.0) - config.penalty * (r_spread or 1.0)
        arrays = {"low": lo - widen, "high": hi + widen, "offset": lo, "scale": spread}
        arrays.update(_tree_arrays((states - lo) / spread) if config.mode == "nearest"
                      else _empty_tree(states.shape[1]))
        return cls(config, {k: np.ascontiguousarray(v) for k, v in arrays.items()}, outside)

    def to_dict(self) -> dict:
        """What the sandbox worker gets (`from_dict` rebuilds it)."""
        return {"arrays": self.arrays, "outside_reward": self.outside_reward}

    @classmethod
    def from_dict(cls, config: SupportConfig, data: dict) -> "Support":
        return cls(config, {k: np.ascontiguousarray(v) for k, v in data["arrays"].items()},
                   float(data["outside_reward"]))

    def outside(self, states: np.ndarray) -> np.ndarray:
        """Whether each row of `states` lies outside the support."""
        from codeworld.kernels._support import outside_batch

        a = self.arrays
        states = np.ascontiguousarray(states, dtype=np.float64).reshape(len(states), -1)
        return outside_batch(states, a["low"], a["high"], self.config.mode == "nearest", a["offset"], a["scale"],
                             a["data"], a["index"], a["start"], a["end"], a["leaf"], a["lower"], a["upper"],
                             self.radius2)

    @property
    def radius2(self) -> float:
        """The squared radius of ``nearest`` in scaled units: `margin` per component, RMS."""
        return self.config.margin ** 2 * len(self.arrays["low"])


def _tree_arrays(points: np.ndarray) -> dict:
    from sklearn.neighbors import KDTree

    points = np.unique(points, axis=0)
    data, index, nodes, bounds = KDTree(points, leaf_size=16).get_arrays()
    return {"data": np.asarray(data, dtype=np.float64), "index": np.asarray(index, dtype=np.int64),
            "start": nodes["idx_start"].astype(np.int64), "end": nodes["idx_end"].astype(np.int64),
            "leaf": nodes["is_leaf"].astype(np.int64), "lower": np.asarray(bounds[0], dtype=np.float64),
            "upper": np.asarray(bounds[1], dtype=np.float64)}


def _empty_tree(n_state: int) -> dict:
    return {"data": np.zeros((1, n_state)), "index": np.zeros(1, np.int64), "start": np.zeros(1, np.int64),
            "end": np.zeros(1, np.int64), "leaf": np.ones(1, np.int64), "lower": np.zeros((1, n_state)),
            "upper": np.zeros((1, n_state))}


def support_of(spec: EnvSpec, config: SupportConfig, buffer=None) -> Support:
    """The support of the states recorded in the training episodes of `spec`'s buffer (its default
    one, or `buffer`: anything ``--buffer`` names), split as a synthesis run splits it by default."""
    from codeworld.envs._buffers import EpisodeSplit, ReplayBuffer, load_buffer, resolve_buffer

    data = resolve_buffer(spec, buffer)
    data = data if isinstance(data, ReplayBuffer) else load_buffer(data, spec)
    train, _ = EpisodeSplit.draw(data).parts(data)
    states = np.concatenate([train.obs.reshape(len(train), -1), train.next_obs.reshape(len(train), -1)])
    return Support.fit(config, states, train.rewards)


def wrap_access(access: ModelAccess, support: Support) -> ModelAccess:
    """`access` with every step tested against `support` (see the module docstring)."""
    from codeworld.planning.planners import ModelAccess

    def step_batch(states, actions):
        nxt, rew, done = access.step_batch(states, actions)
        nxt = np.asarray(nxt, dtype=np.float64).reshape(len(states), -1)
        rew = np.array(rew, dtype=np.float64)
        done = np.array(done, dtype=np.uint8)
        out = support.outside(nxt)
        rew[out] = support.outside_reward
        if support.config.cutoff:
            done[out] = 1
        return nxt, rew, done

    compiled = None
    if access.compiled is not None:
        compiled = _CompiledSupport(access.compiled, support)
    return ModelAccess(compiled=compiled, step_batch=step_batch if access.step_batch else None)


class _CompiledSupport:
    """A compiled model behind the support test: ``address`` and ``cfunc`` like a `LoadedModel`."""

    def __init__(self, model, support: Support):
        from codeworld.kernels._support import wrap_compiled
        from codeworld._model import STEP_PROTOTYPE

        self.model, self.support = model, support  # the callback reads their memory
        self._callback = wrap_compiled(model.cfunc, support.arrays, support.config.mode == "nearest",
                                       support.radius2, support.outside_reward, support.config.cutoff)
        self.address = self._callback.address
        self.cfunc = STEP_PROTOTYPE(self.address)

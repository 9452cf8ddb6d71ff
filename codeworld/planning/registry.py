"""The registry of planners: a name maps to its config class, its planner class and the actions it
plans over. Everything that chooses a planner reads it: ``codeworld plan --planner`` (choices and
help), an environment's default (`EnvSpec.planner`), the evaluation by return, the sandbox worker
that plans with a model, and the caches of random and oracle returns.

Adding a planner: write its config and planner class in a module (see `codeworld.planning._cem`),
register it below, test it. A planner defined outside the package registers itself in the module
that defines it, so that a sandbox worker importing that module finds it too (see CONTRIBUTING.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, is_dataclass, replace
from typing import Any

from codeworld.planning._cem import CemConfig, CemPlanner
from codeworld.planning._mcts import MctsConfig, MctsPlanner
from codeworld.planning.planners import Planner
from codeworld.registry import Registry


@dataclass(frozen=True)
class PlannerEntry:
    """One planner.

    Attributes:
        name: the name used on the command line, in env specs, configs as dicts and caches.
        config_class: its frozen config dataclass; the defaults are its paper's values.
        planner_class: builds the planner: ``planner_class(config, n_actions=..., action_low=...,
            action_high=...)`` (see `codeworld.planning.planners.Planner`).
        discrete: plans over discrete actions (True) or a continuous action box (False).
        summary: one line for help texts.
        cache_version: raise it when the planner's results change for the same config and seed,
            so that cached oracle returns made with the old code are not read back.
    """

    name: str
    config_class: type
    planner_class: type[Planner]
    discrete: bool
    summary: str
    cache_version: int = 1

    @property
    def actions(self) -> str:
        """``"discrete"`` or ``"continuous"``: the action spaces it plans over."""
        return "discrete" if self.discrete else "continuous"


PLANNERS: Registry[PlannerEntry] = Registry("planner")


def register_planner(entry: PlannerEntry) -> PlannerEntry:
    """Add a planner to the registry (its name must be new)."""
    PLANNERS.register(entry.name, entry)
    return entry


register_planner(PlannerEntry("mcts", MctsConfig, MctsPlanner, discrete=True,
                              summary="UCT over discrete actions (the CWMB paper's planner for them)"))
# cache 2: CEM's normals are drawn in pairs.
register_planner(PlannerEntry("cem", CemConfig, CemPlanner, discrete=False, cache_version=2,
                              summary="the cross-entropy method over action sequences in a box "
                                      "(the CWMB paper's planner for continuous actions)"))


def get_planner(name: str) -> PlannerEntry:
    """The planner called `name`; the error lists close matches.

    Raises:
        KeyError: an unknown planner.
    """
    return PLANNERS.get(name)


def planner_of(config: Any) -> PlannerEntry:
    """The registered planner whose config class `config` is an instance of."""
    for entry in PLANNERS.values():
        if isinstance(config, entry.config_class):
            return entry
    raise TypeError(f"{type(config).__name__} is not the config of a registered planner "
                    f"(known: {', '.join(PLANNERS)})")


def make_config(planner: str, **overrides: Any):
    """The config of `planner` (e.g. ``"mcts"`` or ``"cem"``) with its paper's defaults and `overrides`.

    Raises:
        KeyError: an unknown planner.
        TypeError: an override that is not a field of that config.
    """
    cls = get_planner(planner).config_class
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {', '.join(unknown)} (fields: {', '.join(sorted(names))})")
    config = cls()
    for name, value in overrides.items():  # a nested config (such as `support`) given as a dict
        default = getattr(config, name)
        if is_dataclass(default) and isinstance(value, dict):
            overrides[name] = type(default)(**value)
    return replace(config, **overrides)


def config_to_dict(config) -> dict:
    """A config as a plain dict with its planner name (for caches, reports and the worker)."""
    values = {f.name: getattr(config, f.name) for f in fields(config)}
    return {"planner": planner_of(config).name,
            **{k: asdict(v) if is_dataclass(v) else v for k, v in values.items()}}


def config_from_dict(data: dict):
    """The inverse of `config_to_dict`."""
    data = dict(data)
    return make_config(data.pop("planner"), **data)


def lookahead(config, default: int = 30) -> int:
    """How many steps ahead of the real state a planner with `config` steps its model: a
    sequence's ``horizon`` (CEM) or a rollout's ``rollout_depth`` (MCTS); `default` for a
    planner that names neither."""
    for name in ("horizon", "rollout_depth"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return default


# Fields that change how fast a plan is made, not which plan: left out of cache keys.
SPEED_ONLY_FIELDS = frozenset({"threads"})
# Fields the oracle ignores (it plans on the true simulator): left out of its cache and reference keys.
MODEL_ONLY_FIELDS = frozenset({"support"})


def make_planner(config, spec) -> Planner:
    """The planner for `config` (a registered planner's config) acting in the env `spec` describes.

    `spec` needs ``n_actions``, ``action_low`` and ``action_high`` (an `EnvSpec` has them).
    """
    return planner_of(config).planner_class(config, n_actions=spec.n_actions, action_low=spec.action_low,
                                            action_high=spec.action_high)

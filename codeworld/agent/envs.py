"""The registry of the agent's object-level environments: ``sokoban:LEVEL``, ``minigrid:LEVEL``
and ``household:LEVEL``.

An object-level environment has ``reset(seed) -> (state, mission)``, ``step(action) -> (state,
reward, terminated, truncated)``, ``n_actions``, ``action_names``, ``description``, ``name``,
``family`` and ``max_steps``. States are JSON-ready dicts; the reward is 1.0 on success.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from codeworld.agent._household import LEVELS as HOUSEHOLD_LEVELS
from codeworld.agent._household import make_household
from codeworld.agent._minigrid_env import LEVEL_IDS, MiniGridEnv
from codeworld.agent._sokoban import LEVELS, make_sokoban
from codeworld.registry import Registry


class ObjectEnv(Protocol):
    """What the agent needs from an environment."""

    n_actions: int
    action_names: tuple[str, ...]
    description: str
    name: str
    family: str
    max_steps: int

    def reset(self, seed: int | None = None) -> tuple[dict, str]: ...

    def step(self, action: int) -> tuple[dict, float, bool, bool]: ...

    def close(self) -> None: ...


FAMILIES: Registry[Callable[..., Any]] = Registry("agent env family", {
    "sokoban": make_sokoban,
    "minigrid": MiniGridEnv,
    "household": make_household,
})


def register_family(name: str, factory: Callable[..., Any]) -> None:
    """Add an environment family: ``factory(level, max_steps=...)`` builds one level."""
    FAMILIES.register(name, factory, replace=True)


def list_levels() -> list[str]:
    """The bundled level names, ``family:level``."""
    return ([f"sokoban:{name}" for name in LEVELS] + [f"minigrid:{name}" for name in LEVEL_IDS]
            + [f"household:{name}" for name in HOUSEHOLD_LEVELS])


def make_object_env(name: str, max_steps: int | None = None) -> ObjectEnv:
    """Build ``family:level`` (``sokoban:corridor``, ``sokoban:gen:3``, ``minigrid:doorkey``,
    ``household:heat``, ``household:gen:7``).

    Raises:
        KeyError: an unknown family or level.
        ValueError: a generated level whose seed is not a whole number.
    """
    family, _, level = name.partition(":")
    if family not in FAMILIES or not level:
        raise KeyError(f"unknown agent env {name!r}: use FAMILY:LEVEL with FAMILY in "
                       f"{sorted(FAMILIES)}; bundled: {', '.join(list_levels())}")
    kwargs = {} if max_steps is None else {"max_steps": max_steps}
    return FAMILIES.get(family)(level, **kwargs)

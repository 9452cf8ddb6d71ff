"""The registry of synthesis methods: a name maps to its config class and its search class."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from codeworld.registry import Registry
from codeworld.synthesis.config import ASSIST_ABLATIONS
from codeworld.synthesis._gif_mcts import ACTION_ABLATIONS, GifMcts, GifMctsConfig
from codeworld.synthesis._rex import Rex, RexConfig, ZeroShot, ZeroShotConfig
from codeworld.synthesis.types import MethodConfig, Search


@dataclass(frozen=True)
class Method:
    """One synthesis method.

    Attributes:
        name: the name used on the command line and in run directories.
        config_class: its frozen config dataclass.
        search_class: builds the search: ``search_class(config, seed=seed)``.
        summary: one line for help texts.
        ablations: the method's variants, by name (``gif-mcts/no-fix``): config fields each
            switches (``--set`` syntax; a ``finish.`` field belongs to the run's finish step).
    """

    name: str
    config_class: type
    search_class: Callable[..., Search]
    summary: str
    ablations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def make(self, config: MethodConfig | None = None, seed: int = 0) -> Search:
        """A fresh search with ``config`` (the defaults when None)."""
        return self.search_class(config or self.config_class(), seed=seed)


METHODS: Registry[Method] = Registry("synthesis method", unknown="unknown {kind} {name!r}{hint}; known: {known}")


def register_method(method: Method) -> Method:
    """Add a method to the registry (its name must be new)."""
    METHODS.register(method.name, method)
    return method


register_method(Method("gif-mcts", GifMctsConfig, GifMcts,
                       "GIF-MCTS: tree search over generate / improve / fix (Dainese et al. 2024)",
                       {**ACTION_ABLATIONS, **ASSIST_ABLATIONS}))
register_method(Method("worldcoder", RexConfig, Rex,
                       "WorldCoder's REx: Thompson sampling over programs to refine", ASSIST_ABLATIONS))
register_method(Method("zero-shot", ZeroShotConfig, ZeroShot,
                       "independent generations from scratch, the best kept", ASSIST_ABLATIONS))


def get_method(name: str) -> Method:
    """The method called ``name``; the error lists close matches."""
    return METHODS.get(name)


def config_to_json(config: MethodConfig) -> dict:
    """A config dataclass as JSON-ready data (tuples become lists)."""
    return dataclasses.asdict(config)


def config_from_json(config_class: type, data: dict) -> MethodConfig:
    """Rebuild a config from `config_to_json` data (unknown keys raise TypeError).

    A field missing from `data` takes its default, except those in the class's
    ``ABSENT_IN_OLDER_RUNS`` mapping: a switch added after `data` was saved, whose absence means
    the run was made without it (so that the run resumes with the prompts it was made with).
    """
    hints = typing.get_type_hints(config_class)
    kwargs = {key: value for key, value in getattr(config_class, "ABSENT_IN_OLDER_RUNS", {}).items()
              if key not in data}
    for key, value in data.items():
        if key not in hints:
            raise TypeError(f"{config_class.__name__} has no field {key!r}")
        if dataclasses.is_dataclass(hints[key]) and isinstance(value, dict):
            value = config_from_json(hints[key], value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    return config_class(**kwargs)


"""The registry of kinds of world: a name maps to the factory that builds one world of that kind.

A factory is called ``factory(target, assists, split, **options) -> World`` (the first three
positional, so each kind names them in its own words):

* ``target``: what the search writes a program for, in the kind's own terms (a CWMB env id, an
  object level with its recorded data, an APPS problem);
* ``assists``: which of the world's assists (`codeworld.synthesis.types.Assists`) are on: for
  CWMB an `AssistConfig`, for object worlds True or False; None: the kind's default;
* ``split``: what of the target's data the search sees (CWMB: an `EpisodeSplit`, APPS: the
  tests' indices); None: the kind's default;
* ``options``: the kind's own settings (CWMB's buffer and scoring mode, an object world's
  sandbox, APPS's time per test).

``codeworld synthesize --world KIND TARGET`` resolves the kind once (`world_factory`), checks the
target before anything is made (`world_target`: the kind's check in ``TARGETS``, if it has one)
and calls ``factory(TARGET, None, None, run=run, heldout_fraction=H)``: the target as checked
(a string, recorded in ``run.json``, so ``--resume`` calls it again with the same), the run
(`codeworld.synthesis.run.Run`: its seed, config and spec; the factory may record what it drew
with ``run.record``), and the ``--heldout`` share (None unless given). A kind that takes
options from the command line takes these.

Every caller builds its world through `make_world` (the agent's rewrite, the APPS job, the CWMB
commands and jobs); a new kind of world is its module, one line here (or `register_world`) and
its test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from codeworld.registry import Registry
from codeworld.synthesis.types import World

WorldFactory = Callable[..., World]

WORLDS: Registry[WorldFactory] = Registry("world", {
    "cwmb": "codeworld.worlds.cwmb._cwmb:make_cwmb_world",
    "objects": "codeworld.agent._levels:make_level_world",
    "apps": "codeworld.worlds.apps._apps:make_apps_world",
})


# A kind's check of a target typed on the command line, run before anything is made: the target
# as the run records it (``"module:attribute"``: imported when first used); a kind without one
# takes the string as given, a path made whole.
TARGETS: Registry[Callable[[str], str]] = Registry("world target check", {
    "objects": "codeworld.agent._levels:level_target",
    "apps": "codeworld.worlds.apps._apps:problem_target",
})


def world_target(kind: str, target: str) -> str:
    """``target`` (as typed) as a run of ``kind`` records it, checked before the run is made.

    Raises:
        KeyError, ValueError, OSError: a target the kind refuses (an unknown level, no problem at
            a path), in one line for the user.
    """
    if kind in TARGETS:
        return TARGETS.get(kind)(target)
    return str(Path(target).resolve()) if Path(target).exists() else target


def register_world(kind: str, factory: WorldFactory | str) -> None:
    """Make ``kind`` a world `make_world` builds.

    Args:
        kind: the kind's name (new).
        factory: ``factory(target, assists, split, **options) -> World``, or its
            ``"module:attribute"`` (imported when the kind is first built).
    """
    WORLDS.register(kind, factory)


def world_kinds() -> list[str]:
    """The registered kinds of world, in registration order."""
    return WORLDS.names()


def world_factory(kind: str) -> WorldFactory:
    """The factory of ``kind``, looked up once where a kind is named (the command line).

    Raises:
        KeyError: an unknown kind (the message names close matches and the known kinds).
    """
    return WORLDS.get(kind)


def make_world(kind: str, target: object, assists: object = None, split: object = None,
               **options: object) -> World:
    """The world of kind ``kind`` for ``target`` (see the module's docstring for the arguments).

    Raises:
        KeyError: an unknown kind (the message names close matches and the known kinds).
    """
    return world_factory(kind)(target, assists, split, **options)

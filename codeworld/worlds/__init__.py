"""The kinds of world a search writes programs for: CWMB's vector states (`codeworld.worlds.cwmb`),
object states (`codeworld.worlds.objects`) and APPS problems (`codeworld.worlds.apps`).

A world is what `codeworld.synthesis` runs against (`codeworld.synthesis.types.World`: its prompts,
its evaluator, its finish step and its assists); the synthesis core knows no world. Every world is
built by `make_world` from the registry of kinds (`codeworld.worlds.registry`).
"""

from codeworld.worlds.registry import (WORLDS, make_world, register_world, world_factory, world_kinds,
                                      world_target)

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "make_world",
    "register_world",
    "world_kinds",
]

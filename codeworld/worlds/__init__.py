"""The kinds of world a search writes programs for: CWMB's vector states (`codeworld.worlds.cwmb`),
object states (`codeworld.worlds.objects`) and APPS problems (`codeworld.worlds.apps`).

A world is what `codeworld.synthesis` runs against (`codeworld.synthesis.types.World`: its prompts,
its evaluator and its finish step); the synthesis core knows no world, and each kind of world
lives in its own package here.
"""

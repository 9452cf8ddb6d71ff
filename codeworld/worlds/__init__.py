"""The kinds of world a search writes programs for: CWMB's vector states (`codeworld.worlds.cwmb`)
and object states (`codeworld.worlds.objects`).

A world is what `codeworld.synthesis` runs against (`codeworld.synthesis.types.World`: its prompts,
its evaluator and its finish step); the synthesis core knows no world, and each kind of world
lives in its own package here.
"""

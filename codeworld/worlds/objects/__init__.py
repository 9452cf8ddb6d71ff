"""The object world: states that are JSON objects (the WorldCoder agent's levels, any object-level
world). Its parts: the canonical form, schema and assists (`states`), the model contract
(`model`), the sandbox ops that check a program and plan over it (`ops`), the evaluator
(`evaluate`) and the prompts (`prompting`, templates in ``prompts/``)."""

__all__: list[str] = []  # nothing public here: a world is built by codeworld.worlds.make_world

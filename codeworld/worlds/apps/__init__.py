"""The APPS world: programming problems with input/output tests (`apps.make_apps_world`), the
sandboxed test runs that score a program, and the prompts (templates in ``prompts/``)."""

__all__: list[str] = []  # nothing public here: a world is built by codeworld.worlds.make_world

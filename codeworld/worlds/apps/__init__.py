"""The APPS world: programming problems with input/output tests (`apps.make_apps_world`), the
sandboxed test runs that score a program, and the prompts (templates in ``prompts/``)."""

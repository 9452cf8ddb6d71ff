"""Subcommands of the ``codeworld`` CLI, one module each (see codeworld/cli.py)."""

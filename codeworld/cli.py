"""The ``codeworld`` command line. Each subcommand lives in its own module and registers itself.

A command module defines ``register(subparsers)``, which adds its parser and sets
``func=handler`` (``handler(args) -> int`` exit status). List the module in `COMMAND_MODULES`.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = [
    "codeworld.commands._check",
    "codeworld.commands._describe",
    "codeworld.commands._collect",
    "codeworld.commands._score",
    "codeworld.commands._fit",
    "codeworld.commands._plan",
    "codeworld.commands._train",
    "codeworld.commands._llm",
    "codeworld.commands._build_llm",
    "codeworld.commands._synthesize",
    "codeworld.commands._show",
    "codeworld.commands._demo",
    "codeworld.commands._agent",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="codeworld",
        description="Code world models: synthesize, score and plan with LLM-written simulators.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from codeworld._signals import stop_as_interrupt

    try:
        with stop_as_interrupt():  # kill / timeout end a run as Ctrl-C does
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

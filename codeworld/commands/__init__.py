"""Subcommands of the ``codeworld`` CLI, one module each (see codeworld/cli.py)."""

import argparse


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (a count of calls, episodes, steps)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number above 0 (minutes, seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def read_model_file(path: str) -> str:
    """The text of a model program given on the command line.

    Raises:
        ValueError: a one-line message when the file cannot be read as UTF-8 text.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def spec_and_model(args):
    """The environment (``args.env`` with ``--env-kwargs``) and the model file's text of a command
    that takes both.

    Raises:
        UnknownEnvError: an unknown environment (its message lists close matches).
        ValueError: bad environment arguments, or an unreadable file (a one-line message).
    """
    from codeworld.envs._arguments import spec_from_args

    return spec_from_args(args), read_model_file(args.model)

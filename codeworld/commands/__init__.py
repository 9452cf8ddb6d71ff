"""Subcommands of the ``codeworld`` CLI, one module each (see codeworld/cli.py)."""


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
    from codeworld.envs.arguments import spec_from_args

    return spec_from_args(args), read_model_file(args.model)

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

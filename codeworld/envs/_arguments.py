"""The command-line arguments that name an environment, shared by every command.

Each command takes an environment as its positional ``ENV`` (a CWMB id, any Gymnasium id or
``module:EnvId``, ``data:FILE.npz`` or just ``FILE.npz``, ``minari:DATASET``) and, through
`add_env_arguments`, ``--env-kwargs KEY=VALUE[,KEY=VALUE...]`` (repeatable) and
``--description FILE.md``. `spec_from_args` turns them into the environment's spec, once per
command, which passes the spec on (the command line's counterpart of `codeworld.envs.resolve_env`).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeworld.envs.registry import EnvSpec

ENV_HELP = ("environment: a CWMB id (e.g. CartPole-v1; the paper's ids work too), any Gymnasium id "
            "(module:EnvId imports the module that registers it), or logged data: FILE.npz or "
            "minari:DATASET")


def add_env_arguments(parser: argparse.ArgumentParser, description: bool = True) -> None:
    """Add ``--env-kwargs`` (and ``--description``) to a command's parser."""
    parser.add_argument("--env-kwargs", action="append", default=[], metavar="KEY=VALUE[,...]",
                        help="keyword arguments for gymnasium.make, e.g. is_slippery=false "
                             "(values read as JSON, else as text; repeatable)")
    if description:
        parser.add_argument("--description", default=None, metavar="FILE.md",
                            help="the environment's description for the LLM (default: its "
                                 "Gymnasium docstring, or the dataset's own)")


def spec_from_args(args: argparse.Namespace, name: str | None = None) -> EnvSpec:
    """The spec of the environment `args` name (``args.env`` unless `name` is given), with its
    ``--env-kwargs``.

    A description file is attached to the environment's spec for this process.

    Raises:
        UnknownEnvError: nobody knows the environment.
        ValueError: malformed keyword arguments, an unsupported space, an unreadable description,
            or a description for a CWMB environment (whose description is its documentation).
    """
    from codeworld.envs._datasets import data_id
    from codeworld.envs.derive import env_spec, parse_kwargs
    from codeworld.envs.registry import UnknownEnvError, register_spec

    name = name if name is not None else args.env
    if name.endswith(".npz") and ":" not in name:
        if not Path(name).is_file():  # a file was meant, not an environment id
            raise UnknownEnvError(f"{name}: no such file")
        name = data_id(name)
    spec = env_spec(name, **parse_kwargs(getattr(args, "env_kwargs", None) or []))
    description = getattr(args, "description", None)
    if description:
        if spec.shipped:
            raise ValueError(f"{spec.env_id} is a CWMB environment: its description is its "
                             "documentation (--description is for other environments)")
        try:
            text = Path(description).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read {description}: {getattr(exc, 'strerror', None) or exc}") from None
        spec = register_spec(replace(spec, description=text))
    return spec


def env_from_args(args: argparse.Namespace, name: str | None = None) -> str:
    """The id of the environment `args` name: ``spec_from_args(args, name).env_id`` (for code that
    records the id; code that uses the environment takes the spec)."""
    return spec_from_args(args, name).env_id

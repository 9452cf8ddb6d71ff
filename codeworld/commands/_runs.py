"""The command line's side of a synthesis run: its flags and the command that resumes it (the
lines it prints while it runs and at the end are `codeworld.reports`').

Shared by the commands that run a synthesis run (``synthesize``, ``demo``).
"""

from __future__ import annotations

import argparse
import sys

from codeworld.commands import positive_float, positive_int


def add_run_arguments(parser: argparse.ArgumentParser, *, budget: int, out: str,
                      time_limit: float | None = None, resumable: bool = False,
                      continues: bool = False) -> None:
    """The flags of any synthesis run: ``--budget``, ``--seed``, ``--out``, ``--set``,
    ``--parallel``, ``--time-limit``, ``--quiet`` (and ``--resume``, ``--switch-llm``).

    Args:
        parser: the command's parser.
        budget: the default budget of LLM calls.
        out: the default run directory, as the help text shows it.
        time_limit: the default time limit in minutes (None: none).
        resumable: the command has ``--resume`` (the budget's default is then the saved one).
        continues: the command continues a run already in ``--out`` (as ``--resume`` does), so
            it has ``--switch-llm`` (implied by ``resumable``).
    """
    saved = "; on --resume, the saved budget unless given" if resumable else ""
    parser.add_argument("--budget", type=positive_int, default=None if resumable else budget,
                        help=f"LLM calls in the whole run (default {budget}{saved})")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument("--out", default=None, metavar="RUN_DIR", help=f"run directory (default {out})")
    if resumable:
        parser.add_argument("--resume", action="store_true",
                            help="continue the run in --out (method, env, seed, LLM and config from it)")
    if resumable or continues:
        parser.add_argument("--switch-llm", action="store_true",
                            help="continue a run with the --llm given though it was run with "
                                 "another (refused without this flag; each call records its LLM)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="change a config field, e.g. --set ucb_c=0.2 --set allow_fix=false "
                             "--set sampling.temperature=0.7 (repeatable)")
    parser.add_argument("--parallel", type=positive_int, default=None, metavar="K",
                        help="LLM calls at once per wave (default: the method's config)")
    parser.add_argument("--time-limit", type=positive_float, default=time_limit, metavar="MIN",
                        help="start no new LLM call after this many minutes (resume later to go on)"
                             + (f"; default {time_limit:g}" if time_limit is not None else ""))
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def add_world_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of a run on an environment's replay buffer: the scoring mode, the buffer, the
    held-out share, the program timeout, and the steps after the search."""
    from codeworld.envs._buffers import HELDOUT_FRACTION
    from codeworld._model_worker import PROGRAM_TIMEOUT_S

    parser.add_argument("--mode", default="sound", choices=["sound", "paper"],
                        help="scoring mode used as the search signal (default sound)")
    parser.add_argument("--buffer", default=None, metavar="FILE.npz|paper",
                        help="replay buffer file, or 'paper' for the paper's buffer (default: the committed one)")
    parser.add_argument("--heldout", type=_fraction, default=None, metavar="FRACTION",
                        help="share of the buffer's episodes held out from the search, scored "
                             f"apart (default {HELDOUT_FRACTION:g}; 0 holds nothing out; on --resume, the saved split)")
    parser.add_argument("--timeout", type=positive_float, default=PROGRAM_TIMEOUT_S, metavar="S",
                        help=f"seconds one program may take over the whole buffer (default {PROGRAM_TIMEOUT_S:g})")
    parser.add_argument("--no-fit", action="store_true",
                        help="fit no constants to the buffer (neither in the search nor after it)")
    parser.add_argument("--no-compose", action="store_true",
                        help="do not compose the best programs component by component after the search")
    parser.add_argument("--no-floor", action="store_true",
                        help="keep a buggy best program (by default, when every program is buggy, "
                             "the skeleton, the do-nothing model, becomes the best)")
    parser.add_argument("--no-speed-step", action="store_true",
                        help="do not compile or port the best program and measure its speed")


def refuse_buffer_flags(args: argparse.Namespace, kind: str) -> None:
    """Refuse (ValueError, naming the flag) a flag of a run on a replay buffer given for a world of
    another kind than ``cwmb``: ``add_world_arguments``' and ``--env-kwargs``, ``--description``
    (all but ``--heldout``, which every kind takes) with a value other than its default."""
    from codeworld.envs._arguments import add_env_arguments

    if kind == "cwmb":
        return
    probe = argparse.ArgumentParser(add_help=False)
    add_env_arguments(probe)
    add_world_arguments(probe)
    for dest, default in vars(probe.parse_args([])).items():
        if dest != "heldout" and getattr(args, dest, default) != default:
            raise ValueError(f"--{dest.replace('_', '-')} is a flag of a CWMB run (on a replay "
                             f"buffer): --world {kind} does not take it")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), not {text}")
    return value


def codeworld_command() -> str:
    """How to run codeworld from this shell, for a command line to print: ``codeworld`` when
    that is this installation's script on the PATH, else that script's path (``.venv/bin/codeworld``
    after ``make demo``, which puts nothing on the PATH), else ``PYTHON -m codeworld``."""
    import os
    import shlex
    import shutil
    from pathlib import Path

    # the venv's bin/ (abspath: not the link's target, which is the base interpreter's)
    script = Path(os.path.abspath(sys.executable)).parent / "codeworld"
    found = shutil.which("codeworld")
    if found and (not script.is_file() or os.path.samefile(found, script)):
        return "codeworld"
    if script.is_file():
        try:
            shown = str(script.relative_to(Path.cwd()))
        except ValueError:
            shown = str(script)
        return shlex.quote(shown if os.sep in shown else f".{os.sep}{shown}")
    return f"{shlex.quote(sys.executable)} -m codeworld"


def resume_command(args: argparse.Namespace, run_dir) -> str:
    """The complete command that continues the run in ``run_dir`` as this one ran: the program
    as this shell reaches it, the run directory, the LLM and the LLM settings given (the run
    keeps its LLM on a resume anyway; printing it makes the hint a command to copy)."""
    import shlex

    from codeworld.llm._arguments import llm_argv

    argv = ["synthesize", "--resume", "--out", str(run_dir), *llm_argv(args)]
    return " ".join([codeworld_command(), *map(shlex.quote, argv)])

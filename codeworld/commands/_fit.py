"""``codeworld fit ENV MODEL.py``: fit a model program's constants to a replay buffer.

The program's float literals are fitted on a training split of the buffer (in a sandbox worker)
and the fit is kept only when the score on the held-out split improves. Prints the constants
before and after and the scores, or with ``--json`` one JSON object (``accepted``,
``score_before``, ``score_after``, ``heldout_before``, ``heldout_after``, ``constants``, ...).
``--out FILE`` writes the program to use: the fitted one when the fit was kept, else the
original. Exit status: 0 when the fit ran (kept or not), 1 when it failed in the sandbox, 2 for a
usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

from codeworld.commands import spec_and_model
from codeworld.envs._arguments import ENV_HELP, add_env_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    from codeworld.fitting._config import METHODS, FitConfig

    defaults = FitConfig()
    parser = subparsers.add_parser(
        "fit", help="fit a model program's numeric constants to a replay buffer",
        description="Fit the float literals of a world-model program on a training split of the "
                    "buffer; keep the fit only if the held-out score improves.")
    parser.add_argument("env", help=ENV_HELP)
    parser.add_argument("model", help="path to the model program (.py)")
    add_env_arguments(parser, description=False)
    parser.add_argument("--buffer", default=None, metavar="FILE.npz",
                        help="buffer file (default: the committed one)")
    parser.add_argument("--out", default=None, metavar="FITTED.py",
                        help="write the program to use (the fitted one if kept, else the original)")
    parser.add_argument("--mode", choices=("sound", "paper"), default="sound",
                        help="scoring rule of the held-out check (default sound)")
    parser.add_argument("--method", choices=METHODS, default=defaults.method,
                        help=f"optimizer (default {defaults.method})")
    parser.add_argument("--max-evals", type=int, default=defaults.max_evaluations, metavar="N",
                        help=f"most program evaluations (default {defaults.max_evaluations})")
    parser.add_argument("--max-seconds", type=float, default=defaults.max_seconds, metavar="S",
                        help=f"time cap of the optimizer loop (default {defaults.max_seconds:g})")
    parser.add_argument("--heldout", type=float, default=defaults.heldout_fraction, metavar="F",
                        help=f"share of episodes held out (default {defaults.heldout_fraction:g})")
    parser.add_argument("--no-compile", action="store_true",
                        help="evaluate the program on the Python path only")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.set_defaults(func=run)


def _fail(message: str, code: int = 2) -> int:
    print(f"codeworld fit: {message}", file=sys.stderr)
    return code


def format_result(result) -> str:
    """The fit as text: the constants before and after, the scores, the verdict."""
    lines = []
    if result.constants:
        lines.append("constants (line: before -> after):")
        for c in result.constants:
            mark = "" if c["after"] == c["before"] else "  *"
            lines.append(f"  {c['line']:>4}: {c['before']!r:>22} -> {c['after']!r:<22}{mark}  "
                         f"{c['context'][:60]}")

    def pair(a, b):
        return "n/a" if a is None or b is None else f"{a:.4f} -> {b:.4f}"

    if result.heldout_before is not None:
        lines.append(f"held-out score ({result.n_heldout} transitions): "
                     f"{pair(result.heldout_before, result.heldout_after)}")
        lines.append(f"whole-buffer score: {pair(result.score_before, result.score_after)}")
        lines.append(f"{result.evaluations} evaluations on {result.n_train} training transitions "
                     f"({result.path} path), {result.seconds:.1f} s")
    lines.append(("kept: " if result.accepted else "not kept: ") + result.message)
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from codeworld.envs import UnknownEnvError
    from codeworld.envs._buffers import BufferError
    from codeworld.fitting import FitConfig, fit_constants
    from codeworld._model import ModelSourceError, check_model_source
    from codeworld.scoring import Scorer
    from codeworld._files import check_output, write_atomic

    try:
        spec, source = spec_and_model(args)
    except (UnknownEnvError, ValueError) as exc:
        return _fail(str(exc))
    try:
        check_model_source(source)
    except ModelSourceError as exc:
        return _fail(f"{args.model}: {exc}")
    try:
        config = FitConfig(method=args.method, max_evaluations=args.max_evals,
                           max_seconds=args.max_seconds, heldout_fraction=args.heldout)
        scorer = Scorer(spec, args.buffer, mode=args.mode, references=False)
        if args.out:  # before the fit, which it would be lost after
            check_output(args.out)
    except (BufferError, ValueError, OSError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    result = fit_constants(source, scorer, config, compile=not args.no_compile)
    if args.out:
        try:
            write_atomic(args.out, result.source)
        except OSError as exc:
            return _fail(str(exc), 1)
    if args.json:
        print(json.dumps({**result.to_json(), "out": args.out}))
    else:
        print(format_result(result))
        if args.out:
            print(f"wrote {'the fitted' if result.accepted else 'the original'} program to {args.out}")
    if result.status not in ("fitted", "no_constants"):
        print(f"codeworld fit: {result.message}".splitlines()[0], file=sys.stderr)
        return 1
    return 0

"""``codeworld score ENV MODEL.py``: score a world-model program on a replay buffer.

Prints the report (score, strict fraction, components, skill, floor, ceiling, first error), or
with ``--json`` one JSON object on stdout. Exit status: 0 when every transition was predicted,
1 when the model failed (it did not load, raised, timed out...), 2 for a usage error (unknown
environment, missing or malformed buffer, unreadable model file). Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import sys

from codeworld.commands import positive_float, spec_and_model


from codeworld.envs._arguments import ENV_HELP, add_env_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score", help="score a world-model program on a replay buffer (sound or paper rule)")
    parser.add_argument("env", help=ENV_HELP)
    parser.add_argument("model", help="path to the model program (.py)")
    add_env_arguments(parser, description=False)
    parser.add_argument("--mode", "--metric", dest="mode", choices=("sound", "paper"), default="sound",
                        help="scoring rule: sound (default) or the paper's")
    parser.add_argument("--buffer", default=None, metavar="FILE.npz|paper",
                        help="buffer file, codeworld's or the paper's layout; 'paper' for the paper's "
                             "own buffer of ENV, shipped with codeworld (default: the committed one)")
    parser.add_argument("--paper-buffer", action="store_true", help="the same as --buffer paper")
    parser.add_argument("--no-references", action="store_true", help="skip the floor and ceiling")
    parser.add_argument("--no-compile", action="store_true", help="run the model on the Python path")
    parser.add_argument("--timeout", type=positive_float, default=None, metavar="SECONDS",
                        help="wall-clock limit for running the model over the buffer")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.set_defaults(func=run)


def _fail(message: str, code: int = 2) -> int:
    print(f"codeworld score: {message}", file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    from codeworld.envs import UnknownEnvError
    from codeworld.envs._buffers import PAPER, BufferError
    from codeworld.scoring import Scorer

    try:
        spec, source = spec_and_model(args)
    except (UnknownEnvError, ValueError) as exc:
        return _fail(str(exc))
    buffer = args.buffer
    if args.paper_buffer:
        buffer = PAPER
    try:
        scorer = Scorer(spec, buffer, mode=args.mode, references=not args.no_references,
                        compile=not args.no_compile)
    except (BufferError, ValueError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    report = scorer.score_source(source, timeout_s=args.timeout)
    if args.json:
        print(report.to_json())
    else:
        print(report.format())
    if not report.ok:
        print(f"codeworld score: {args.model}: {report.message or report.status}".splitlines()[0],
              file=sys.stderr)
        return 1
    return 0

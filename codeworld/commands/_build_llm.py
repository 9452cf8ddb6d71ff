"""``codeworld build-llm``: compile llama.cpp's server for this CPU, the local model's faster engine."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "build-llm", help="compile llama.cpp's server for this CPU (once; the local model then "
                          "uses it): about 7-10 minutes on 2 cores")
    parser.add_argument("--jobs", type=int, default=None, help="compile jobs (default: every core)")
    parser.add_argument("--force", action="store_true", help="build again even if built")
    parser.add_argument("--where", action="store_true",
                        help="print the binary's path if it is built (exit 1 if not) and build nothing")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codeworld.llm import _native as native

    if args.where:
        binary = native.native_server_binary()
        print(binary if binary else f"not built (it would go to {native.build_dir()})")
        return 0 if binary else 1
    try:
        binary = native.build_native_server(jobs=args.jobs, force=args.force,
                                            log=lambda line: print(line, flush=True))
    except native.NativeBuildError as exc:
        print(f"codeworld build-llm: {exc}", file=sys.stderr)
        return 1
    print(f"the local model now runs on {binary} (--llm-engine xllamacpp returns to the wheel)")
    return 0

"""``codeworld llm PROMPT``: one completion from the chosen LLM, to check a setup in one step."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    from codeworld.llm import add_llm_arguments

    parser = subparsers.add_parser(
        "llm", help="ask the LLM one question and print the answer and the accounting")
    parser.add_argument("prompt", help="the user message")
    parser.add_argument("--system", default=None, help="a system message")
    parser.add_argument("--max-tokens", type=int, default=256, help="longest answer (default 256)")
    parser.add_argument("--temperature", type=float, default=0.0, help="default 0 (greedy)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    add_llm_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codeworld.llm import LLMError, llm_from_args

    messages = ([{"role": "system", "content": args.system}] if args.system else [])
    messages.append({"role": "user", "content": args.prompt})
    try:
        with llm_from_args(args) as llm:
            completion = llm.complete(messages, max_tokens=args.max_tokens,
                                      temperature=args.temperature, seed=args.seed)
            print(completion.text)
            print(f"# {llm.name}: {completion.finish_reason}, "
                  f"{'cached' if completion.cached else f'{completion.latency_s:.1f} s'}")
            print(f"# {llm.accounting.summary()}")
    except (LLMError, ValueError) as exc:
        print(f"codeworld llm: {exc}", file=sys.stderr)
        return 1
    return 0

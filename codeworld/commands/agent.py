"""``codeworld agent LEVEL...``: run the WorldCoder agent on a curriculum of levels.

Levels are ``sokoban:NAME``, ``sokoban:gen:SEED`` or ``minigrid:NAME`` (see
`codeworld.agent.list_levels`). The run directory gets the accounting, each level's final model,
transitions and rewrites (every prompt, completion and program check).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from codeworld.llm import add_llm_arguments

    parser = subparsers.add_parser(
        "agent", help="learn a world model online by acting (WorldCoder) on MiniGrid or Sokoban",
        description="Run the WorldCoder agent on levels in order (a curriculum): it acts, rewrites "
                    "its world model with REx when data contradicts it, and (with optimism) "
                    "requires that a planner on the model reaches the mission's reward.")
    parser.add_argument("levels", nargs="+", metavar="FAMILY:LEVEL",
                        help="e.g. minigrid:empty minigrid:doorkey sokoban:corridor sokoban:gen:3")
    parser.add_argument("--no-optimism", action="store_true", help="data consistency only")
    parser.add_argument("--no-transfer", action="store_true", help="start every level from nothing")
    parser.add_argument("--max-env-steps", type=int, default=300, help="per level (default 300)")
    parser.add_argument("--max-llm-calls", type=int, default=20, help="per level (default 20)")
    parser.add_argument("--rewrite-calls", type=int, default=4, help="per rewrite (default 4)")
    parser.add_argument("--reliable", type=int, default=10,
                        help="successes in a row that end a level (default 10)")
    parser.add_argument("--epsilon", type=float, default=0.1, help="random-action probability")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, metavar="RUN_DIR",
                        help="run directory (default runs/agent-TIME)")
    add_llm_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codeworld.agent import AgentConfig, WorldCoderAgent, make_object_env
    from codeworld.agent.loop import summary_row
    from codeworld.llm import llm_from_args

    from codeworld.llm import LLMError

    try:
        envs = [make_object_env(level) for level in args.levels]
        out = Path(args.out or f"runs/agent-{_dt.datetime.now():%Y%m%d-%H%M%S}")
        config = AgentConfig(optimism=not args.no_optimism, transfer=not args.no_transfer,
                             epsilon=args.epsilon, max_env_steps=args.max_env_steps,
                             max_llm_calls=args.max_llm_calls, rewrite_calls=args.rewrite_calls,
                             reliable_successes=args.reliable, seed=args.seed)
        llm = llm_from_args(args, run_dir=str(out))
    except (KeyError, ValueError, LLMError, OSError) as exc:  # a level, a number, an LLM spec
        print(f"codeworld agent: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    with WorldCoderAgent(llm, config, run_dir=out) as agent:
        for env in envs:
            row = summary_row(agent.run_level(env))
            print(json.dumps(row), flush=True)
    print(f"run directory: {out}")
    return 0

"""``codeworld agent LEVEL...``: run the WorldCoder agent on a curriculum of levels.

Levels are ``FAMILY:NAME`` or ``FAMILY:gen:SEED`` (see `codeworld.agent.list_levels`). While it
runs the command prints a line per LLM call, per rewrite and per episode; at the end a line per
level. The run directory gets the accounting, each level's final model, transitions and rewrites
(each a synthesis run directory: every prompt, completion and program check); ``codeworld show``
reads it.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from pathlib import Path

# flag -> (AgentConfig field, type, help); each default is the dataclass's own
_NUMBERS = {
    "--max-env-steps": ("max_env_steps", int, "environment steps per level"),
    "--max-llm-calls": ("max_llm_calls", int, "LLM calls per level"),
    "--rewrite-calls": ("rewrite_calls", int, "LLM calls per rewrite"),
    "--reliable": ("reliable_successes", int, "successes in a row that end a level"),
    "--epsilon": ("epsilon", float, "random-action probability"),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    from codeworld.agent import AgentConfig
    from codeworld.agent.envs import FAMILIES
    from codeworld.llm import add_llm_arguments

    defaults = AgentConfig()
    parser = subparsers.add_parser(
        "agent", help="learn a world model online by acting (WorldCoder) on "
                      + ", ".join(sorted(FAMILIES)) + " levels",
        description="Run the WorldCoder agent on levels in order (a curriculum): it acts, rewrites "
                    "its world model with REx when data contradicts it, and (with optimism) "
                    "requires that a planner on the model reaches the mission's reward.")
    parser.add_argument("levels", nargs="+", metavar="FAMILY:LEVEL",
                        help="e.g. minigrid:empty minigrid:doorkey sokoban:corridor sokoban:gen:3 "
                             "household:heat household:gen:7 "
                             f"(families: {', '.join(sorted(FAMILIES))})")
    parser.add_argument("--no-optimism", action="store_true", help="data consistency only")
    parser.add_argument("--no-transfer", action="store_true", help="start every level from nothing")
    parser.add_argument("--no-assists", action="store_true",
                        help="rewrites without the schema, data section, skeleton, checks and repairs")
    parser.add_argument("--no-rule-model", action="store_true",
                        help="the LLM writes every program (no rule model learned from the data)")
    parser.add_argument("--no-explore-unseen", action="store_true",
                        help="explore at random where the model reaches no reward")
    for flag, (name, kind, text) in _NUMBERS.items():
        parser.add_argument(flag, type=kind, default=None,
                            help=f"{text} (default {getattr(defaults, name):g})")
    parser.add_argument("--seed", type=int, default=None, help=f"seed (default {defaults.seed})")
    parser.add_argument("--out", default=None, metavar="RUN_DIR",
                        help="run directory (default runs/agent-TIME)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    add_llm_arguments(parser)
    parser.set_defaults(func=run)


def _milestone(m: dict | None) -> str:
    return "-" if m is None else f"{m['env_steps']} steps, {m['llm_calls']} calls, {m['tokens']:,} tokens"


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from codeworld.agent import AgentConfig, WorldCoderAgent, make_object_env
    from codeworld.agent._loop import summary_row
    from codeworld.llm import LLMError, llm_from_args
    from codeworld.commands._runs import codeworld_command
    from codeworld.reports._progress import agent_progress_printer
    from codeworld._files import check_output

    try:
        envs = [make_object_env(level) for level in args.levels]
        out = Path(args.out or f"runs/agent-{_dt.datetime.now():%Y%m%d-%H%M%S}")
        given = {name: getattr(args, flag[2:].replace("-", "_")) for flag, (name, _, _) in _NUMBERS.items()}
        given["seed"] = args.seed
        config = replace(AgentConfig(optimism=not args.no_optimism, transfer=not args.no_transfer,
                                     assists=not args.no_assists, rule_model=not args.no_rule_model,
                                     explore_unseen=not args.no_explore_unseen),
                         **{k: v for k, v in given.items() if v is not None})
        llm = llm_from_args(args, run_dir=str(out))
        try:  # the agent has no resume: its folder is a new or empty one, never the user's
            check_output(out, folder=True, empty=True)
        except BaseException:
            llm.close()
            raise
    except (KeyError, ValueError, LLMError, OSError) as exc:  # a level, a number, an LLM spec
        print(f"codeworld agent: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    print(f"codeworld agent: {', '.join(args.levels)} with {args.llm}; optimism "
          f"{'on' if config.optimism else 'off'}, transfer {'on' if config.transfer else 'off'}\n"
          f"  run directory: {out}", flush=True)
    try:
        with llm, WorldCoderAgent(llm, config, run_dir=out,
                                  progress=None if args.quiet else agent_progress_printer()) as agent:
            for env in envs:
                row = summary_row(agent.run_level(env))
                print(f"{row['level']}: {row['successes']} successes in {row['episodes']} episodes, "
                      f"{row['env_steps']} steps, {row['llm_calls']} calls, {row['tokens']:,} tokens;"
                      f" first success: {_milestone(row['first_success'])}; reliable: "
                      f"{_milestone(row['reliable_success'])}", flush=True)
    except LLMError as exc:
        print(f"codeworld agent: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\ninterrupted; what was done is in {out}", file=sys.stderr)
        return 130
    print(f"run directory: {out}  (inspect with: {codeworld_command()} show {out})")
    return 0

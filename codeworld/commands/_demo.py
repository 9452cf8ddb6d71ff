"""``codeworld demo``: the main job, end to end, on one machine without a key or a GPU.

GIF-MCTS with the embedded local model (Qwen2.5-Coder-1.5B-Instruct, set up on first use) writes a
CartPole-v1 world model with a small budget of LLM calls; the best program is scored on the replay
buffer in both modes (with the floor and ceiling references), then planned with (MCTS on the real
environment) to get its normalized return. A short table and the run directory end the output;
``demo.json`` in the run directory holds the same numbers.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
from pathlib import Path

from codeworld.experiments._demo import (DEFAULT_BUDGET, DEFAULT_ENV, DEFAULT_EPISODES, DEFAULT_MAX_STEPS,
                                        DEFAULT_SEARCH_MINUTES)
from codeworld.reports._table import ResultTable, add_synthesis


def register(subparsers: argparse._SubParsersAction) -> None:
    from codeworld.commands import positive_int
    from codeworld.commands._runs import add_run_arguments
    from codeworld.llm import add_llm_arguments

    parser = subparsers.add_parser(
        "demo", help="the main job: synthesize a CartPole model with the local LLM, score it, plan with it",
        description="GIF-MCTS with the embedded local model on CartPole-v1 (small budget), then "
                    "both scores with floor and ceiling, then the normalized return of planning.")
    parser.add_argument("--env", default=DEFAULT_ENV, help=f"environment (default {DEFAULT_ENV})")
    parser.add_argument("--episodes", type=positive_int, default=DEFAULT_EPISODES,
                        help=f"planning episodes per policy (default {DEFAULT_EPISODES}; paper: 10)")
    parser.add_argument("--max-steps", type=positive_int, default=DEFAULT_MAX_STEPS,
                        help=f"cap on steps per planning episode (default {DEFAULT_MAX_STEPS})")
    add_run_arguments(parser, budget=DEFAULT_BUDGET, time_limit=DEFAULT_SEARCH_MINUTES,
                      out="runs/demo-ENV-TIME; an existing one is resumed", continues=True)
    add_llm_arguments(parser, continues_runs=True)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codeworld.commands._runs import codeworld_command
    from codeworld.envs import resolve_env
    from codeworld.experiments._demo import demo_config, plan_step, score_step, start_run
    from codeworld._overrides import parse_overrides

    started = time.perf_counter()
    try:
        spec = resolve_env(args.env)
        config = demo_config(parse_overrides(args.set), args.parallel)
        out = Path(args.out) if args.out else Path("runs") / (
            f"demo-{spec.env_id}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}")
        run = start_run(out, spec, config, llm=args.llm, switch_llm=args.switch_llm, budget=args.budget,
                        seed=args.seed)
        args.llm = run.spec.llm
    except (KeyError, ValueError, TypeError, OSError) as exc:
        print(f"codeworld demo: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}",
              file=sys.stderr)
        return 2
    env_id = spec.env_id
    table = ResultTable()
    print(f"codeworld demo: GIF-MCTS with the {args.llm} LLM on {env_id}, budget {run.budget} "
          f"calls\n  run directory: {out}", flush=True)

    result = synthesize_step(args, run, config, out, table, started)
    if result is not None and result.best_program is not None:
        score_step(spec, result, table)
        plan_step(spec, result, table, episodes=args.episodes, seed=args.seed, max_steps=args.max_steps)
    table.close((time.perf_counter() - started) / 60, out)
    print("\nresult")
    print(table.text())
    if out.is_dir():  # a run whose LLM or world could not be set up leaves none
        print(f"\nrun directory: {out}  (inspect with: {codeworld_command()} show {out})")
    return 0 if not table.missing else 1


def synthesize_step(args, run, config, out: Path, table: ResultTable, started: float):
    """GIF-MCTS into ``out`` (resumed when it already holds a run)."""
    from codeworld.reports._progress import progress_printer
    from codeworld.llm import LLMError, llm_from_args
    from codeworld.worlds.cwmb._cwmb import make_run_world

    try:
        world = make_run_world(run)
        if args.llm == "local":
            print("  preparing the embedded model (the first time joins and checks ~1.1 GB)...",
                  flush=True)
        llm = llm_from_args(args, run_dir=str(out), slots=config.parallel)
    except (LLMError, ValueError, OSError) as exc:
        run.setup_failed()
        table.missing.append(f"synthesis stopped: {exc}")
        return None
    try:
        with llm:
            result = run.execute(world, llm, progress=None if args.quiet else progress_printer(run.budget),
                                 time_limit_s=max(0.0, 60 * args.time_limit
                                                  - (time.perf_counter() - started)))
    except (LLMError, OSError) as exc:
        table.missing.append(f"synthesis stopped: {exc}")
        return None
    add_synthesis(table, result, budget=run.budget, time_limit=args.time_limit,
                  best_model=out / "best_model.py")
    return result

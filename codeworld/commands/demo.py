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

from codeworld.model_worker import PROGRAM_TIMEOUT_S
from codeworld.reports.table import ResultTable, add_planning, add_scores, add_synthesis

DEFAULT_ENV = "CartPole-v1"
DEFAULT_BUDGET = 12
# Sampling for the embedded 1.5B model: temperature 0.7 as in Qwen2.5's own generation defaults, and
# a cap on the answer (a CartPole program takes ~600 tokens) so that a rambling answer cannot eat
# minutes of the demo's time.
DEMO_SAMPLING = {"temperature": 0.7, "max_tokens": 1024}
# The search starts no new call after this many minutes, so that model setup, search, scoring and
# planning fit in 20 minutes on 2 busy cores.
DEFAULT_SEARCH_MINUTES = 13.0
DEFAULT_EPISODES = 10
DEFAULT_MAX_STEPS = 200


def register(subparsers: argparse._SubParsersAction) -> None:
    from codeworld.commands import positive_int
    from codeworld.commands.runs import add_run_arguments
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
    from codeworld.commands.runs import codeworld_command
    from codeworld.envs import resolve_env

    started = time.perf_counter()
    try:
        spec = resolve_env(args.env)
        config = demo_config(args)
        out = Path(args.out) if args.out else Path("runs") / (
            f"demo-{spec.env_id}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}")
        run = start_run(args, spec, config, out)
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
        plan_step(args, spec, result, table)
    table.close((time.perf_counter() - started) / 60, out)
    print("\nresult")
    print(table.text())
    print(f"\nrun directory: {out}  (inspect with: {codeworld_command()} show {out})")
    return 0 if not table.missing else 1


def demo_config(args: argparse.Namespace):
    """The demo's GIF-MCTS config: its sampling, then ``--set`` and ``--parallel``.

    Raises:
        ValueError, KeyError, TypeError: a bad override, with a message for the user.
    """
    from codeworld.overrides import config_with_overrides, parse_overrides
    from codeworld.synthesis import GifMctsConfig, SamplingConfig

    overrides = parse_overrides(args.set)
    if args.parallel is not None:
        overrides["parallel"] = str(args.parallel)
    return config_with_overrides(GifMctsConfig(sampling=SamplingConfig(**DEMO_SAMPLING)), overrides)


def start_run(args, spec, config, out: Path):
    """The demo's GIF-MCTS run in ``out``: a new one, or the one there to continue (with the
    LLM it was run with, unless ``--switch-llm``). Sets ``args.llm`` to the LLM it runs with.

    Raises:
        ValueError: an unknown LLM backend; ``out`` is a file or a folder of other files, or a
            run with another LLM, or in use.
        OSError: ``out`` cannot be made.
    """
    from codeworld.llm.arguments import default_llm_spec
    from codeworld.llm.backends import resolve
    from codeworld.synthesis.config import FinishConfig
    from codeworld.synthesis.run import Run

    resolve(args.llm or default_llm_spec())  # an unknown backend, before any folder is made
    run = Run.start(out, "gif-mcts", config, finish=FinishConfig(), continue_existing=True,
                    switch_llm=args.switch_llm, env_id=spec.env_id, llm=args.llm or None,
                    budget=args.budget, seed=args.seed, mode="sound", buffer=None,
                    timeout_s=PROGRAM_TIMEOUT_S)
    if run.spec.llm is None:  # a new run given no --llm
        run.record(llm=default_llm_spec())
    args.llm = run.spec.llm
    return run


def synthesize_step(args, run, config, out: Path, table: ResultTable, started: float):
    """GIF-MCTS into ``out`` (resumed when it already holds a run)."""
    from codeworld.reports.progress import progress_printer
    from codeworld.llm import LLMError, llm_from_args
    from codeworld.worlds.cwmb.cwmb import make_run_world

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


def score_step(spec, result, table: ResultTable) -> None:
    """Both scoring modes of the best program on the held-out episodes (and the training ones),
    with floor, ceiling, strict and floor-normalised accuracy."""
    with table.measuring("scoring"):
        from codeworld.experiments.cwmb_job import score_program

        split = result.run_dir.spec.split if result.run_dir is not None else None
        add_scores(table, score_program(spec, result.best_program, timeout_s=2 * PROGRAM_TIMEOUT_S,
                                        split=split))


def plan_step(args, spec, result, table: ResultTable) -> None:
    """Random, oracle and model-planner returns on the real environment; normalized return."""
    with table.measuring("planning"):
        from codeworld.planning import evaluate

        print(f"  planning: random, oracle and model, {args.episodes} episodes of at most "
              f"{args.max_steps} steps...", flush=True)
        ev = evaluate(spec, result.program_to_plan_with, episodes=args.episodes, seed=args.seed,
                      max_steps=args.max_steps)
        add_planning(table, ev, episodes=args.episodes, max_steps=args.max_steps)

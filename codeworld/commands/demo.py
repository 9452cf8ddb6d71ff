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
import traceback
from pathlib import Path

from codeworld.model_worker import PROGRAM_TIMEOUT_S

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
                      out="runs/demo-ENV-TIME; an existing one is resumed")
    add_llm_arguments(parser)
    parser.set_defaults(func=run)


class _Table:
    """Collects the rows of the closing table, and what could not be measured."""

    def __init__(self):
        self.rows: list[tuple[str, str]] = []
        self.missing: list[str] = []
        self.data: dict = {}

    def add(self, name: str, value: str) -> None:
        self.rows.append((name, value))

    def text(self) -> str:
        width = max((len(n) for n, _ in self.rows), default=0)
        lines = [f"  {n:<{width}}  {v}" for n, v in self.rows]
        lines += [f"  not measured: {m}" for m in self.missing]
        return "\n".join(lines)


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def run(args: argparse.Namespace) -> int:
    from codeworld.envs import resolve_env

    started = time.perf_counter()
    try:
        spec = resolve_env(args.env)
        config = demo_config(args)
    except (KeyError, ValueError, TypeError) as exc:
        print(f"codeworld demo: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    env_id = spec.env_id
    out = Path(args.out) if args.out else Path("runs") / (
        f"demo-{env_id}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}")
    table = _Table()
    print(f"codeworld demo: GIF-MCTS with the {args.llm} LLM on {env_id}, budget {args.budget} "
          f"calls\n  run directory: {out}", flush=True)

    result = synthesize_step(args, spec, config, out, table, started)
    if result is not None and result.best_program is not None:
        score_step(spec, result, table)
        plan_step(args, spec, result, table)
    minutes = (time.perf_counter() - started) / 60
    table.add("total time", f"{minutes:.1f} min")
    table.data["minutes"] = minutes
    table.data["missing"] = table.missing
    if out.is_dir():
        from codeworld.synthesis import RunDir

        RunDir(out).save_record("demo.json", table.data)
    print("\nresult")
    print(table.text())
    print(f"\nrun directory: {out}  (inspect with: codeworld show {out})")
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


def synthesize_step(args, spec, config, out: Path, table: _Table, started: float):
    """GIF-MCTS into ``out`` (resumed when it already holds a run)."""
    from codeworld.reports.progress import progress_printer
    from codeworld.reports.text import best_origin
    from codeworld.llm import LLMError, llm_from_args
    from codeworld.synthesis.config import FinishConfig
    from codeworld.worlds.cwmb.cwmb import make_run_world
    from codeworld.synthesis.run import Run

    run = Run.start(out, "gif-mcts", config, finish=FinishConfig(), continue_existing=True,
                    env_id=spec.env_id, llm=args.llm, budget=args.budget, seed=args.seed,
                    mode="sound", buffer=None, timeout_s=PROGRAM_TIMEOUT_S)
    world = make_run_world(run)
    if args.llm == "local":
        print("  preparing the embedded model (the first time joins and checks ~1.1 GB)...",
              flush=True)
    try:
        with llm_from_args(args, run_dir=str(out), slots=config.parallel) as llm:
            result = run.execute(world, llm, progress=None if args.quiet else progress_printer(args.budget),
                                 time_limit_s=max(0.0, 60 * args.time_limit
                                                  - (time.perf_counter() - started)))
    except (LLMError, OSError) as exc:
        table.missing.append(f"synthesis stopped: {exc}")
        return None
    acc = result.accounting
    limit = (f", stopped at the {args.time_limit:g}-minute limit" if acc.stopped_by_time_limit
             else "")
    table.add("LLM calls", f"{acc.calls} of {args.budget} ({acc.cached_calls} from cache, "
                           f"{acc.replayed_calls} saved{limit}): {acc.new_programs} new "
                           f"programs, {acc.duplicates} copies, {acc.buggy_programs} buggy")
    table.add("tokens", f"{acc.tokens:,} (prompt {acc.prompt_tokens:,}, completion "
                        f"{acc.completion_tokens:,})")
    table.data.update(calls=acc.calls, stopped_by_time_limit=acc.stopped_by_time_limit,
                      tokens=acc.tokens, prompt_tokens=acc.prompt_tokens,
                      completion_tokens=acc.completion_tokens, llm_seconds=acc.llm_seconds,
                      calls_by_outcome={"new": acc.new_programs, "copy": acc.duplicates,
                                        "buggy": acc.buggy_programs})
    if result.best_program is None:
        table.missing.append("no program was written")
        return result
    ev = result.best_evaluation
    table.add("best program", f"{best_origin(result)}, "
                              + ("buggy" if ev.buggy else f"search score {ev.score:.4f}")
                              + f": {out / 'best_model.py'}")
    table.data.update(best_call=None if result.best_seed else result.best_call + 1,
                      best_seed=result.best_seed, best_buggy=ev.buggy,
                      search_score=None if ev.buggy else ev.score)
    compose = result.finish.get("compose")
    if compose:
        from codeworld.worlds.cwmb.finish import compose_verdict

        table.add("composition", compose_verdict(compose))
        table.data["compose"] = compose
    fit = result.finish.get("fit")
    if fit and "accepted" in fit:
        verdict = ("kept" + (", now the best program" if fit.get("became_best") else "")
                   if fit["accepted"] else "not kept")
        table.add("constant fit", f"held-out score "
                                  f"{_fmt(fit.get('heldout_before'))} -> {_fmt(fit.get('heldout_after'))}"
                                  f" ({verdict})")
        table.data["fit"] = {k: fit.get(k) for k in ("accepted", "became_best", "heldout_before",
                                                       "heldout_after", "score_before", "score_after")}
    speed = result.finish.get("speed")
    if speed and "compiled" in speed:
        rate = speed.get("steps_per_s")
        table.add("speed", ("compiled" if speed["compiled"] else "Python path")
                  + (f" ({speed['how'].replace('_', ' ')})" if speed.get("how") else "")
                  + (f", {rate:,.0f} model steps/s" if rate else ""))
        table.data["speed"] = {"compiled": speed["compiled"], "steps_per_second": rate}
    return result


def score_step(spec, result, table: _Table) -> None:
    """Both scoring modes of the best program on the held-out episodes (and the training ones),
    with floor, ceiling, strict and floor-normalised accuracy."""
    try:
        from codeworld.experiments.cwmb_job import score_program

        split = result.run_dir.spec.split if result.run_dir is not None else None
        scores = score_program(spec, result.best_program, timeout_s=2 * PROGRAM_TIMEOUT_S,
                               split=split)
        where = "held-out" if scores["heldout"] else "whole buffer"
        for mode in ("sound", "paper"):
            for part, summary in ((where, scores[mode]), ("training", scores["training"][mode])):
                if part == "training" and not scores["heldout"]:
                    continue
                status = "" if summary["status"] == "ok" else (
                    f"  ({summary['status']}: {summary['message']})")
                table.add(f"accuracy ({mode}, {part})",
                          f"model {summary['score']:.4f}   strict {summary['strict']:.4f}   "
                          f"floor {_fmt(summary['floor'])}   ceiling {_fmt(summary['ceiling'])}   "
                          f"normalized {_fmt(summary['normalized'])}   "
                          f"({summary['n_transitions']} transitions)" + status)
            table.data[f"score_{mode}"] = {
                "model": scores[mode]["score"], "floor": scores[mode]["floor"],
                "ceiling": scores[mode]["ceiling"], "strict": scores[mode]["strict"],
                "normalized": scores[mode]["normalized"], "status": scores[mode]["status"],
                "heldout": scores["heldout"], "training": scores["training"][mode]}
    except Exception as exc:  # noqa: BLE001 - the demo reports what it could not measure
        traceback.print_exc()
        table.missing.append(f"scoring failed: {type(exc).__name__}: {exc}")


def plan_step(args, spec, result, table: _Table) -> None:
    """Random, oracle and model-planner returns on the real environment; normalized return."""
    try:
        from codeworld.planning import evaluate

        print(f"  planning: random, oracle and model, {args.episodes} episodes of at most "
              f"{args.max_steps} steps...", flush=True)
        ev = evaluate(spec, result.program_to_plan_with, episodes=args.episodes, seed=args.seed,
                      max_steps=args.max_steps)
        r = ev.to_dict()
        table.add("returns", f"random {_fmt(r['return_random'])}   oracle "
                             f"{_fmt(r['return_oracle'])}   model {_fmt(r['return_model'])}"
                             f"   ({args.episodes} episodes, <= {args.max_steps} steps)")
        norm = ev.normalized_return
        table.add("normalized return", f"{norm:.4f}" if norm is not None else str(ev.normalized_note))
        table.data["planning"] = {"episodes": args.episodes, "max_steps": args.max_steps,
                                  "return_random": r["return_random"],
                                  "return_oracle": r["return_oracle"],
                                  "return_model": r["return_model"], "normalized_return": norm,
                                  "note": ev.normalized_note}
    except Exception as exc:  # noqa: BLE001 - the demo reports what it could not measure
        traceback.print_exc()
        table.missing.append(f"planning failed: {type(exc).__name__}: {exc}")

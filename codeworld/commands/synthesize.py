"""``codeworld synthesize ENV``: write a code world model with GIF-MCTS, WorldCoder (REx) or zero-shot.

The run directory holds everything (see `codeworld.synthesis.run_dir`); it is saved after every
LLM call, ``--resume`` continues an interrupted run without repeating calls, and rerunning a
finished run replays it from the saved calls.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
from pathlib import Path

DEFAULT_BUDGET = 10


from codeworld.envs.arguments import ENV_HELP, add_env_arguments
from codeworld.model_worker import PROGRAM_TIMEOUT_S


def register(subparsers: argparse._SubParsersAction) -> None:
    from codeworld.llm import add_llm_arguments
    from codeworld.synthesis import METHODS

    parser = subparsers.add_parser(
        "synthesize", help="synthesize a code world model for an environment with an LLM",
        description="Search for a world-model program with an LLM, scored on the env's replay "
                    "buffer; writes a resumable run directory.")
    parser.add_argument("env", nargs="?", default=None, help=ENV_HELP + " (optional with --resume)")
    add_env_arguments(parser)
    parser.add_argument("--method", default="gif-mcts", choices=sorted(METHODS),
                        help="search method (default gif-mcts)")
    parser.add_argument("--budget", type=int, default=None,
                        help=f"LLM calls in the whole run (default {DEFAULT_BUDGET}; on --resume, "
                             "the saved budget unless given)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument("--out", default=None, metavar="RUN_DIR",
                        help="run directory (default runs/ENV-METHOD-seedS-TIME)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in --out (method, env, seed and config from it)")
    parser.add_argument("--parallel", type=int, default=None, metavar="K",
                        help="LLM calls at once per wave (default 1: the paper's algorithm)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="change a config field, e.g. --set ucb_c=0.2 --set allow_fix=false "
                             "--set sampling.temperature=0.7 (repeatable)")
    parser.add_argument("--mode", default="sound", choices=["sound", "paper"],
                        help="scoring mode used as the search signal (default sound)")
    parser.add_argument("--buffer", default=None, metavar="FILE.npz|paper",
                        help="replay buffer file, or 'paper' for the paper's buffer (default: the committed one)")
    parser.add_argument("--heldout", type=_fraction, default=None, metavar="FRACTION",
                        help="share of the buffer's episodes held out from the search, scored "
                             "apart (default 0.3; 0 holds nothing out; on --resume, the saved split)")
    parser.add_argument("--timeout", type=float, default=PROGRAM_TIMEOUT_S, metavar="S",
                        help="seconds one program may take over the whole buffer (default 60)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="MIN",
                        help="start no new LLM call after this many minutes (resume later to go on)")
    parser.add_argument("--no-fit", action="store_true",
                        help="fit no constants to the buffer (neither in the search nor after it)")
    parser.add_argument("--no-compose", action="store_true",
                        help="do not compose the best programs component by component after the search")
    parser.add_argument("--no-speed-step", action="store_true",
                        help="do not compile or port the best program and measure its speed")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    add_llm_arguments(parser)
    parser.set_defaults(func=run)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), not {text}")
    return value


def progress_printer(budget: int, stream=None, started: float | None = None):
    """A progress callback printing one line per call: calls used, action, score, best, tokens."""
    stream = stream or sys.stdout
    started = time.perf_counter() if started is None else started

    def show(event: dict) -> None:
        status = "buggy" if event["buggy"] else f"{event['score']:.4f}"
        tag = " (saved)" if event["replayed"] else ""
        if event.get("duplicate_of") is not None:
            tag += f"  (a copy of {'the skeleton' if event['duplicate_of'] == 'skeleton' else 'call ' + str(event['duplicate_of'])})"
        if event.get("fitted_from") is not None:
            tag += f"  (constants fitted: {event['fitted_from']:.4f} before)"
        print(f"  call {event['call'] + 1:>3}/{budget}  {event['action']:<8} -> {status:<7}"
              f" best {event['best']:.4f}  tokens {event['tokens']:>7,}"
              f"  {time.perf_counter() - started:6.0f}s{tag}", file=stream, flush=True)

    return show


def prepare_run(args: argparse.Namespace):
    """The run directory, its spec and the method's config from the arguments.

    Returns:
        (run_dir, spec, method, config) or raises ValueError with a message for the user.
    """
    from codeworld.envs.arguments import env_from_args
    from codeworld.envs.derive import safe_name
    from codeworld.synthesis import RunDir, RunSpec, RunStatus, get_method
    from codeworld.overrides import config_with_overrides, parse_overrides
    from codeworld.synthesis.registry import config_from_json, config_to_json

    overrides = parse_overrides(args.set)
    if args.parallel is not None:
        overrides["parallel"] = str(args.parallel)
    if getattr(args, "no_fit", False):  # no constant fit in the search either
        overrides["assist.fit_constants"] = "false"
    if args.resume:
        if not args.out:
            raise ValueError("--resume needs --out RUN_DIR")
        run_dir = RunDir(args.out)
        if not run_dir.exists():
            raise ValueError(f"no run to resume in {args.out} (no run.json)")
        spec = run_dir.spec
        if spec.description_file and not args.description:
            args.description = spec.description_file
        if env_from_args(args, args.env or spec.env_id) != spec.env_id:
            raise ValueError(f"{args.out} is a run on {spec.env_id}, not {args.env}")
        method = get_method(spec.method)
        config = config_from_json(method.config_class, spec.config)
        if overrides:
            config = config_with_overrides(config, overrides)
        changes = {"status": RunStatus.RUNNING, "config": config_to_json(config), "llm": args.llm}
        if args.budget is not None:
            changes["budget"] = args.budget
        spec = run_dir.update_spec(**changes)
        return run_dir, spec, method, config
    if not args.env:
        raise ValueError("give an environment id (or --resume --out RUN_DIR)")
    env_id = env_from_args(args)
    method = get_method(args.method)
    config = config_with_overrides(method.config_class(), overrides)
    out = args.out or str(Path("runs") / (f"{safe_name(env_id)}-{method.name}-seed{args.seed}-"
                                          f"{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"))
    run_dir = RunDir(out)
    if run_dir.exists() and run_dir.load_calls():
        raise ValueError(f"{out} already holds a run: add --resume to continue it, or choose "
                         "another --out")
    spec = RunSpec.new(
        method.name, config, env_id=env_id, llm=args.llm,
        budget=args.budget if args.budget is not None else DEFAULT_BUDGET, seed=args.seed,
        mode=args.mode, buffer=args.buffer, timeout_s=args.timeout, status=RunStatus.RUNNING,
        description_file=str(Path(args.description).resolve()) if args.description else None)
    run_dir.init(spec)
    return run_dir, spec, method, config


def run(args: argparse.Namespace) -> int:
    from codeworld.llm import LLMError, llm_from_args
    from codeworld.synthesis import RunDivergedError, RunStatus, synthesize
    from codeworld.synthesis.cwmb import make_run_world

    try:
        run_dir, spec, method, config = prepare_run(args)
    except (ValueError, TypeError, KeyError) as exc:
        print(f"codeworld synthesize: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    try:
        llm = llm_from_args(args, run_dir=str(run_dir.path), slots=getattr(config, "parallel", 1))
        prompts, evaluator = make_run_world(run_dir, spec, config.assist,
                                            heldout_fraction=args.heldout)
    except (ValueError, LLMError, OSError) as exc:
        run_dir.set_status(RunStatus.NOT_STARTED)
        print(f"codeworld synthesize: {exc}", file=sys.stderr)
        return 2
    from codeworld.synthesis.config import FinishConfig

    finish = FinishConfig(fit_constants=not args.no_fit, speed_step=not args.no_speed_step,
                          compose=not args.no_compose)
    run_dir.update_spec(finish={"compose": finish.compose, "fit_constants": finish.fit_constants,
                                "speed_step": finish.speed_step})
    budget = int(spec.budget)
    print(f"codeworld synthesize: {method.name} on {spec.env_id} with {args.llm}, "
          f"budget {budget} calls, seed {spec.seed}\n  run directory: {run_dir.path}",
          flush=True)
    try:
        with llm:
            result = synthesize(method.make(config, seed=spec.seed), llm=llm, prompts=prompts,
                                evaluator=evaluator, budget=budget, run_dir=run_dir,
                                seed=spec.seed, sampling=config.sampling,
                                progress=None if args.quiet else progress_printer(budget),
                                time_limit_s=None if args.time_limit is None else 60 * args.time_limit,
                                finish=finish)
    except RunDivergedError as exc:
        print(f"codeworld synthesize: {exc}", file=sys.stderr)
        return 1
    except LLMError as exc:
        run_dir.set_status(RunStatus.INTERRUPTED)
        print(f"codeworld synthesize: {exc}\n  resume with: codeworld synthesize --resume "
              f"--out {run_dir.path}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        run_dir.set_status(RunStatus.INTERRUPTED)
        print(f"\ninterrupted; resume with: codeworld synthesize --resume --out {run_dir.path}",
              file=sys.stderr)
        return 130
    stopped = result.accounting.stopped_by_time_limit
    run_dir.set_status(RunStatus.ended(stopped))
    print(summary_text(result))
    if stopped:
        print(f"  stopped at the time limit; continue with: codeworld synthesize --resume "
              f"--out {run_dir.path}")
    return 0


def _figures(summary: dict) -> str:
    def num(key: str) -> str:
        value = summary.get(key)
        return "n/a" if value is None else f"{value:.4f}"

    return (f"{num('score')}  strict {num('strict')}  floor {num('floor')}  "
            f"ceiling {num('ceiling')}  normalized {num('normalized')}")


def score_lines(report: dict) -> list[str]:
    """The best program's training and held-out figures (score, strict, floor, ceiling,
    floor-normalised), from its evaluation report; empty for a report without them."""
    from codeworld.scoring.report import normalized_score

    if not report or report.get("score") is None:
        return []
    floor, ceiling = report.get("floor") or {}, report.get("ceiling") or {}
    train = {"score": report["score"], "strict": report.get("strict"),
             "floor": floor.get("score"), "ceiling": ceiling.get("score"),
             "normalized": normalized_score(report["score"], floor.get("score"),
                                            ceiling.get("score"))}
    held = report.get("heldout")
    part = "training:     " if held else "whole buffer: "
    lines = [f"  {part} {_figures(train)}  ({report.get('n_transitions')} transitions)"]
    if held:
        lines.append(f"  held-out:      {_figures(held)}  ({held.get('n_transitions')} transitions)")
        rare = held.get("rare") or {}
        parts = [f"reward {v} right on {a:.0%}" for v, a in (rare.get("reward") or {}).items()]
        if rare.get("done_on_ends") is not None:
            parts.append(f"done right on {rare['done_on_ends']:.0%} of {rare['n_ends']} episode ends")
        if parts:
            lines.append(f"  rare, held-out: {'; '.join(parts)}")
    exact = report.get("exact")
    if exact and not exact.get("exact"):
        lines.append(f"  not exact:     {exact['wrong']} training transitions off by more than "
                     f"1e-5 (largest {exact['max_error']:.3g} in {exact['where']})")
    return lines


def summary_text(result) -> str:
    """The closing lines of a run: best score, where the model is, what it cost."""
    acc = result.accounting
    lines = []
    if result.best_evaluation is None:
        lines.append("no program was written")
    else:
        ev = result.best_evaluation
        state = "buggy" if ev.buggy else f"score {ev.score:.4f}"
        lines.append(f"best program: call {result.best_call + 1}, {state}")
        lines.extend(score_lines(ev.report))
    compose = result.finish.get("compose")
    if compose:
        from codeworld.synthesis.finish import compose_verdict

        lines.append(f"  composition:   {compose_verdict(compose)}")
    fit = result.finish.get("fit")
    if fit and "skipped" in fit:
        lines.append(f"  constant fit:  skipped, {fit['skipped']}")
    elif fit:
        verdict = "kept" if fit["accepted"] else "not kept"
        if fit["heldout_before"] is not None and fit["heldout_after"] is not None:
            verdict += (f" (held-out {fit['heldout_before']:.4f} -> {fit['heldout_after']:.4f}"
                        f"{', now the best program' if fit['became_best'] else ''})")
        lines.append(f"  constant fit:  {verdict}")
    speed = result.finish.get("speed")
    if speed:
        how = {"as_written": "compiled as written", "python": "Python path (no compiled form)"}.get(
            speed["how"], f"compiled after a port ({speed['how']})")
        rate = f", {speed['steps_per_s']:,.0f} model steps/s" if speed["steps_per_s"] else ""
        lines.append(f"  speed:         {how}{rate}")
    if result.run_dir is not None:
        lines.append(f"  best model:    {result.run_dir.path / 'best_model.py'}")
        lines.append(f"  run directory: {result.run_dir.path}")
    lines.append(f"  calls {acc.calls} ({acc.new_calls} new, {acc.replayed_calls} saved, "
                 f"{acc.cached_calls} from cache, {acc.duplicates} copies), tokens {acc.tokens:,}, "
                 f"{acc.wall_seconds / 60:.1f} min")
    return "\n".join(lines)

"""``codeworld synthesize [--world KIND] TARGET``: write a program for a world (a CWMB env by
default, an object level, an APPS problem) with GIF-MCTS, WorldCoder (REx) or zero-shot.

The run directory holds everything (see `codeworld.synthesis._run_dir`); it is saved after every
LLM call, ``--resume`` continues an interrupted run without repeating calls, and rerunning a
finished run replays it from the saved calls.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from pathlib import Path

from codeworld.commands._runs import add_run_arguments, add_world_arguments, refuse_buffer_flags
from codeworld.envs._arguments import ENV_HELP, add_env_arguments, env_from_args

DEFAULT_BUDGET = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    from codeworld.llm import add_llm_arguments
    from codeworld.synthesis import METHODS
    from codeworld.worlds import world_kinds

    parser = subparsers.add_parser(
        "synthesize", help="synthesize a code world model for an environment (or a world) with an LLM",
        description="Search for a world-model program with an LLM, scored on the env's replay "
                    "buffer (or the world's data); writes a resumable run directory.")
    parser.add_argument("env", nargs="?", default=None, metavar="TARGET", help=f"{ENV_HELP}; with "
                        "--world objects, a level (FAMILY:LEVEL: random episodes are the data); with "
                        "--world apps, an APPS problem's folder or file (optional with --resume)")
    parser.add_argument("--world", default=None, metavar="KIND", help="the kind of world: "
                        f"{', '.join(world_kinds())} (default cwmb; on --resume, the run's)")
    add_env_arguments(parser)
    parser.add_argument("--method", default="gif-mcts", choices=sorted(METHODS),
                        help="search method (default gif-mcts)")
    add_run_arguments(parser, budget=DEFAULT_BUDGET, out="runs/TARGET-METHOD-seedS-TIME", resumable=True)
    add_world_arguments(parser)
    add_llm_arguments(parser, continues_runs=True)
    parser.set_defaults(func=run)


def run_from_args(args: argparse.Namespace):
    """The `Run` the arguments name (a new one, or the one in ``--out`` with ``--resume``) and its
    world's factory (`codeworld.worlds.world_factory`); ValueError, KeyError, TypeError: for the user."""
    from codeworld.envs.derive import safe_name
    from codeworld.llm._arguments import default_llm_spec
    from codeworld.llm.backends import resolve
    from codeworld._overrides import config_with_overrides, parse_overrides
    from codeworld.synthesis import get_method
    from codeworld.synthesis.config import FinishConfig
    from codeworld.synthesis.run import Run
    from codeworld.worlds import world_factory

    overrides = parse_overrides(args.set)
    if args.parallel is not None:
        overrides["parallel"] = str(args.parallel)
    if args.no_fit:  # no constant fit in the search either
        overrides["assist.fit_constants"] = "false"
    off = tuple(name for name, flag in (("fit_constants", args.no_fit), ("compose", args.no_compose),
                                        ("speed_step", args.no_speed_step), ("floor", args.no_floor))
                if flag)
    if args.resume:
        if not args.out:
            raise ValueError("--resume needs --out RUN_DIR")
        run = Run.resume(args.out, overrides=overrides, budget=args.budget, llm=args.llm,
                         switch_llm=args.switch_llm, finish_off=off)
        try:
            if run.spec.description_file and not args.description:
                args.description = run.spec.description_file
            kind, target = run.spec.world_kind, run.spec.world_target
            if args.world not in (None, kind):
                raise ValueError(f"{args.out} is a run on a world of kind {kind}, not {args.world}")
            if _target(args, kind, args.env or target) != target:
                raise ValueError(f"{args.out} is a run on {target}, not {args.env}")
            factory = world_factory(kind)
        except BaseException:
            run.release()
            raise
        args.llm = run.spec.llm or default_llm_spec()  # the run's own, unless switched
        return run, factory
    kind = args.world or "cwmb"
    factory = world_factory(kind)  # an unknown kind is refused before anything is made
    if not args.env:
        raise ValueError(f"give the {kind} world's target (or --resume --out RUN_DIR)")
    target = _target(args, kind, args.env)  # a bad target is refused before anything is made
    on_env = ({"env_id": target, "mode": args.mode, "buffer": args.buffer,  # a replay buffer's
               "timeout_s": args.timeout} if kind == "cwmb" else {})  # settings: CWMB's alone
    method = get_method(args.method)
    config = config_with_overrides(method.config_class(), overrides)
    args.llm = args.llm or default_llm_spec()
    resolve(args.llm)  # an unknown backend is refused before the run directory is made
    stem = f"{safe_name(on_env.get('env_id') or Path(target).name)}-{method.name}-seed{args.seed}"
    out = args.out or str(Path("runs") / f"{stem}-{_dt.datetime.now():%Y%m%d-%H%M%S}")
    return Run.start(
        out, method, config, world=kind, target=target,
        finish=FinishConfig(**{name: False for name in off}), llm=args.llm, **on_env,
        budget=args.budget if args.budget is not None else DEFAULT_BUDGET, seed=args.seed,
        description_file=str(Path(args.description).resolve()) if args.description else None), factory


def _target(args: argparse.Namespace, kind: str, name: str) -> str:
    """The target as run.json records it, checked (`world_target`), CWMB's flags refused for others."""
    from codeworld.worlds import world_target
    refuse_buffer_flags(args, kind)
    return env_from_args(args, name) if kind == "cwmb" else world_target(kind, name)


def run(args: argparse.Namespace) -> int:
    from codeworld.commands._runs import resume_command
    from codeworld.reports._progress import progress_printer
    from codeworld.reports._text import summary_text
    from codeworld.llm import LLMError, llm_from_args
    from codeworld.synthesis import RunDivergedError
    from codeworld.synthesis._run_dir import RunRecordError

    def fail(message: object, code: int = 2) -> int:
        print(f"codeworld synthesize: {message}", file=sys.stderr)
        return code

    try:
        run, factory = run_from_args(args)
    except (ValueError, TypeError, KeyError) as exc:
        return fail(exc.args[0] if exc.args else exc)
    except OSError as exc:  # the run directory cannot be made (RunWriteError: one line)
        return fail(exc)
    try:
        llm = llm_from_args(args, run_dir=str(run.run_dir.path), slots=getattr(run.config, "parallel", 1))
        world = factory(run.spec.world_target, None, None, run=run, heldout_fraction=args.heldout)
    except (ValueError, KeyError, LLMError, OSError) as exc:
        run.setup_failed()
        return fail(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)
    resume = resume_command(args, run.run_dir.path)
    print(f"codeworld synthesize: {run.method.name} on {run.spec.world_target} with {args.llm}, "
          f"budget {run.budget} calls, seed {run.spec.seed}\n  run directory: {run.run_dir.path}",
          flush=True)
    try:
        with llm:
            result = run.execute(world, llm, progress=None if args.quiet else progress_printer(run.budget),
                                 time_limit_s=None if args.time_limit is None else 60 * args.time_limit)
    except (RunDivergedError, RunRecordError, LLMError, OSError) as exc:
        return fail(f"{exc}\n  resume with: {resume}" if isinstance(exc, (LLMError, OSError)) else exc, 1)
    except KeyboardInterrupt:
        print(f"\ninterrupted; resume with: {resume}", file=sys.stderr)
        return 130
    stopped = result.accounting.stopped_by_time_limit
    print(summary_text(result) + (f"\n  stopped at the time limit; continue with: {resume}" if stopped else ""))
    return 0

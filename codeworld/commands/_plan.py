"""``codeworld plan ENV MODEL.py``: the returns of a random policy, the oracle planner and the CWM planner.

Prints the three mean returns (with standard errors) and the normalized return
``(R_cwm - R_random) / (R_oracle - R_random)``, or why it is undefined. The model is planned with
inside a sandbox worker: a model that raises, hangs or crashes ends its run with a clear message
and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

from codeworld.commands import positive_float, positive_int, read_model_file
from codeworld.envs._arguments import ENV_HELP, add_env_arguments

EXIT_OK = 0
EXIT_MODEL_FAILED = 1
EXIT_USAGE = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    from codeworld.planning._protocol import PROTOCOLS
    from codeworld.planning.registry import PLANNERS

    parser = subparsers.add_parser(
        "plan", help="plan with a world model on the real env: returns vs random and oracle, normalized return",
        epilog="planners: " + "; ".join(f"{e.name} ({e.actions} actions): {e.summary}" for e in PLANNERS.values()))
    parser.add_argument("env", help=ENV_HELP.split(", or logged data")[0] + " (planning needs a simulator)")
    parser.add_argument("model", nargs="?", default=None, help="path to the model program (.py)")
    add_env_arguments(parser, description=False)
    parser.add_argument("--protocol", default=None, metavar="NAME", help="a named evaluation protocol (its episodes "
                        "and step cap unless given; random and oracle returns from the reference table where "
                        "it has them): " + "; ".join(f"{p.name}: {p.summary}" for p in PROTOCOLS.values()))
    parser.add_argument("--episodes", type=int, default=None, help="seeded episodes per policy (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="episode i resets with seed + i (default 0)")
    parser.add_argument("--max-steps", type=positive_int, default=None, help="cap on steps per episode")
    parser.add_argument("--planner", choices=list(PLANNERS), default=None,
                        help="the planner (default: the env's own, mcts for discrete actions and cem for "
                             "continuous ones, as in the paper)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a planner config field, e.g. --set num_simulations=50, or "
                             "--set support.mode=range to keep plans inside the training data")
    parser.add_argument("--timeout", type=positive_float, default=None, metavar="SECONDS",
                        help="wall-clock limit in seconds for one planning decision with the model")
    parser.add_argument("--no-compile", action="store_true", help="plan through the Python path")
    parser.add_argument("--no-cache", action="store_true", help="recompute random and oracle returns")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--oracle-only", action="store_true", help="only the oracle planner")
    only.add_argument("--random-only", action="store_true", help="only the random policy")
    parser.add_argument("--json", action="store_true", help="print a JSON record")
    parser.set_defaults(func=run)


def _format(stats) -> str:
    if stats is None:
        return "-"
    if stats.mean is None:
        detail = f": {stats.message}" if stats.status == "unavailable" and stats.message else ""
        return f"no finished episode ({stats.status}{detail})"
    text = f"{stats.mean:10.2f} +- {stats.stderr:.2f}  ({len(stats.returns)} episodes"
    text += ", cached)" if stats.cached else ")"
    if not stats.ok:
        text += f"  ended early: {stats.status}"
    return text


def run(args: argparse.Namespace) -> int:
    from codeworld.envs import UnknownEnvError
    from codeworld.envs._arguments import spec_from_args
    from codeworld._model import ModelSourceError, check_model_source
    from codeworld._overrides import config_with_overrides, parse_overrides
    from codeworld.planning import evaluate, get_planner
    from codeworld.planning._protocol import default_config, resolve_protocol
    from codeworld.planning.evaluate import DEFAULT_DECISION_TIMEOUT_S
    from codeworld.reports._progress import EpisodeProgressBar

    try:
        spec = spec_from_args(args)
    except (UnknownEnvError, ValueError) as exc:
        print(f"codeworld plan: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not spec.simulator:
        print(f"codeworld plan: {spec.env_id} is logged data without a simulator: planning needs "
              "an environment to act in", file=sys.stderr)
        return EXIT_USAGE
    planner = get_planner(args.planner or spec.planner)
    if planner.discrete != spec.discrete:
        kind = "discrete" if spec.discrete else "continuous"
        print(f"codeworld plan: the {planner.name} planner plans over {planner.actions} actions and "
              f"{spec.env_id} has {kind} ones", file=sys.stderr)
        return EXIT_USAGE
    try:
        protocol, episodes, max_steps = resolve_protocol(args.protocol, args.episodes, args.max_steps)
        config = config_with_overrides(default_config(spec, max_steps, planner.name), parse_overrides(args.set))
    except (KeyError, TypeError, ValueError) as exc:
        print(f"codeworld plan: {exc.args[0]}", file=sys.stderr)
        return EXIT_USAGE

    policies = ("oracle",) if args.oracle_only else ("random",) if args.random_only else ("random", "oracle", "model")
    source = None
    if "model" in policies:
        if args.model is None:
            print("codeworld plan: a MODEL.py is needed (or --oracle-only / --random-only)", file=sys.stderr)
            return EXIT_USAGE
        try:
            source = read_model_file(args.model)
            check_model_source(source)
        except ModelSourceError as exc:  # a ValueError too: before the file-reading case
            print(f"codeworld plan: {args.model}: {exc}", file=sys.stderr)
            return EXIT_MODEL_FAILED
        except ValueError as exc:
            print(f"codeworld plan: {exc}", file=sys.stderr)
            return EXIT_USAGE

    progress = EpisodeProgressBar(episodes)
    try:
        result = evaluate(spec, source, config, episodes=episodes, seed=args.seed, max_steps=max_steps,
                          protocol=protocol, policies=policies, use_cache=not args.no_cache,
                          decision_timeout_s=args.timeout or DEFAULT_DECISION_TIMEOUT_S,
                          compile=not args.no_compile, progress=progress)
    except ValueError as exc:  # e.g. an env without an oracle
        progress.close()
        print(f"codeworld plan: {exc}", file=sys.stderr)
        return EXIT_USAGE
    progress.close()

    record = result.to_dict()
    failed = result.model is not None and not result.model.ok
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        followed = f", protocol {protocol.name}" if protocol else ""
        print(f"{spec.env_id}: {episodes} episodes from seed {args.seed}{followed}, planner {planner.name}")
        print(f"  random  {_format(result.random)}")
        print(f"  oracle  {_format(result.oracle)}")
        if "model" in policies:
            print(f"  model   {_format(result.model)}")
            norm = result.normalized_return
            print(f"  normalized return: {norm:.3f}" if norm is not None
                  else f"  normalized return: {result.normalized_note}")
    if failed:
        print(f"codeworld plan: {result.model.message}", file=sys.stderr)
        return EXIT_MODEL_FAILED
    return EXIT_OK

"""``codeworld envs`` (the CWMB registry as a table) and ``codeworld describe ENV`` (the description of
any environment: a CWMB id, a Gymnasium id, logged data)."""

from __future__ import annotations

import argparse
import sys


from codeworld.envs._arguments import ENV_HELP, add_env_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    envs = subparsers.add_parser("envs", help="list the CWMB environments (the registry)")
    envs.set_defaults(func=run_envs)
    parser = subparsers.add_parser(
        "describe", help="print an environment's description (from the Gymnasium docstring)")
    parser.add_argument("env", help=ENV_HELP)
    add_env_arguments(parser)
    parser.add_argument("--no-contract", action="store_true",
                        help="leave out the note on the world-model contract")
    parser.add_argument("--write", metavar="DIR", default=None,
                        help="write all 18 descriptions as DIR/<env>.md instead (env: 'all')")
    parser.set_defaults(func=run_describe)


def run_envs(args: argparse.Namespace) -> int:
    from codeworld.envs import list_envs, resolve_env

    header = f"{'env':<26} {'paper id':<26} {'actions':<18} {'obs':>4} {'planner':<7} {'state tol':<10} settable"
    print(header)
    print("-" * len(header))
    for env_id in list_envs():
        spec = resolve_env(env_id)
        if spec.discrete:
            actions = f"discrete({spec.n_actions})"
        else:
            actions = f"box({spec.action_dim})"
        tol = "exact" if spec.state_atol == 0 and spec.state_rtol == 0 else f"{spec.state_atol:g}"
        print(f"{spec.env_id:<26} {spec.paper_id:<26} {actions:<18} {spec.obs_dim:>4} "
              f"{spec.planner:<7} {tol:<10} {'yes' if spec.settable else 'no'}")
    print("\nAny other Gymnasium id works too, with keyword arguments (e.g. codeworld describe "
          "FrozenLake-v1 --env-kwargs is_slippery=false), and logged data (FILE.npz, minari:DATASET).")
    return 0


def run_describe(args: argparse.Namespace) -> int:
    from codeworld.envs import UnknownEnvError
    from codeworld.envs._descriptions import describe, write_descriptions

    if args.write:
        from codeworld._files import check_output

        env_ids = None if args.env == "all" else [args.env]
        try:
            check_output(args.write, folder=True)
            paths = write_descriptions(args.write, env_ids)
        except (UnknownEnvError, ValueError, OSError) as exc:
            print(f"codeworld describe: {exc}", file=sys.stderr)
            return 2
        for path in paths:
            print(path)
        return 0
    from codeworld.envs._arguments import spec_from_args

    try:
        print(describe(spec_from_args(args), contract=not args.no_contract), end="")
    except (UnknownEnvError, ValueError) as exc:
        print(f"codeworld describe: {exc}", file=sys.stderr)
        return 2
    return 0

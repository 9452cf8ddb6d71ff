"""``codeworld collect ENV``: collect a replay buffer with the CWMB protocol (seeded, reproducible)."""

from __future__ import annotations

import argparse
import sys


from codeworld.envs._arguments import ENV_HELP, add_env_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "collect", help="collect a replay buffer (10 seeded episodes of <= 100 steps) and its sidecar")
    parser.add_argument("env", help=ENV_HELP + "; or 'all' for the 18 CWMB environments")
    add_env_arguments(parser, description=False)
    parser.add_argument("--out", default=None, help="output folder (default: <codeworld cache>/buffers, i.e. "
                        "$CODEWORLD_CACHE_DIR or ~/.cache/codeworld; the committed buffers are "
                        "regenerated with --out codeworld/data/buffers in a source checkout)")
    parser.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    parser.add_argument("--episodes", type=int, default=10, help="number of episodes (default 10)")
    parser.add_argument("--max-steps", type=int, default=100, help="longest episode (default 100)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codeworld._paths import cache_root
    from codeworld.envs import UnknownEnvError, list_envs, resolve_env
    from codeworld.envs._arguments import spec_from_args
    from codeworld.envs._buffers import buffer_path, cached_buffer_path, save_buffer
    from codeworld.envs._collection import CollectionConfig, collect_buffer
    from codeworld._files import check_output

    if args.episodes < 1 or args.max_steps < 1:
        print("codeworld collect: --episodes and --max-steps must be positive", file=sys.stderr)
        return 2
    config = CollectionConfig(episodes=args.episodes, max_steps=args.max_steps,
                              random_episodes=args.episodes // 2, seed=args.seed)
    try:
        if args.out is not None:  # a folder to write into, checked before the work
            check_output(args.out, folder=True)
        specs = [resolve_env(e) for e in list_envs()] if args.env == "all" else [spec_from_args(args)]
        for spec in specs:
            buffer = collect_buffer(spec, config)
            if args.out is None and not spec.shipped and config == CollectionConfig(seed=args.seed):
                target = cached_buffer_path(spec, args.seed)  # where the other commands look
            else:
                target = buffer_path(spec, args.out or cache_root() / "buffers")
            path = save_buffer(buffer, target)
            print(f"{path}: {len(buffer)} transitions, {buffer.n_episodes} episodes, "
                  f"{int(buffer.terminated.sum())} terminated, {int(buffer.truncated.sum())} truncated"
                  + ("" if "random_only" not in buffer.metadata["protocol"] else
                     f" (random episodes only: {spec.oracle_note})"))
    except (UnknownEnvError, ValueError, OSError) as exc:
        print(f"codeworld collect: {exc}", file=sys.stderr)
        return 2
    return 0


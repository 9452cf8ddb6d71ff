"""``codeworld train ENV MODEL.py``: train a policy inside a code world model, evaluate it on the real env.

The training and the evaluation are `codeworld.training.train_policy`'s: every training transition
is predicted by the model, none comes from the real environment; the trained policy then plays
seeded episodes of the real environment, beside a random policy on the same seeds.

Prints a summary, or with ``--json`` the record, which ``--out FILE`` also writes (even when the
run fails: the record then says where). Exit status: 0 on success, 1 when the model failed (it did
not load, or raised during training: the program's error and the training step are named), 2 for
a usage error (unknown environment, an algorithm that does not fit its actions, a missing extra).
Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from codeworld.commands import spec_and_model
from codeworld.envs._arguments import ENV_HELP, add_env_arguments
from codeworld.training._algorithms import ALGORITHMS, INSTALL_HINT

EXIT_OK = 0
EXIT_MODEL_FAILED = 1
EXIT_USAGE = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train", help="train a policy (stable-baselines3) inside a world model, evaluate it on the real env",
        epilog="algorithms: " + "; ".join(f"{a.name} ({a.actions} actions)" for a in ALGORITHMS.values())
               + f". Needs the train extra: {INSTALL_HINT}.")
    parser.add_argument("env", help=ENV_HELP.split(", or logged data")[0]
                        + " (the trained policy is evaluated on it)")
    parser.add_argument("model", help="path to the model program (.py)")
    add_env_arguments(parser, description=False)
    parser.add_argument("--algo", choices=list(ALGORITHMS), default="ppo", help="RL algorithm (default ppo)")
    parser.add_argument("--steps", type=int, default=100_000,
                        help="training transitions, all predicted by the model (default 100000)")
    parser.add_argument("--num-envs", type=int, default=8, help="copies of the model stepped together (default 8)")
    parser.add_argument("--episodes", type=int, default=10, help="seeded evaluation episodes (default 10)")
    parser.add_argument("--seed", type=int, default=0,
                        help="training seed; evaluation episode i resets with seed + i (default 0)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a keyword argument of the algorithm, e.g. --set learning_rate=0.001 "
                             "(values read as JSON, else as text; repeatable)")
    parser.add_argument("--no-compile", action="store_true", help="run the model on the Python path")
    parser.add_argument("--out", default=None, metavar="FILE.json", help="also write the record here")
    parser.add_argument("--save-policy", default=None, metavar="FILE.zip", help="save the trained policy")
    parser.add_argument("--json", action="store_true", help="print the record as JSON")
    parser.set_defaults(func=run)


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"codeworld train: {message}".splitlines()[0], file=sys.stderr)
    return code


def _write(record: dict, path: str | None) -> str | None:
    """Write the record to ``path`` (checked before the training), atomically; the error's one
    line when that failed after all (a full disk), else None."""
    from codeworld._files import write_atomic

    if path:
        try:
            write_atomic(path, json.dumps(record, indent=2) + "\n")
        except OSError as exc:
            return str(exc)
    return None


def run(args: argparse.Namespace) -> int:
    from codeworld.envs import UnknownEnvError
    from codeworld.envs.derive import parse_value
    from codeworld._model import ModelSourceError
    from codeworld._overrides import parse_overrides
    from codeworld._files import check_output
    from codeworld.training import ModelFailedError, train_policy

    try:
        spec, source = spec_and_model(args)
        given = {k: parse_value(v) for k, v in parse_overrides(args.set).items()}
        for out in (args.out, args.save_policy):  # before the training, which they would lose
            if out:
                check_output(out)
    except (UnknownEnvError, ValueError, OSError) as exc:
        return _fail(str(exc))
    try:
        result = train_policy(spec, source, algo=args.algo, steps=args.steps, num_envs=args.num_envs,
                              episodes=args.episodes, seed=args.seed, algo_kwargs=given,
                              compile=not args.no_compile, model_name=str(args.model),
                              save_policy=args.save_policy)
    except ModelSourceError as exc:
        print(f"codeworld train: {args.model}: {exc}", file=sys.stderr)
        return EXIT_MODEL_FAILED
    except ModelFailedError as exc:
        _write(exc.record, args.out)  # the model's failure is the error to show
        return _fail(f"{args.model}: {exc}", EXIT_MODEL_FAILED)
    except (ValueError, ImportError) as exc:
        return _fail(str(exc))
    record = result.record()
    problem = _write(record, args.out)
    if problem:
        return _fail(problem, EXIT_MODEL_FAILED)
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        print(f"{spec.env_id}: {result.algo} trained for {result.model_steps} model steps ({args.num_envs} copies, "
              f"start states from {result.start_states}), 0 real steps, {result.train_seconds:.1f} s")
        print(f"  on the real env ({args.episodes} episodes from seed {args.seed}): "
              f"{result.return_real_env:.2f} +- {result.return_real_env_stderr:.2f}   "
              f"random {result.return_random:.2f}")
    return EXIT_OK

"""``codeworld check MODEL.py``: check a model program's form, then load and compile it in the sandbox."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from codeworld.commands import positive_int, read_model_file


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check", help="check a world-model program: form, Numba compilation, one sandboxed step")
    parser.add_argument("model", help="path to the model program (.py)")
    parser.add_argument("--state-dim", type=positive_int, default=None,
                        help="state size for a trial step on zeros (omit to skip the step)")
    parser.add_argument("--continuous", type=positive_int, default=None, metavar="ACTION_DIM",
                        help="actions are float vectors of this size (default: discrete ints)")
    parser.add_argument("--no-compile", action="store_true", help="skip Numba compilation")
    parser.add_argument("--json", action="store_true", help="print a JSON record")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codeworld._model import ModelSourceError, check_model_source
    from codeworld._model_worker import ModelWorker

    try:
        source = read_model_file(args.model)
    except ValueError as exc:
        print(f"codeworld check: {exc}", file=sys.stderr)
        return 2
    try:
        form = check_model_source(source)
    except ModelSourceError as exc:
        print(f"codeworld check: {args.model}: {exc}", file=sys.stderr)
        return 1
    record: dict = {"model": args.model, "form": form.form}
    discrete = args.continuous is None
    with ModelWorker(source, discrete=discrete, compile=not args.no_compile) as worker:
        loaded = worker.load()
        record["load"] = loaded.summary()
        if loaded.ok:
            record.update(loaded.value)
        if loaded.ok and args.state_dim:
            state = np.zeros((1, args.state_dim))
            action = np.zeros((1, 1 if discrete else args.continuous))
            pred = worker.predict(state, action)
            record["trial_step"] = pred.result.summary()
            if pred.ok:
                record["trial_next_state"] = pred.next_states[0].tolist()
                record["trial_reward"] = float(pred.rewards[0])
                record["trial_done"] = bool(pred.dones[0])
    if args.json:
        print(json.dumps(record, indent=2))
    else:
        for key, value in record.items():
            print(f"{key:>18}: {value}")
    ok = record["load"] == "ok" and record.get("trial_step", "ok") == "ok"
    return 0 if ok else 1

"""How well the data section's reward formula holds on held-out episodes, with and without the
state the step started from (`AssistConfig.reward_from_old`).

For each environment, the formula is fitted on the training episodes of the run's split (seed 0,
the share every run holds out) exactly as a prompt's data section fits it
(`codeworld.worlds.cwmb._relations.find_reward_relation`), then evaluated on the held-out episodes:
the share of the reward's variance it explains there (R^2) and the share of transitions it gets
right within the sound scorer's reward tolerance. Environments whose rewards take few values get
no formula in either case (they are listed value by value) and are left out.

    python benchmarks/data_section.py [--envs continuous|ENV,ENV,...] [--out STEM]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def formula_values(formula: str, names: list[str], obs, actions, next_obs) -> np.ndarray:
    """The formula (codeworld's own fit, not generated code) on every transition."""
    out = np.empty(len(obs))
    for k, (old, action, new) in enumerate(zip(obs, actions, next_obs)):
        scope = {"math": math, "np": np, "action": np.asarray(action, dtype=np.float64)}
        for name, o, v in zip(names, old, new):
            if "[" in name:  # a long state is read as one array, s[0] ... s[n-1]
                base = name.split("[")[0]
                scope[base], scope[f"new_{base}"] = np.asarray(old), np.asarray(new)
            else:
                scope[name], scope[f"new_{name}"] = float(o), float(v)
        try:
            out[k] = float(eval(formula, scope))  # noqa: S307 - a fitted formula of our own
        except (ValueError, ZeroDivisionError, OverflowError):
            out[k] = np.nan
    return out


def measure(env_id: str) -> dict | None:
    from codeworld.envs._buffers import HELDOUT_FRACTION, EpisodeSplit
    from codeworld.envs._descriptions import describe
    from codeworld.scoring import Scorer
    from codeworld.scoring._scorer import tolerances
    from codeworld.worlds.cwmb._relations import MANY_REWARD_VALUES, find_reward_relation
    from codeworld.worlds.cwmb._scaffold import build_scaffold

    whole = Scorer(env_id, None, references=False)
    train, held = EpisodeSplit.draw(whole.buffer, HELDOUT_FRACTION, 0).parts(whole.buffer)
    spec, tol = whole.spec, tolerances(whole.spec, "sound")
    if len(np.unique(train.rewards)) <= MANY_REWARD_VALUES:  # listed value by value, as in prompts
        return None
    names = build_scaffold(spec, describe(spec.env_id), rewards=train.rewards,
                           states=np.concatenate([train.obs, train.next_obs])).references
    row: dict = {"env": env_id, "train": len(train.obs), "heldout": len(held.obs)}
    for variant, obs in (("new state", None), ("old and new state", train.obs)):
        started = time.perf_counter()
        found = find_reward_relation(train.next_obs, train.actions, train.rewards, names,
                                     discrete=spec.discrete, n_actions=spec.n_actions,
                                     atol=tol.reward_atol, rtol=tol.reward_rtol, obs=obs)
        seconds = time.perf_counter() - started
        if found is None:
            row[variant] = {"formula": None, "seconds": seconds}
            continue
        pred = formula_values(found.formula, list(names), held.obs, held.actions, held.next_obs)
        r = np.asarray(held.rewards, dtype=np.float64)
        sst = float(((r - r.mean()) ** 2).sum())
        r2 = None if sst == 0 else 1.0 - float(np.nansum((r - pred) ** 2)) / sst
        right = np.abs(pred - r) <= tol.reward_atol + tol.reward_rtol * np.abs(r)
        row[variant] = {"formula": found.formula, "train_explained": found.explained,
                        "train_exact": found.exact, "heldout_r2": r2,
                        "heldout_exact": float(np.mean(right)), "seconds": seconds}
    return row


def cell(entry: dict) -> str:
    if entry.get("formula") is None:
        return "no formula | |"
    r2 = "n/a" if entry["heldout_r2"] is None else f"{entry['heldout_r2']:.3f}"
    return f"{r2} | {entry['heldout_exact']:.2f} |"


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cwmb import resolve_envs  # the grid's reading of --envs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="continuous",
                        help="continuous, discrete, all, or a comma-separated list of ids "
                             "(as benchmarks/cwmb.py reads them)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/data_section_reward"),
                        metavar="STEM", help="writes STEM.md and STEM.json")
    args = parser.parse_args(argv)
    try:
        envs = resolve_envs(args.envs)
    except Exception as exc:  # an unknown id: one line
        parser.error(str(exc))
    rows, lines = [], []
    for env_id in envs:
        row = measure(env_id)
        if row is None:
            print(f"{env_id}: few reward values, no formula in either case", flush=True)
            continue
        rows.append(row)
        line = f"| {env_id} | {cell(row['new state'])} {cell(row['old and new state'])}"
        print(line, flush=True)
        lines.append(line)
    stem = Path(args.out)
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    head = [
        "# The data section's reward formula on held-out episodes",
        "",
        f"Command: `python benchmarks/data_section.py --envs {args.envs}`; measured "
        f"{time.strftime('%Y-%m-%d')} on {platform.machine()}, Python {platform.python_version()}.",
        "",
        "Fitted on each buffer's training episodes (the split every run draws with seed 0), "
        "scored on its held-out ones: R^2 of the reward and the share of transitions within the "
        "sound scorer's reward tolerance. Left: the new state and the action (before "
        "`AssistConfig.reward_from_old`); right: the old state and its cosine-sine angles too.",
        "",
        "| env | new state: held-out R^2 | right | old and new: held-out R^2 | right |",
        "|---|---:|---:|---:|---:|",
    ]
    formulas = ["", "Formulas (old and new state):", ""] + [
        f"- {row['env']}: `{row['old and new state'].get('formula')}`" for row in rows]
    stem.with_suffix(".md").write_text("\n".join(head + lines + formulas) + "\n")
    print(f"wrote {stem.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

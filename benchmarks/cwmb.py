"""The CWMB benchmark: the paper's Table 2 (and, with --ablation, its Table 6) for any LLM and budget.

For each environment, method and seed, one job (`codeworld.experiments.run_cwmb_job`) synthesizes a
world model with the given LLM and budget, scores the best program in both modes (sound, and the
paper's rule; the latter also on the paper's own buffer where it exists) and plans with it for the
normalized return. Jobs run on an executor (a local process pool, or Ray with ``--executor ray
[--address ADDR]``), and each job's record is written atomically to ``OUT/jobs/``: rerunning the
same command skips the finished jobs and retries the failed ones.

Outputs in ``OUT`` (default ``benchmarks/results/cwmb-<llm>-budget<B>[-ablation]``):

* ``table.md`` and ``table.json``: the Table 2 layout (accuracy in sound and paper mode and
  normalized return, averaged over the discrete and the continuous environments), the per-env
  table, and the columns of the paper's published numbers beside ours;
* ``plots/<env>.svg``: the best score so far against LLM calls, one line per method (mean over
  seeds), and ``plots/groups.svg`` for the group means;
* ``jobs/*.json``: one record per job (the results store), with the command that made them;
* ``report.html``: a page with the table, the curves and a link to each run's own page (written
  into its run directory, as ``codeworld show`` does, where that directory is on this machine).

Averaging conventions (as in the paper's Table 2): per environment the mean over seeds; per group
(discrete / continuous action spaces) the mean over environments. A job whose search wrote no
program counts as accuracy 0. The normalized return ``(R_cwm - R_random) / (R_oracle - R_random)``
is undefined where the oracle and the random policy tie (the paper names MountainCar and Acrobot),
and for Blackjack, which has no oracle here; those environments are left out of the group's
return mean, and the table says over how many environments each mean is taken.

The paper's numbers: Dainese, Merler, Alakuijala, Marttinen, "Generating Code World Models with
Large Language Models Guided by Monte Carlo Tree Search", NeurIPS 2024, arXiv 2405.15383: Table 2
(CWMB group means, `PAPER_TABLE2`), Table 3 (RTFM, `PAPER_TABLE3`), Table 6 (ablation of the
GIF-MCTS actions, `PAPER_TABLE6`) and Tables 10 and 11 (per environment, `PAPER_PER_ENV`). They
are for the paper's own LLMs and budgets, named in each column's header, not for the LLM and
budget run here.

Usage::

    python benchmarks/cwmb.py --envs discrete --methods gif-mcts,worldcoder --llm local --budget 5 --seeds 1
    python benchmarks/cwmb.py --envs CartPole-v1,Taxi-v4 --ablation --llm openai:gpt-4o --budget 20
    python benchmarks/cwmb.py ... --executor ray --address auto      # on an existing Ray cluster
    python benchmarks/cwmb.py ... --report-only                      # tables from the records only
    python benchmarks/cwmb.py ... --replan paper                     # the programs planned again

``--replan PROTOCOL`` runs no search: it plans each finished job's program again under the named
protocol (`codeworld.experiments._cwmb_job.replan_job`), with the random and oracle returns of the
reference table (``benchmarks/reference_returns.py``), and writes ``OUT/replan-PROTOCOL/`` (one
record per job in ``jobs/``, kept when the command runs again, and ``table.md``, ``table.json``). Envs
whose references the table lacks are named and skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import math
import os
import re
import shlex
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

PAPER = ("Dainese et al., Generating Code World Models with Large Language Models Guided by Monte "
         "Carlo Tree Search, NeurIPS 2024, arXiv 2405.15383")
PAPER_NOTE = ("The paper's columns are its published numbers for its own LLMs and budgets (the LLM "
              "and the LLM calls per search in each column's header), not comparable one to one "
              "with the LLM and budget measured here. Group means: Table 2 (Llama 3 70B the mean "
              "of 3 seeds, GPT-4 Turbo 1 seed; over all 6 discrete envs, the discrete return over "
              "the 4 where it is defined, and all 12 continuous envs, a failed env's return as 0), "
              "RTFM: Table 3, ablation: Table 6 (Llama 3 70B, 1 seed); per environment: Tables 10 "
              "(GIF-MCTS) and 11 (WorldCoder), Llama 3 70B one seed. Cells are accuracy / "
              "normalized return, with the paper's error where it gives one; n/a: the paper has no "
              "value. The paper's Taxi-v3 and CliffWalking-v0 are Taxi-v4 and CliffWalking-v1 here.")

# The paper's runs, as column headers: LLM and LLM calls per search.
LLAMA3_50 = "Llama 3 70B, 50 calls"
GPT4_10 = "GPT-4 Turbo, 10 calls"
GPT4_50 = "GPT-4 Turbo, 50 calls"
PAPER_RUNS = (LLAMA3_50, GPT4_10, GPT4_50)

# A published number: (value, error) as printed, error None where the table gives none; None where
# the paper has no value (N/A).
Published = tuple[float, float | None] | None


def _published(accuracy, normalized_return) -> dict[str, Published]:
    """One cell of the paper: each of accuracy and return a (value, error) pair, a bare value
    (no error printed) or None (N/A)."""
    def pair(value):
        return value if value is None or isinstance(value, tuple) else (value, None)

    return {"accuracy": pair(accuracy), "return": pair(normalized_return)}


# Dainese et al., NeurIPS 2024, Table 2: per method, group and run, accuracy and normalized return.
PAPER_TABLE2: dict[str, dict[str, dict[str, dict[str, Published]]]] = {
    "gif-mcts": {
        "discrete": {LLAMA3_50: _published((0.84, 0.03), (0.76, 0.03)),
                     GPT4_10: _published((0.91, 0.08), (0.81, 0.06))},
        "continuous": {LLAMA3_50: _published((0.35, 0.03), (0.22, 0.01)),
                       GPT4_10: _published((0.40, 0.03), (0.26, 0.01))},
    },
    "worldcoder": {
        "discrete": {LLAMA3_50: _published((0.79, 0.04), (0.60, 0.04)),
                     GPT4_10: _published((0.87, 0.09), (0.79, 0.06))},
        "continuous": {LLAMA3_50: _published((0.32, 0.03), (0.19, 0.01)),
                       GPT4_10: _published((0.24, 0.06), (0.20, 0.01))},
    },
}
# Dainese et al., NeurIPS 2024, Table 3: RTFM, per method and run.
PAPER_TABLE3: dict[str, dict[str, dict[str, Published]]] = {
    "gif-mcts": {LLAMA3_50: _published((0.58, 0.02), (-0.11, 0.12)),
                 GPT4_10: _published((0.71, 0.01), (0.31, 0.19)),
                 GPT4_50: _published((1.00, 0.00), (1.00, 0.00))},
    "worldcoder": {LLAMA3_50: _published((0.23, 0.01), (-0.11, 0.12)),
                   GPT4_10: _published((0.33, 0.01), (0.22, 0.18)),
                   GPT4_50: _published((0.64, 0.02), (-0.06, 0.12))},
}
# Dainese et al., NeurIPS 2024, Table 6: the ablation, Llama 3 70B, 1 seed, 50 calls.
PAPER_TABLE6: dict[str, dict[str, dict[str, dict[str, Published]]]] = {
    method: {"discrete": {LLAMA3_50: _published(*discrete)},
             "continuous": {LLAMA3_50: _published(*continuous)}}
    for method, discrete, continuous in (
        ("gif-mcts", ((0.88, 0.07), (0.83, 0.06)), ((0.38, 0.04), (0.23, 0.02))),
        ("gif-mcts/no-generate", ((0.87, 0.07), (0.73, 0.09)), ((0.25, 0.06), (0.16, 0.01))),
        ("gif-mcts/no-improve", ((0.85, 0.06), (0.79, 0.07)), ((0.34, 0.05), (0.17, 0.02))),
        ("gif-mcts/no-fix", ((0.81, 0.08), (0.55, 0.05)), ((0.21, 0.08), (0.10, 0.01))),
    )
}
# Dainese et al., NeurIPS 2024, Tables 10 (GIF-MCTS) and 11 (WorldCoder): per environment,
# (accuracy, normalized return) for Llama 3 70B GIF-MCTS, Llama 3 70B WorldCoder, GPT-4 Turbo
# GIF-MCTS, GPT-4 Turbo WorldCoder; no errors printed; None: N/A. Keyed by codeworld's ids (the
# paper's Taxi-v3 and CliffWalking-v0 are Taxi-v4 and CliffWalking-v1 here).
_TABLES_10_11: dict[str, tuple[tuple[float | None, float | None], ...]] = {
    "CartPole-v1": ((1.00, 1.11), (0.92, 1.09), (1.00, 0.99), (1.00, 1.00)),
    "CliffWalking-v1": ((1.00, 1.01), (1.00, 0.97), (1.00, 0.98), (1.00, 0.89)),
    "MountainCar-v0": ((1.00, None), (0.83, None), (1.00, None), (1.00, None)),
    "Taxi-v4": ((0.92, 0.67), (0.44, 0.23), (0.99, 0.87), (0.99, 0.67)),
    "Blackjack-v1": ((0.83, 0.53), (0.85, 0.41), (0.93, 0.41), (0.79, 0.59)),
    "Acrobot-v1": ((0.54, None), (0.73, None), (0.53, None), (0.42, None)),
    "InvertedPendulum-v4": ((0.66, 0.14), (0.66, 0.01), (0.66, 0.08), (0.66, 0.00)),
    "Pusher-v4": ((0.41, 0.74), (0.41, 0.77), (0.41, 0.72), (0.41, 0.70)),
    "Pendulum-v1": ((0.34, -0.15), (0.31, -0.15), (0.38, 0.51), (0.38, 0.50)),
    "Walker2d-v4": ((0.34, 0.07), (0.34, 0.08), (0.34, 0.03), (0.01, 0.03)),
    "Hopper-v4": ((0.33, 0.15), (0.00, 0.02), (0.34, -0.04), (0.33, -0.01)),
    "Swimmer-v4": ((0.33, 0.01), (0.33, 0.07), (0.33, 0.04), (0.33, 0.02)),
    "HalfCheetah-v4": ((0.33, 0.13), (0.33, 0.15), (0.33, 0.23), (0.33, 0.24)),
    "Ant-v4": ((0.33, 0.67), (0.33, 0.69), (0.33, 0.69), (0.00, 0.20)),
    "InvertedDoublePendulum-v4": ((0.25, 0.06), (0.34, 0.05), (0.41, 0.02), (0.00, 0.00)),
    "Reacher-v4": ((0.13, 0.93), (0.42, 0.67), (0.42, 0.88), (0.42, 0.71)),
    "Humanoid-v4": ((None, 0.00), (None, 0.00), (0.43, 0.01), (0.00, 0.00)),
    "HumanoidStandup-v4": ((None, 0.00), (None, 0.00), (0.42, -0.04), (0.00, 0.00)),
}
# Per method, environment and run; RTFM-v0 from Table 3.
PAPER_PER_ENV: dict[str, dict[str, dict[str, dict[str, Published]]]] = {
    method: {**{env: {LLAMA3_50: _published(*cells[k]), GPT4_10: _published(*cells[k + 2])}
                for env, cells in _TABLES_10_11.items()},
             "RTFM-v0": PAPER_TABLE3[method]}
    for k, method in enumerate(("gif-mcts", "worldcoder"))
}


def paper_numbers(ablation: bool, envs: list[str], methods: list[str]) -> dict:
    """The paper's numbers beside a table of `envs` and `methods`: ``groups`` (method -> group ->
    run) and ``per_env`` (method -> env -> run), the ablation's groups from Table 6."""
    table = PAPER_TABLE6 if ablation else {
        method: {**PAPER_TABLE2[method], "rtfm": PAPER_TABLE3[method]} for method in PAPER_TABLE2}
    shown = {group_of(env) for env in envs}
    groups = {method: {group: runs for group, runs in table[method].items() if group in shown}
              for method in methods if method in table}
    per_env = {method: {env: PAPER_PER_ENV[method][env] for env in envs if env in PAPER_PER_ENV[method]}
               for method in methods if method in PAPER_PER_ENV}
    return {"groups": groups, "per_env": per_env}


ABLATION_METHODS = ("gif-mcts", "gif-mcts/no-generate", "gif-mcts/no-improve", "gif-mcts/no-fix")
GROUPS = ("discrete", "continuous", "rtfm")  # RTFM is its own group, as in the paper


def group_of(env_id: str) -> str:
    """The spec's benchmark group: RTFM's own, else the action kind (``"discrete"`` or ``"continuous"``)."""
    from codeworld.envs import get_spec

    return get_spec(env_id).benchmark_group


# ------------------------------------------------------------------------------------------ jobs


def resolve_envs(text: str) -> list[str]:
    """``discrete``, ``continuous``, ``all``, ``rtfm`` or a comma list of ids (paper ids work; any
    Gymnasium id too, its keyword arguments following it: ``FrozenLake-v1,is_slippery=false``)."""
    from codeworld.envs import get_spec, list_envs

    names: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if "=" in part and names:  # a keyword argument of the id before: FrozenLake-v1,is_slippery=false
            names[-1] += "," + part
        elif part:
            names.append(part)
    out: list[str] = []
    for name in names:
        if name in ("discrete", "continuous"):
            out += [e for e in list_envs() if get_spec(e).action_kind == name]
        elif name == "all":
            out += list_envs()
        elif name.lower() in GROUPS[2:]:  # a group of its own (RTFM)
            out += [e for e in list_envs(include_rtfm=True) if get_spec(e).benchmark_group == name.lower()]
        else:
            out.append(get_spec(name).env_id)
    return list(dict.fromkeys(out))


def job_options(args: argparse.Namespace) -> dict:
    options: dict = {"episodes": args.episodes, "max_steps": args.max_steps, "plan": not args.no_plan}
    sampling = {}
    if args.temperature is not None:
        sampling["temperature"] = args.temperature
    if args.max_tokens is not None:
        sampling["max_tokens"] = args.max_tokens
    if sampling:
        options["sampling"] = sampling
    if args.mode != "sound":
        options["mode"] = args.mode
    if args.plan_set:
        from codeworld._overrides import parse_overrides

        options["planner"] = parse_overrides(args.plan_set)
    return options


def default_name(args: argparse.Namespace) -> str:
    llm = re.sub(r"[^A-Za-z0-9._-]+", "_", args.llm.split("/")[-1])
    return f"cwmb-{llm}-budget{args.budget}" + ("-ablation" if args.ablation else "")


# ------------------------------------------------------------------------------------------ tables


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _stderr(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    return float(np.std(values, ddof=1) / math.sqrt(len(values)))


def job_metrics(record: dict) -> dict | None:
    """The numbers of one finished job (accuracy 0 when the search wrote no program)."""
    if record.get("status") != "finished":
        return None
    result = record["result"]
    scores = result.get("scores") or {}

    def score(key: str, field: str = "score", part: dict | None = None) -> float | None:
        entry = (scores if part is None else part).get(key)
        if entry is None:
            return 0.0 if not scores and field == "score" else None
        value = entry.get(field)
        return None if value is None else float(value)

    planning = result.get("planning") or {}
    return {
        "env_id": result["env_id"],
        "method": record["job"]["method"],
        "seed": record["job"]["seed"],
        "accuracy_sound": score("sound"),
        "accuracy_paper": score("paper"),
        "accuracy_paper_buffer": score("paper_on_paper_buffer") if scores else None,
        # the headline accuracies are held out when the run split its buffer (`heldout`)
        "heldout": bool(scores.get("heldout")),
        "accuracy_training": score("sound", part=scores.get("training") or {}),
        "strict_sound": score("sound", "strict"),
        "floor_sound": score("sound", "floor"),
        "ceiling_sound": score("sound", "ceiling"),
        "normalized_sound": score("sound", "normalized"),
        "floor_paper_buffer": score("paper_on_paper_buffer", "floor"),
        "normalized_paper_buffer": score("paper_on_paper_buffer", "normalized"),
        "duplicates": (result.get("accounting") or {}).get("duplicates"),
        "new_programs": (result.get("accounting") or {}).get("new_programs"),
        "buggy_programs": (result.get("accounting") or {}).get("buggy_programs"),
        "no_progress": result.get("no_progress"),
        "normalized_return": planning.get("normalized_return"),
        "return_note": planning.get("normalized_note") if planning else result.get("note"),
        "calls": result.get("calls"),
        "cached_calls": (result.get("accounting") or {}).get("cached_calls"),
        "tokens": (result.get("accounting") or {}).get("tokens"),
        "history": [e["best"] for e in result.get("history", [])],
        "seconds": record.get("seconds"),
        "outcomes": job_outcomes(result),
        "speed": ((result.get("finish") or {}).get("speed") or None),
    }


# Held-out reporting: the training score beside the held-out one, strict accuracy, the floor and
# the floor-normalised accuracy (sound rule), and the same floor figures on the paper's buffers.
EXTRA_KEYS = ("accuracy_training", "strict_sound", "floor_sound", "normalized_sound",
              "floor_paper_buffer", "normalized_paper_buffer", "duplicates", "no_progress",
              "new_programs", "buggy_programs")
# The group figures also given as mean ± standard error over seeds (each seed's mean over the envs
# that have it; a seed missing on one of the group's envs is left out).
SEED_SPREAD_KEYS = ("accuracy_sound", "accuracy_paper_buffer", "normalized_sound", "normalized_return")


def job_outcomes(result: dict) -> list[str]:
    """The outcome class of every program of a job (`codeworld.experiments._outcomes`); a record
    written before outcomes were kept gives only buggy / runs, wrong / right from its history."""
    from codeworld.experiments._outcomes import PERFECT

    if "outcomes" in result:
        return [entry["outcome"] for entry in result["outcomes"]]
    return ["buggy (kind not recorded)" if e["buggy"] else
            "right" if e["score"] >= PERFECT else "runs, wrong" for e in result.get("history", [])]


def aggregate(records: list[dict], envs: list[str], methods: list[str]) -> dict:
    """Per-env (mean over seeds) and per-group (mean over envs) numbers for each method."""
    from codeworld.envs import get_spec

    metrics = [m for m in (job_metrics(r) for r in records) if m is not None]
    failed = [r for r in records if r.get("status") == "failed"]
    per_env: dict[str, dict[str, dict]] = {}
    for method in methods:
        per_env[method] = {}
        for env in envs:
            rows = [m for m in metrics if m["method"] == method and m["env_id"] == env]
            entry: dict = {"seeds": len(rows),
                           "failed": sum(1 for r in failed if r["job"]["method"] == method
                                         and get_spec(r["job"]["env_id"]).env_id == env)}
            for key in ("accuracy_sound", "accuracy_paper", "accuracy_paper_buffer",
                        "normalized_return", "calls", "cached_calls", "tokens", "seconds",
                        *EXTRA_KEYS):
                values = [float(r[key]) for r in rows if r[key] is not None]
                entry[key] = _mean(values)
                entry[f"{key}_stderr"] = _stderr(values)
            notes = sorted({r["return_note"] for r in rows if r["return_note"]})
            entry["return_note"] = "; ".join(notes) or None
            histories = [r["history"] for r in rows if r["history"]]
            entry["best_by_call"] = _mean_curve(histories)
            speeds = [r["speed"] for r in rows if r["speed"]]
            entry["compiled"] = (None if not speeds else
                                 sum(1 for sp in speeds if sp.get("compiled")) / len(speeds))
            rates = [sp["steps_per_s"] for sp in speeds if sp.get("steps_per_s")]
            entry["steps_per_s"] = _mean(rates) if rates else None
            per_env[method][env] = entry
    groups: dict[str, dict[str, dict]] = {}
    for method in methods:
        groups[method] = {}
        for group in GROUPS:
            names = [e for e in envs if group_of(e) == group]
            done = [per_env[method][e] for e in names if per_env[method][e]["seeds"]]
            entry = {"envs": len(done), "of": len(names)}
            for key in ("accuracy_sound", "accuracy_paper", "accuracy_paper_buffer",
                        "normalized_return", *EXTRA_KEYS):
                values = [d[key] for d in done if d.get(key) is not None]
                entry[key] = _mean(values)
                entry[f"{key}_envs"] = len(values)
            curves = [d["best_by_call"] for d in done if d["best_by_call"]]
            entry["best_by_call"] = _mean_curve(curves)
            envs_done = {e for e in names if per_env[method][e]["seeds"]}
            rows = [m for m in metrics if m["method"] == method and m["env_id"] in envs_done]
            seeds = [s for s in sorted({m["seed"] for m in rows})
                     if {m["env_id"] for m in rows if m["seed"] == s} == envs_done]
            entry["seeds"] = len(seeds)
            for key in SEED_SPREAD_KEYS:
                per_seed = [_mean([float(m[key]) for m in rows if m["seed"] == s and m[key] is not None])
                            for s in seeds]
                entry[f"{key}_seed_stderr"] = _stderr([v for v in per_seed if v is not None])
            groups[method][group] = entry
    from codeworld.experiments._outcomes import outcome_counts

    outcomes = {method: outcome_counts(o for m in metrics if m["method"] == method for o in m["outcomes"])
                for method in methods}
    return {"per_env": per_env, "groups": groups, "outcomes": outcomes, "jobs": len(records),
            "finished": len(metrics), "failed": len(failed)}


def _mean_curve(curves: list[list[float]]) -> list[float]:
    """Pointwise mean of best-so-far curves; a shorter curve (a search that stopped early on a
    perfect program) keeps its last value."""
    if not curves:
        return []
    length = max(len(c) for c in curves)
    padded = [c + [c[-1]] * (length - len(c)) for c in curves if c]
    return [float(v) for v in np.mean(np.array(padded), axis=0)]


def _fmt(value, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _pm(mean, err) -> str:
    if mean is None:
        return "n/a"
    return f"{mean:.3f}" + (f" ± {err:.3f}" if err is not None else "")


def _seeds_pm(group: dict, key: str) -> str:
    """A group mean, with its standard error over seeds where there are two or more."""
    err = group.get(f"{key}_seed_stderr")
    return _fmt(group.get(key)) + ("" if err is None or group.get(key) is None else f" ± {err:.3f}")


def _calls_by_outcome(entry: dict) -> str:
    """Mean calls per search that gave a new program, a copy (of the skeleton, the data model or an
    earlier answer) and a buggy one; blank for records written before the counts were kept."""
    counts = [entry.get(k) for k in ("new_programs", "duplicates", "buggy_programs")]
    return "" if any(c is None for c in counts) else " / ".join(_fmt(c, 1) for c in counts)


def _published_text(number: Published) -> str:
    if number is None:
        return "n/a"
    value, error = number
    return f"{value:.2f}" + ("" if error is None else f"±{error:.2f}")


def _published_cell(entry: dict | None) -> str:
    """``accuracy / return`` of one paper cell; empty where the paper has no such run."""
    if entry is None:
        return ""
    return f"{_published_text(entry['accuracy'])} / {_published_text(entry['return'])}"


def _paper_runs(cells: list[dict]) -> list[str]:
    """The paper's runs with a number in any of `cells` (run -> entry), in PAPER_RUNS order."""
    return [run for run in PAPER_RUNS if any(run in cell for cell in cells)]


def markdown(summary: dict, meta: dict, paper: dict) -> str:
    """The tables as markdown: groups beside the paper's numbers, then per environment."""
    methods = meta["methods"]
    title = "CWMB ablation (paper's Table 6)" if meta["ablation"] else "CWMB (paper's Table 2)"
    shown = [(method, group) for method in methods for group in GROUPS
             if summary["groups"][method][group]["of"]]
    group_runs = _paper_runs([paper["groups"].get(m, {}).get(g, {}) for m, g in shown])
    lines = [f"# {title}", "",
             f"Command: `{meta['command']}`", "",
             f"LLM `{meta['llm']}`, budget {meta['budget']} LLM calls, seeds {meta['seeds']}, "
             f"executor {meta['executor']}; planning: {meta['planning']}. "
             f"Jobs: {summary['finished']} finished, {summary['failed']} failed. Measured "
             f"{meta['finished_at']} on {meta['machine']}.", "",
             "## Group means", "",
             "| method | group | envs | accuracy (sound, held-out) | training | strict | floor "
             "| floor-normalised | accuracy (paper rule, held-out) | accuracy (paper rule, paper's buffers) "
             "| its floor | its floor-normalised | normalized return (envs) | seeds "
             "| calls: new / copies / buggy | no progress |"
             + "".join(f" paper, {run}: accuracy / return |" for run in group_runs),
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
             + "---:|" * len(group_runs)]
    for method, group in shown:
        g = summary["groups"][method][group]
        published = paper["groups"].get(method, {}).get(group, {})
        ret = _seeds_pm(g, "normalized_return")
        if g["normalized_return"] is not None:
            ret += f" ({g['normalized_return_envs']})"
        lines.append(f"| {method} | {group} | {g['envs']}/{g['of']} | {_seeds_pm(g, 'accuracy_sound')} "
                     f"| {_fmt(g.get('accuracy_training'))} | {_fmt(g.get('strict_sound'))} "
                     f"| {_fmt(g.get('floor_sound'))} | {_seeds_pm(g, 'normalized_sound')} "
                     f"| {_fmt(g['accuracy_paper'])} | {_seeds_pm(g, 'accuracy_paper_buffer')} "
                     f"| {_fmt(g.get('floor_paper_buffer'))} | {_fmt(g.get('normalized_paper_buffer'))} "
                     f"| {ret} | {g.get('seeds', '')} | {_calls_by_outcome(g)} "
                     f"| {_fmt(g.get('no_progress'), 1)} |"
                     + "".join(f" {_published_cell(published.get(run))} |" for run in group_runs))
    env_runs = _paper_runs([paper["per_env"].get(m, {}).get(e, {}) for e in meta["envs"] for m in methods])
    lines += ["", f"Paper: {PAPER}. {PAPER_NOTE}", "",
              "## Per environment", "",
              "| env | method | seeds | accuracy (sound, held-out) | training | strict | floor "
              "| floor-normalised | accuracy (paper rule, held-out) "
              "| accuracy (paper rule, paper's buffer) | its floor | normalized return "
              "| LLM calls (from cache) | calls: new / copies / buggy | no progress | tokens | minutes "
              "| best program compiled (model steps/s) |"
              + "".join(f" paper, {run}: accuracy / return |" for run in env_runs),
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
              + "---:|" * len(env_runs)]
    for env in meta["envs"]:
        for method in methods:
            e = summary["per_env"][method][env]
            published = paper["per_env"].get(method, {}).get(env, {})
            seeds = f"{e['seeds']}" + (f" (+{e['failed']} failed)" if e["failed"] else "")
            ret = _pm(e["normalized_return"], e["normalized_return_stderr"])
            if e["normalized_return"] is None and e["return_note"]:
                ret = f"n/a: {e['return_note']}"
            minutes = None if e["seconds"] is None else e["seconds"] / 60
            lines.append(f"| {env} | {method} | {seeds} | {_pm(e['accuracy_sound'], e['accuracy_sound_stderr'])} "
                         f"| {_fmt(e.get('accuracy_training'))} | {_fmt(e.get('strict_sound'))} "
                         f"| {_fmt(e.get('floor_sound'))} | {_fmt(e.get('normalized_sound'))} "
                         f"| {_pm(e['accuracy_paper'], e['accuracy_paper_stderr'])} "
                         f"| {_fmt(e['accuracy_paper_buffer'])} | {_fmt(e.get('floor_paper_buffer'))} "
                         f"| {ret} | {_fmt(e['calls'], 1)} ({_fmt(e['cached_calls'], 1)}) "
                         f"| {_calls_by_outcome(e)} | {_fmt(e.get('no_progress'), 1)} "
                         f"| {_fmt(e['tokens'], 0)} | {_fmt(minutes, 1)} | {_speed_cell(e)} |"
                         + "".join(f" {_published_cell(published.get(run))} |" for run in env_runs))
    lines += ["", "Accuracy: the best program's score on the held-out episodes of the "
              "environment's committed buffer, which the search never saw (a run saved before runs "
              "were split: the whole buffer); training: the same on the episodes the search saw "
              "(sound: codeworld's tolerances, done = terminated; paper rule: the paper's comparison, "
              "with its reward-balanced weighting). Strict: the share of held-out transitions right "
              "in every component. Floor: the do-nothing model (state unchanged, the most frequent "
              "reward, never done) on the same episodes; floor-normalised: (accuracy - floor) / "
              "(ceiling - floor), 0 for the do-nothing model and 1 for the true simulator. The paper's "
              "buffer columns score the same program on the paper's own buffer where it exists "
              "(out of sample by construction), with that buffer's floor. Calls by outcome (mean per "
              "search): a new program that runs, a copy (equal, up to comments and layout, to the "
              "skeleton, the data model or an earlier call's program; not scored again) and a buggy "
              "one (no program, or one that fails). Group means over seeds: ± is the standard error "
              "of the seeds' means over the envs; no progress: improvements that left "
              "the score of the program they improved where it was. LLM calls from cache: answered from the "
              "completion cache, where the same prompt and sampling seed had been sent before. "
              "Normalized return: "
              "(R_model - R_random) / (R_oracle - R_random) over the planning episodes. Group means "
              "are over environments (discrete and continuous actions; RTFM apart); a return mean is "
              "over the environments where it is defined (their number in brackets). Compiled: the "
              "best program (or its kept port) runs as Numba-compiled code called from the planners; "
              "model steps/s in the planner's rollout loop (blank: not recorded).", ""]
    lines += outcome_table(summary.get("outcomes") or {}, methods)
    return "\n".join(lines)


def _speed_cell(entry: dict) -> str:
    if entry.get("compiled") is None:
        return ""
    text = "yes" if entry["compiled"] == 1 else "no" if entry["compiled"] == 0 else f"{entry['compiled']:.0%}"
    rate = entry.get("steps_per_s")
    return text + (f" ({rate:,.0f})" if rate else "")


def outcome_table(outcomes: dict[str, dict[str, int]], methods: list[str]) -> list[str]:
    """Markdown lines: how many of all the programs each method wrote fell in each outcome class."""
    classes = list(dict.fromkeys(c for m in methods for c in outcomes.get(m, {})))
    if not classes:
        return []
    totals = {m: sum(outcomes.get(m, {}).values()) for m in methods}
    lines = ["## Program outcomes", "",
             "Every program the searches wrote (all calls of all jobs), by what became of it "
             "(`codeworld.experiments._outcomes`).", "",
             "| outcome |" + "".join(f" {m} ({totals[m]} programs) |" for m in methods),
             "|---|" + "---:|" * len(methods)]
    for name in classes:
        cells = []
        for m in methods:
            n = outcomes.get(m, {}).get(name, 0)
            cells.append(f" {n} ({n / totals[m]:.0%}) |" if totals[m] else " |")
        lines.append(f"| {name} |" + "".join(cells))
    return lines + [""]


# ------------------------------------------------------------------------------------------ plots


def write_plots(summary: dict, meta: dict, folder: Path) -> list[Path]:
    from codeworld.reports import line_plot

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for env in meta["envs"]:
        series = {m: summary["per_env"][m][env]["best_by_call"] for m in meta["methods"]}
        path = folder / f"{env}.svg"
        path.write_text(line_plot(series, title=f"{env}: best score so far ({meta['llm']})",
                                      ylabel="score (search signal)") + "\n", encoding="utf-8")
        paths.append(path)
    series = {f"{m} ({g})": summary["groups"][m][g]["best_by_call"]
              for m in meta["methods"] for g in GROUPS if summary["groups"][m][g]["envs"]}
    path = folder / "groups.svg"
    path.write_text(line_plot(series, title=f"group means: best score so far ({meta['llm']})",
                                  ylabel="score (search signal)") + "\n", encoding="utf-8")
    paths.append(path)
    return paths


# ------------------------------------------------------------------------------------------ main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default="discrete",
                        help="discrete, continuous, all, rtfm, or a comma list of ids (default discrete)")
    from codeworld.synthesis.config import ASSIST_ABLATIONS
    from codeworld.synthesis._gif_mcts import ACTION_ABLATIONS

    parser.add_argument("--methods", default="gif-mcts,worldcoder",
                        help="comma list of synthesis methods (default gif-mcts,worldcoder); a method "
                             f"may carry an ablation variant: {', '.join(ACTION_ABLATIONS)} (the "
                             f"paper's; GIF-MCTS only), {', '.join(ASSIST_ABLATIONS)} (codeworld's "
                             "aids), e.g. gif-mcts/no-data")
    parser.add_argument("--ablation", action="store_true",
                        help="the GIF-MCTS ablation: methods gif-mcts and its no-generate, no-improve "
                             "and no-fix variants (beside the paper's Table 6)")
    parser.add_argument("--llm", default=os.environ.get("CODEWORLD_LLM", "local"),
                        help="LLM spec (default: the embedded local model)")
    parser.add_argument("--budget", type=int, default=50, help="LLM calls per search (paper: 50)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1 per env and method (default 1)")
    parser.add_argument("--mode", default="sound", choices=["sound", "paper"],
                        help="scoring mode used as the search signal (default sound)")
    parser.add_argument("--temperature", type=float, default=None, help="sampling temperature of every call")
    parser.add_argument("--max-tokens", type=int, default=None, help="longest completion asked for")
    parser.add_argument("--episodes", type=int, default=10, help="planning episodes per policy (paper: 10)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="cap on steps per planning episode (default: the env's own limit)")
    from codeworld.planning._protocol import PROTOCOLS

    parser.add_argument("--protocol", default=None, choices=sorted(PROTOCOLS),
                        help="a named planning protocol over --episodes and --max-steps: "
                             + "; ".join(f"{p.name}: {p.summary}" for p in PROTOCOLS.values())
                             + " (random and oracle returns come from the reference table where it has them)")
    parser.add_argument("--no-plan", action="store_true", help="skip planning (no normalized return)")
    parser.add_argument("--plan-set", action="append", default=[], metavar="FIELD=VALUE",
                        help="a planner config field over each env's default, as codeworld plan --set "
                             "(e.g. --plan-set support.mode=nearest); part of each job's key")
    parser.add_argument("--executor", default="local", choices=["local", "ray"],
                        help="local process pool (default) or Ray")
    parser.add_argument("--address", default=None,
                        help="Ray cluster address (auto, ray://host:10001); default: a local instance")
    parser.add_argument("--workers", type=int, default=1,
                        help="jobs at once with the local executor (default 1); with the local LLM, "
                             "the workers share one server with a slot each")
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results/NAME)")
    parser.add_argument("--workdir", default=None, help="run directories (default runs/NAME)")
    parser.add_argument("--replan", default=None, choices=sorted(PROTOCOLS), metavar="PROTOCOL",
                        help="no search: plan each finished job's program again under PROTOCOL "
                             f"({', '.join(sorted(PROTOCOLS))}) into OUT/replan-PROTOCOL/")
    parser.add_argument("--replan-seed", type=int, default=None,
                        help="with --replan: the evaluation's seed for every job (default: each job's "
                             "own); one seed plans every program on the same episodes")
    parser.add_argument("--replan-threads", type=int, default=0,
                        help="with --replan: the model planner's threads (0: every core; plans do not depend on it)")
    parser.add_argument("--report-only", action="store_true",
                        help="build the tables from the records already in the results folder (they keep "
                             "the command, time and machine of the run)")
    return parser.parse_args(argv)


def replan_row(record: dict, replanned: dict, floor: dict | None = None) -> dict:
    """One job's figures planned again, beside the job's own planning and (`floor`: the
    do-nothing model planned the same way, `replan_job`'s result) the floor's."""
    planning = replanned.get("planning") or {}
    own = (record.get("result") or {}).get("planning") or {}

    def mean(part: dict, policy: str) -> float | None:
        stats = part.get(policy) or {}
        return stats.get("mean")

    return {"env_id": replanned["env_id"], "method": replanned["method"], "seed": replanned["seed"],
            "status": replanned["status"], "message": replanned.get("message"),
            "normalized_return": planning.get("normalized_return"),
            "note": planning.get("normalized_note"),
            "model": mean(planning, "model"), "random": mean(planning, "random"),
            "oracle": mean(planning, "oracle"),
            "lengths": (planning.get("model") or {}).get("lengths"),
            "floor_normalized_return": ((floor or {}).get("planning") or {}).get("normalized_return"),
            "own_normalized_return": own.get("normalized_return"),
            "own_episodes": own.get("episodes"), "own_max_steps": own.get("max_steps"),
            "seconds": replanned.get("seconds")}


def replan_markdown(rows: list[dict], meta: dict) -> str:
    """The table of a replan: per env and method the mean over seeds, and the mean over envs."""
    protocol = meta["protocol"]
    lines = [f"# Planned again under protocol `{protocol}`", "",
             f"Command: `{meta['command']}` ({meta['finished_at']}, {meta['machine']}; code at "
             f"{meta['commit']}). No search: each finished job's program (from `{meta['records']}`) "
             f"planned under `{protocol}`"
             + ("" if meta.get("evaluation_seed") is None else
                f" on the episodes of seed {meta['evaluation_seed']} for every job")
             + ", random and oracle returns from the reference table. The do-nothing model: state "
             "unchanged, a constant reward, never done, planned the same way (every plan ties, so it "
             "earns the planner's own noise): a model at it plans no better than knowing nothing.", "",
             f"| env | method | seeds | normalized return ({protocol}) | the do-nothing model | the job's own "
             "| model return | random | oracle | model episode lengths | plan minutes |",
             "|---|---|---:|---|---:|---|---:|---:|---:|---|---:|"]
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["env_id"], row["method"]), []).append(row)
    per_method: dict[str, list[float]] = {}
    per_floor: dict[str, list[float]] = {}
    skipped = []
    for (env_id, method), members in groups.items():
        done = [r for r in members if r["status"] == "ok"]
        if not done:
            skipped.append(f"- {env_id} ({method}): {members[0]['message']}")
            continue
        values = [r["normalized_return"] for r in done if r["normalized_return"] is not None]
        own = [r["own_normalized_return"] for r in done if r["own_normalized_return"] is not None]
        ret = _pm(_mean(values), _stderr(values)) if values else (done[0]["note"] or "n/a")
        if values:
            per_method.setdefault(method, []).append(_mean(values))
        first = done[0]
        cap = first["own_max_steps"]
        own_text = (f"{_fmt(_mean(own))} ({first['own_episodes']} episodes, "
                    + ("the env limit" if cap is None else f"at most {cap} steps") + ")" if own else "n/a")
        lengths = [n for r in done for n in (r["lengths"] or [])]
        length_text = f"{min(lengths)}-{max(lengths)}" if lengths else ""
        floors = [r["floor_normalized_return"] for r in done if r.get("floor_normalized_return") is not None]
        if values and floors:
            per_floor.setdefault(method, []).append(_mean(floors))
        lines.append(f"| {env_id} | {method} | {len(done)} | {ret} | {_fmt(_mean(floors)) if floors else 'n/a'} "
                     f"| {own_text} "
                     f"| {_fmt(_mean([r['model'] for r in done if r['model'] is not None]), 1)} "
                     f"| {_fmt(_mean([r['random'] for r in done if r['random'] is not None]), 1)} "
                     f"| {_fmt(_mean([r['oracle'] for r in done if r['oracle'] is not None]), 1)} "
                     f"| {length_text} | {sum(r['seconds'] or 0 for r in done) / 60:.1f} |")
    for method, values in per_method.items():
        floors = per_floor.get(method, [])
        floor_text = _fmt(_mean(floors)) if len(floors) == len(values) else "n/a"
        lines.append(f"| mean ({len(values)} env{'' if len(values) == 1 else 's'}) | {method} | "
                     f"| {_fmt(_mean(values))} | {floor_text} | | | | | | |")
    if skipped:
        lines += ["", "Not planned:", ""] + skipped
    return "\n".join(lines) + "\n"


def replan_floor(record: dict, job, args: argparse.Namespace, workdir: Path, folder: Path) -> dict:
    """The do-nothing model planned under ``args.replan`` with `job`'s planner (`floor_program`),
    kept in `folder` (one file per env and evaluation seed: a grid's jobs share their planner
    settings) and read back on a rerun."""
    from codeworld.experiments._cwmb_job import floor_program, replan_job

    seed = job.seed if args.replan_seed is None else args.replan_seed
    path = folder / f"{job.env_id}__seed{seed}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    print(f"  {job.env_id:<26} the do-nothing model     planning under {args.replan} ...", flush=True)
    result = replan_job(record, args.replan, workdir, threads=args.replan_threads,
                        seed=args.replan_seed, program=floor_program(job.env_id))
    result = {**result, "program": "floor"}
    if result["status"] == "ok":
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"    normalized return {_fmt((result.get('planning') or {}).get('normalized_return')) or 'n/a'}",
          flush=True)
    return result


def replan(args: argparse.Namespace, jobs: list, store, out: Path, workdir: Path, command: str) -> int:
    """``--replan``: plan every finished job's program again under ``args.replan``."""
    import platform

    from codeworld.experiments import ResultsStore
    from codeworld.experiments._cwmb_job import replan_job

    folder = out / f"replan-{args.replan}" if args.replan_seed is None else (
        out / f"replan-{args.replan}-seed{args.replan_seed}")
    replans = ResultsStore(folder / "jobs")
    floors_dir = folder / "floors"  # the do-nothing model per env, planned once
    floors: dict[tuple[str, int], dict] = {}
    rows = []
    for job in jobs:
        record = store.load(job)
        if record is None or record.get("status") != "finished":
            continue
        kept = replans.load(job)
        if kept is None or kept.get("status") != "finished":
            started = time.perf_counter()
            print(f"  {job.env_id:<26} {job.method:<22} seed {job.seed}  planning under {args.replan} ...",
                  flush=True)
            result = replan_job(record, args.replan, workdir, threads=args.replan_threads,
                                seed=args.replan_seed)
            kept = {"job": job.to_json(), "status": "finished" if result["status"] == "ok" else "skipped",
                    "result": result, "seconds": time.perf_counter() - started}
            if result["status"] == "ok":  # a skipped job is looked at again next time
                replans.write(kept)
            ret = _fmt((result.get("planning") or {}).get("normalized_return")) or "n/a"
            print(f"    {result.get('message') or f'normalized return {ret}'}", flush=True)
        floor = None
        if kept["result"]["status"] == "ok":
            at = (job.env_id, job.seed if args.replan_seed is None else args.replan_seed)
            floor = floors.get(at) or replan_floor(record, job, args, workdir, floors_dir)
            floors[at] = floor
        rows.append(replan_row(record, kept["result"], floor))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from worldcoder import code_version  # the commit of the code, as the other tables record it

    meta = {"command": command, "protocol": args.replan, "records": str(store.root),
            "evaluation_seed": args.replan_seed,
            "commit": code_version(),
            "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}
    folder.mkdir(parents=True, exist_ok=True)
    text = replan_markdown(rows, meta)
    (folder / "table.md").write_text(text, encoding="utf-8")
    (folder / "table.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n",
                                       encoding="utf-8")
    print()
    print(text)
    print(f"written: {folder / 'table.md'}, {folder / 'table.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from codeworld.experiments import ResultsStore, grid, make_executor, run_cwmb_job, run_grid, split_method

    args = parse_args(argv)
    if args.protocol is not None:
        from codeworld.planning._protocol import get_protocol

        protocol = get_protocol(args.protocol)
        args.episodes, args.max_steps = protocol.episodes, protocol.max_steps
    methods = list(ABLATION_METHODS) if args.ablation else [
        m.strip() for m in args.methods.split(",") if m.strip()]
    try:
        envs = resolve_envs(args.envs)
        from codeworld.synthesis import get_method

        for method in methods:
            get_method(split_method(method)[0])
        options = job_options(args)
        if options.get("planner"):  # each env's planner takes the fields, before any job runs
            from codeworld.envs import resolve_env
            from codeworld.experiments._cwmb_job import planner_config

            for env in envs:
                planner_config(resolve_env(env), options)
    except (KeyError, TypeError, ValueError) as exc:
        print(f"cwmb: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    name = default_name(args)
    out = Path(args.out) if args.out else RESULTS / name
    workdir = Path(args.workdir) if args.workdir else ROOT / "runs" / name
    store = ResultsStore(out / "jobs")
    jobs = grid(envs, methods, range(args.seeds), llm=args.llm, budget=args.budget, options=options)
    command = "python benchmarks/cwmb.py " + " ".join(shlex.quote(a) for a in (
        argv if argv is not None else sys.argv[1:]))
    measured = None  # with --report-only, the tables keep the command, time and machine that ran
    if args.report_only and (out / "table.json").is_file():
        measured = json.loads((out / "table.json").read_text(encoding="utf-8"))["meta"]
        command = measured["command"]
    if args.replan is not None:
        return replan(args, jobs, store, out, workdir, command)
    started = time.perf_counter()
    if not args.report_only:
        print(f"cwmb: {len(jobs)} jobs ({len(envs)} envs x {len(methods)} methods x {args.seeds} seeds), "
              f"LLM {args.llm}, budget {args.budget}, executor {args.executor}\n"
              f"  records: {store.root}\n  run directories: {workdir}", flush=True)

        def progress(job, record) -> None:
            m = job_metrics(record)
            if m is None:
                status = f"FAILED {record['error']}"
            else:
                ret = _fmt(m["normalized_return"]) or "n/a"
                status = (f"sound {_fmt(m['accuracy_sound'])}  paper {_fmt(m['accuracy_paper'])}  "
                          f"return {ret}")
            print(f"  {job.env_id:<26} {job.method:<22} seed {job.seed}  {status}  "
                  f"({record['seconds'] / 60:.1f} min)", flush=True)

        with contextlib.ExitStack() as stack:
            if args.llm == "local" and args.executor == "local" and args.workers > 1:
                # One server with a slot per worker, decoding the workers' requests together,
                # instead of one server per worker each taking every core.
                from codeworld.llm._local import ServerSettings, serve_for_workers

                stack.enter_context(serve_for_workers(ServerSettings(slots=args.workers)))
            executor = stack.enter_context(
                make_executor(args.executor, workers=args.workers, address=args.address))
            summary_run = run_grid(jobs, run_cwmb_job, store, executor=executor, workdir=workdir,
                                   progress=progress)
        print(f"cwmb: {len(summary_run.finished)} finished, {len(summary_run.failed)} failed, "
              f"{len(summary_run.skipped)} already done ({(time.perf_counter() - started) / 60:.1f} min)")
    records = [r for r in (store.load(job) for job in jobs) if r is not None]
    import platform

    meta = {
        "command": command, "envs": envs, "methods": methods, "llm": args.llm, "budget": args.budget,
        "seeds": args.seeds, "ablation": args.ablation, "executor": args.executor,
        "planning": ("off" if args.no_plan else
                     (f"protocol {args.protocol}: " if args.protocol else "") + f"{args.episodes} episodes per policy, "
                     f"{'the env limit' if args.max_steps is None else f'at most {args.max_steps} steps'}"),
        "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "paper": PAPER, "paper_note": PAPER_NOTE,
    }
    if measured is not None:
        meta.update({key: measured[key] for key in ("finished_at", "machine") if key in measured})
    summary = aggregate(records, envs, methods)
    paper = paper_numbers(args.ablation, envs, methods)
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(summary, meta, paper)
    (out / "table.md").write_text(text, encoding="utf-8")
    (out / "table.json").write_text(json.dumps({"meta": meta, "paper_numbers": paper, **summary},
                                               indent=2) + "\n", encoding="utf-8")
    write_plots(summary, meta, out / "plots")
    from codeworld.reports import write_grid_page

    page = write_grid_page(out, summary, meta, records, text)  # and each run's page
    print()
    print(text)
    print(f"written: {out / 'table.md'}, {out / 'table.json'}, {out / 'plots'}/, {page}")
    return 0 if summary["failed"] == 0 else 1


if __name__ == "__main__":
    from codeworld._signals import stop_as_interrupt

    try:
        with stop_as_interrupt():  # kill / timeout stop the jobs, their runs and the LLM server too
            sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("interrupted: the same command resumes (finished work is kept)")

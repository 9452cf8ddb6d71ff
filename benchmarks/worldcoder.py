"""The WorldCoder agent per level: cost to first and to reliable success, with and without the
optimism objective and curriculum transfer.

For each variant (optimism on/off x transfer on/off, or those chosen with ``--variants``) the
agent plays the curriculum of levels in order and the script prints, per level: episodes,
successes, environment steps, LLM calls and tokens until the first success and until reliable
success (``--reliable`` successes in a row), or ``-`` where it was not reached within the budget.
Results go to ``benchmarks/results/worldcoder*.json`` and ``.md``; each variant's run directory
(every prompt, completion, program and its check) to ``--runs``.

    python benchmarks/worldcoder.py --llm local --levels minigrid:empty sokoban:corridor \\
        --variants optimism+transfer --max-llm-calls 4 --max-env-steps 60 --reliable 3
    python benchmarks/worldcoder.py --llm reference   # the hand-written model: the ceiling

Every level runs with ``--n-seeds`` seeds (default 3): the agent's seed (its exploration, REx
and the LLM's sampling; a baseline's seed) is ``--seed``, ``--seed`` + 1, ...; the episode seeds
(``--seeds``, the layouts) are the same in every run. A job is one variant's curriculum at one
seed (one level at one seed for a baseline); the results are written after every level, and
``--resume`` keeps the jobs an earlier run of the same command finished and runs the rest (a
job cut off mid-curriculum runs again whole: transfer needs its earlier levels). Beside the row
of every run, the table gives per level and variant the successes, env steps, LLM calls and
tokens as mean ± standard deviation over the seeds, and in how many seeds first and reliable
success were reached: a change is better only when these say so, not one seed.

    python benchmarks/worldcoder.py --llm local --n-seeds 3 --resume \
        --out benchmarks/results/worldcoder_local_seeds   # rerun it after a stop: it goes on

``--llm reference`` answers every call with codeworld's hand-written model for the level's family
(it costs no tokens): it checks the pipeline end to end and shows the ceiling.

``--methods agent,ppo,react`` puts the paper's baselines in the same table, on the same levels,
episode seeds and episode limit (the default is the agent alone: PPO spends up to ``--ppo-steps``
env steps per level, ReAct one LLM call per step). ``ppo`` is stable-baselines3's PPO (the
``train`` extra, `codeworld.agent._ppo`): its training episodes are the env steps counted, and
the notes under the table add where its policy became valid (``--ppo-valid-rate`` success over
100 training episodes), which a lucky streak cannot fake. ``react`` is an LLM that chooses every
action (`codeworld.agent._react`): ``--react-episodes`` episodes, their success, calls and tokens.
Two plots go beside the table: levels at first and at reliable success against environment steps
(``STEM_steps.png``) and against LLM tokens (``STEM_tokens.png``, methods that call an LLM).

    python benchmarks/worldcoder.py --methods ppo --ppo-steps 100000 --reliable 3 \\
        --levels minigrid:empty sokoban:corridor --out benchmarks/results/worldcoder_ppo

``--combine`` runs nothing: it puts the rows of earlier results (``STEM.json`` files, one LLM's
and the baselines') into one table and its plots, a row per level and method or variant, the
last file's where several have one, each row naming the commit its run was made at (the
file's own record, or the ``commit`` its ``.md`` names on its first line for runs made before
the JSON kept it).

    python benchmarks/worldcoder.py --combine benchmarks/results/worldcoder_ppo.json \\
        benchmarks/results/worldcoder_local_sokoban.json --out benchmarks/results/worldcoder_local_all
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable

from codeworld.agent._config import AgentConfig
from codeworld.agent.envs import make_object_env
from codeworld.agent._loop import WorldCoderAgent, summary_row
from codeworld.agent._reference import REFERENCE_MODELS
from codeworld.synthesis.config import SamplingConfig

VARIANTS = {
    "optimism+transfer": {"optimism": True, "transfer": True},
    "optimism": {"optimism": True, "transfer": False},
    "transfer": {"optimism": False, "transfer": True},
    "neither": {"optimism": False, "transfer": False},
}
DEFAULT_LEVELS = ["minigrid:empty", "minigrid:doorkey", "sokoban:corridor", "sokoban:turn"]


METHODS = ("agent", "ppo", "react")


class ReferenceLLM:
    """Answers every call with the hand-written model of one family (`REFERENCE_MODELS`; no tokens).

    Raises:
        KeyError: a family without a hand-written model.
    """

    def __init__(self, family: str):
        if family not in REFERENCE_MODELS:
            raise KeyError(f"no hand-written model for family {family!r}; families: "
                           f"{', '.join(sorted(REFERENCE_MODELS))}")
        self.family = family
        self.program = REFERENCE_MODELS[family]

    def complete(self, messages, **sampling):
        from codeworld.synthesis.fakes import FakeCompletion

        return FakeCompletion(f"```python\n{self.program}```\n")


def _record(rows: list[dict], row: dict, variant: str, report, seed: int | None = None) -> None:
    """Keep a level's row under its variant or method (and the run's seed), print it, and pass
    it to ``report``."""
    row["variant"] = variant
    if seed is not None:
        row["seed"] = seed
    rows.append(row)
    print(format_row(row), flush=True)
    if report is not None:
        report(row)


def run_variant(name: str, llm_for: Callable[[Any], Any], levels: list[str], base: AgentConfig,
                runs: Path | None, seeds: list[int], report=None, progress=None) -> list[dict]:
    """Play the curriculum once with one variant's settings; ``report(row)`` after each level.

    ``llm_for(env)`` gives the LLM of a level (the same client for every level, or the family's
    `ReferenceLLM`); ``progress`` is the agent's progress callback (a line per call, rewrite and
    episode: `codeworld.reports._progress.agent_progress_printer`), or None.
    """
    config = replace(base, **VARIANTS[name])
    envs = [make_object_env(level) for level in levels]
    run_dir = runs / f"{name}-seed{config.seed}" if runs is not None else None
    rows = []
    with WorldCoderAgent(None, config, run_dir=run_dir, progress=progress) as agent:
        for env in envs:
            started = time.perf_counter()
            agent.llm = llm_for(env)
            try:
                result = agent.run_level(env, seeds)
                row = summary_row(result)
            except Exception as exc:  # noqa: BLE001 - a failed level is a result too
                row = {"level": env.name, "error": f"{type(exc).__name__}: {exc}",
                       "wall_seconds": round(time.perf_counter() - started, 1)}
            _record(rows, row, name, report, config.seed)
    return rows


def run_baseline(method: str, levels: list[str], args: argparse.Namespace, llm_for: Callable[[Any], Any],
                 report=None, seed: int | None = None) -> list[dict]:
    """One baseline (``ppo`` or ``react``) on every level at one seed (default ``args.seed``);
    ``report(row)`` after each level."""
    seed = args.seed if seed is None else seed
    from codeworld.agent._ppo import ppo_baseline
    from codeworld.agent._react import ReActConfig, react_baseline

    rows = []
    for level in levels:
        started = time.perf_counter()
        try:
            if method == "ppo":
                row = ppo_baseline(level, args.ppo_steps, seed=seed, reliable=args.reliable,
                                   seeds=args.seeds, max_episode_steps=args.max_episode_steps,
                                   valid_rate=args.ppo_valid_rate)
            else:
                config = ReActConfig(history=args.react_history, max_episode_steps=args.max_episode_steps,
                                     sampling=SamplingConfig(temperature=args.temperature,
                                                             max_tokens=args.react_max_tokens))
                row = react_baseline(level, llm_for(make_object_env(level)), args.react_episodes,
                                     seed=seed, reliable=args.reliable, seeds=args.seeds,
                                     config=config)
        except Exception as exc:  # noqa: BLE001 - a failed level is a result too
            row = {"level": level, "error": f"{type(exc).__name__}: {exc}",
                   "wall_seconds": round(time.perf_counter() - started, 1)}
        _record(rows, row, method, report, seed)
    return rows


def _milestone(m: dict | None, key: str) -> str:
    return "-" if not m else f"{m[key]:,}"


def format_row(row: dict) -> str:
    seed = row.get("seed", "-")
    if "error" in row:
        return f"| {row['variant']} | {row['level']} | {seed} | error: {row['error']} |"
    first, reliable = row["first_success"], row["reliable_success"]
    return (f"| {row['variant']} | {row['level']} | {seed} | {row['episodes']} | {row['successes']} | "
            f"{row['env_steps']} | {row['llm_calls']} | {row['tokens']:,} | "
            f"{_milestone(first, 'env_steps')} | {_milestone(first, 'llm_calls')} | "
            f"{_milestone(first, 'tokens')} | {_milestone(reliable, 'env_steps')} | "
            f"{_milestone(reliable, 'llm_calls')} | {_milestone(reliable, 'tokens')} | "
            f"{row['wall_seconds']:.0f} |")


HEADER = ("| variant | level | seed | episodes | successes | env steps | LLM calls | tokens | "
          "first success: steps | calls | tokens | reliable: steps | calls | tokens | wall s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def _spread(values: list[float]) -> str:
    """``mean ± standard deviation`` (the sample's, n - 1), or ``-`` with no value."""
    if not values:
        return "-"
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:,.1f} ± {sd:,.1f}"


SUMMARY_HEADER = ("| variant | level | seeds | first success in | reliable in | successes | "
                  "env steps | LLM calls | tokens | first success: steps | reliable: steps |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|")


def summary(rows: list[dict]) -> list[dict]:
    """Per (variant or method, level), over its seeds: how many runs reached first and reliable
    success, and the mean and spread of successes, env steps, LLM calls and tokens (of every
    run) and of the env steps to each milestone (of the runs that reached it)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["variant"], r["level"]), []).append(r)
    out = []
    for (variant, level), runs in groups.items():
        done = [r for r in runs if "error" not in r]
        firsts = [r["first_success"]["env_steps"] for r in done if r.get("first_success")]
        reliables = [r["reliable_success"]["env_steps"] for r in done if r.get("reliable_success")]
        out.append({"variant": variant, "level": level, "seeds": len(runs),
                    "errors": len(runs) - len(done), "first_success_in": len(firsts),
                    "reliable_in": len(reliables),
                    **{key: _spread([float(r[key]) for r in done])
                       for key in ("successes", "env_steps", "llm_calls", "tokens")},
                    "first_success_steps": _spread(firsts),
                    "reliable_steps": _spread(reliables)})
    return out


def format_summary(entry: dict) -> str:
    errors = f" ({entry['errors']} failed)" if entry["errors"] else ""
    return (f"| {entry['variant']} | {entry['level']} | {entry['seeds']}{errors} | "
            f"{entry['first_success_in']} | {entry['reliable_in']} | {entry['successes']} | "
            f"{entry['env_steps']} | {entry['llm_calls']} | {entry['tokens']} | "
            f"{entry['first_success_steps']} | {entry['reliable_steps']} |")


def baseline_notes(rows: list[dict]) -> str:
    """What the baselines' rows do not show in the common table."""
    lines = []
    for r in rows:
        if "error" in r:
            continue
        if r.get("method") == "ppo":
            valid = r["valid_policy"]
            reached = (f"at {valid['env_steps']:,} env steps" if valid else
                       f"not within {r['budget_steps']:,} env steps")
            lines.append(f"- ppo, {r['level']}: success rate {r['valid_rate']:.0%} over "
                         f"{r['window']} training episodes (a valid policy) {reached}; "
                         f"{r['episodes']:,} training episodes, the last {r['window']} at "
                         f"{r['recent_success_rate']:.0%}.")
        elif r.get("method") == "react":
            lines.append(f"- react, {r['level']}: success {r['successes']}/{r['episodes']} "
                         f"({r['success_rate']:.0%}), {r['calls_per_episode']:g} calls and "
                         f"{r['tokens_per_episode']:,.0f} tokens per episode, "
                         f"{r['parse_failures']} answers without a usable action.")
    return "\n".join(lines)


# how each milestone is drawn: PPO's rows add the step at which its policy became valid
MILESTONE_STYLES = {"first_success": ("--", "first success"), "reliable_success": ("-", "reliable success"),
                    "valid_policy": (":", "valid policy")}


def plot(rows: list[dict], stem: Path) -> list[Path]:
    """Levels at first and at reliable success against env steps and against LLM tokens (when a
    method called an LLM), a line per method (matplotlib, the ``train`` extra); returns the files
    written (none without matplotlib)."""
    try:
        import matplotlib
    except ImportError:
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(dict.fromkeys(r["variant"] for r in rows))
    runs = len({(r["level"], r.get("seed")) for r in rows})  # levels x seeds
    written = []
    for key, label, suffix in (("env_steps", "environment steps", "_steps"),
                               ("tokens", "LLM tokens", "_tokens")):
        curves = {}
        for method in methods:
            mine = [r for r in rows if r["variant"] == method and "error" not in r]
            if key == "tokens" and not any(r["llm_calls"] for r in mine):
                continue  # PPO: no LLM, nothing to put on a tokens axis
            for milestone in MILESTONE_STYLES:
                if milestone != "valid_policy" or any(milestone in r for r in mine):
                    curves[method, milestone] = sorted(r[milestone][key] for r in mine if r.get(milestone))
        if not curves:
            continue  # no method called an LLM
        right = 2 * max([10] + [c for costs in curves.values() for c in costs])
        fig, ax = plt.subplots(figsize=(8.4, 4.0))
        for (method, milestone), costs in curves.items():
            # a step up at each level's cost: how many levels were reached within x
            ax.step([0] + costs + [right], [0] + list(range(1, len(costs) + 1)) + [len(costs)],
                    where="post", color=f"C{methods.index(method)}",
                    linestyle=MILESTONE_STYLES[milestone][0],
                    label=f"{method}, {MILESTONE_STYLES[milestone][1]}")
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(0, right)
        ax.set_ylim(0, runs + 0.3)
        ax.set_xlabel(f"{label} (symmetric log scale)")
        ax.set_ylabel(f"level runs reached (of {runs}: levels x seeds)")
        ax.set_title(f"Levels reaching each milestone against {label}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside: no curve hidden
        fig.tight_layout()
        path = stem.with_name(stem.name + suffix + ".png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def write_results(out: Path, meta: dict, rows: list[dict]) -> None:
    """``STEM.json`` (the settings and every row) and ``STEM.md`` (the table and its notes)."""
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2,
                                                   default=str) + "\n")
    parts = [f"Command: `{meta['command']}`"]
    if meta["llm"]:
        note = (" The LLM here is codeworld's hand-written model for the family, correct from the "
                "first call: the rows check the pipeline and give the ceiling. Optimism cannot "
                "matter with a correct model; transfer saves the one call of a level."
                if meta["llm"] == "reference" and "agent" in meta["methods"] else "")
        parts.append(f"LLM: {meta['llm']}.{note}")
    if "ppo" in meta["methods"]:
        ppo = next((r for r in rows if r.get("method") == "ppo"), None)
        settings = ", ".join(f"{k} {v}" for k, v in ppo["config"].items()) if ppo else ""
        parts.append(f"PPO: stable-baselines3's PPO with an MLP policy on `codeworld.agent._ppo`'s "
                     f"encoding of the object-level state ({settings}), at most "
                     f"{meta['ppo_steps']:,} env steps per level; every training step counts. "
                     f"Training stops once reliable success ({meta['config']['reliable_successes']} "
                     f"successful training episodes in a row) and a valid policy ("
                     f"{meta.get('ppo_valid_rate', 0.9):.0%} success over 100 training episodes) "
                     "are both reached.")
    if meta["methods"] != ["agent"]:
        parts.append(f"Every method: episodes of at most {meta['config']['max_episode_steps']} "
                     f"steps, reset with the seeds {meta['seeds']} in turn; wall time "
                     f"{meta['wall_seconds']:,.0f} s on {meta['machine']} ({meta.get('cpus', '?')} "
                     "cores shared with other work).")
    parts.append(_summary_text(rows))
    parts.append("Every run:\n\n" + "\n".join([HEADER] + [format_row(r) for r in rows]))
    notes = baseline_notes(rows)
    if notes:
        parts.append(notes)
    out.with_suffix(".md").write_text("\n\n".join(parts) + "\n")


def _summary_text(rows: list[dict]) -> str:
    return ("Over the seeds: runs that reached first and reliable success, and mean ± standard "
            "deviation (of every run; of the steps to a milestone, of the runs that reached it):"
            "\n\n" + "\n".join([SUMMARY_HEADER] + [format_summary(e) for e in summary(rows)]))


def code_version() -> str | None:
    """The commit of the code that runs (``-dirty`` with uncommitted changes), None outside git."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"],
                             cwd=Path(__file__).resolve().parent, capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def _source_commit(path: Path, meta: dict) -> str:
    """The commit a results file was made at: its own record, else the first line of its ``.md``
    (``Code: commit abc1234 ...``, written by hand for runs before the record), else ``?``."""
    if meta.get("commit"):
        return meta["commit"]
    md = path.with_suffix(".md")
    first = md.read_text().splitlines()[0] if md.is_file() else ""
    found = re.search(r"\bcommit ([0-9a-f]{7,40})\b", first)
    return found.group(1) if found else "?"


def _limits(meta: dict) -> str:
    """A results file's budgets, in words, for the methods it ran."""
    c, parts = meta.get("config", {}), []
    methods = meta.get("methods", ["agent"])
    if "agent" in methods:
        parts.append(f"agent: at most {c.get('max_llm_calls')} LLM calls and "
                     f"{c.get('max_env_steps')} env steps a level")
    if "react" in methods:
        parts.append(f"react: {meta.get('react_episodes')} episodes")
    if "ppo" in methods:
        parts.append(f"ppo: at most {meta.get('ppo_steps'):,} env steps a level")
    parts.append(f"episodes of at most {c.get('max_episode_steps')} steps, reliable at "
                 f"{c.get('reliable_successes')} in a row")
    return "; ".join(parts)


# the order of a level's rows in a combined table
ROW_ORDER = list(VARIANTS) + ["react", "ppo"]


def combine(paths: list[Path], out: Path) -> list[dict]:
    """One table from earlier results: a row per (variant or method, level, seed), the last
    file's where several files have one; writes ``STEM.json``, ``STEM.md`` and the plots.

    Raises:
        SystemExit: a file that is missing or not a results file, or files of different LLMs.
    """
    sources, chosen = [], {}
    for path in paths:
        try:
            data = json.loads(path.read_text())
            meta, rows = data["meta"], data["rows"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"worldcoder.py: --combine: {path} is not a results file of this "
                             f"script ({type(exc).__name__}: {exc})") from None
        commit = _source_commit(path, meta)
        sources.append({"file": path.name, "commit": commit, "command": meta.get("command"),
                        "llm": meta.get("llm"), "limits": _limits(meta)})
        for row in rows:
            chosen[row["variant"], row["level"], row.get("seed")] = dict(row, commit=commit,
                                                                        source=path.name)
    llms = sorted({s["llm"] for s in sources if s["llm"]})
    if len(llms) > 1:
        raise SystemExit(f"worldcoder.py: --combine: the files are of different LLMs "
                         f"({', '.join(llms)}); combine one LLM's runs (and the baselines')")
    levels = list(dict.fromkeys(level for _, level, _ in chosen))
    rank = {name: i for i, name in enumerate(ROW_ORDER)}
    rows = sorted(chosen.values(), key=lambda r: (levels.index(r["level"]),
                                                 rank.get(r["variant"], len(rank)),
                                                 r.get("seed") is None, r.get("seed") or 0))
    meta = {"combined": sources, "llm": llms[0] if llms else None,
            "command": "python benchmarks/worldcoder.py --combine "
                       + " ".join(str(p) for p in paths) + f" --out {out}"}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2,
                                                   default=str) + "\n")
    lines = [f"- `{s['file']}` at {s['commit']} ({s['limits']}): `{s['command']}`" for s in sources]
    parts = [f"Command: `{meta['command']}`",
             f"LLM: {meta['llm']}. The rows of earlier runs, one per level and method or variant "
             "(the last file's where several have one); each row's commit is the code it ran at, "
             "so rows of different commits compare different code. Sources, in order:",
             "\n".join(lines), _summary_text(rows),
             "\n".join([HEADER.replace("| wall s |", "| wall s | commit |") + "---|"]
                       + [format_row(r) + f" {r['commit']} |" for r in rows])]
    notes = baseline_notes(rows)
    if notes:
        parts.append(notes)
    out.with_suffix(".md").write_text("\n\n".join(parts) + "\n")
    return rows


# what must match for --resume to keep an earlier run's rows
SETTINGS = ("llm", "methods", "levels", "variants", "config", "ppo_steps", "react_episodes",
            "ppo_valid_rate", "seeds")


def _level_name(level: str) -> str:
    """The name a level's rows carry (``minigrid:empty`` -> ``minigrid-empty``)."""
    return make_object_env(level).name


def finished_rows(out: Path, meta: dict, methods: list[str]) -> list[dict]:
    """The rows of the jobs that the results at ``out`` finished: an agent variant's whole
    curriculum at one seed, a baseline's level at one seed (a curriculum cut off mid-way runs
    again whole: its later levels need the earlier ones' transfer). None without a file.

    Raises:
        SystemExit: the file is not a results file, or was made with other settings.
    """
    path = out.with_suffix(".json")
    if not path.is_file():
        return []
    try:
        old = json.loads(path.read_text())
        old_meta, rows = old["meta"], old["rows"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"worldcoder.py: --resume: {path} is not a results file of this script "
                         f"({type(exc).__name__}: {exc})") from None
    config = {k: v for k, v in meta["config"].items() if k != "seed"}
    differ = [k for k in SETTINGS if (old_meta.get(k) if k != "config" else
                                      {a: b for a, b in old_meta.get(k, {}).items() if a != "seed"})
              != (meta[k] if k != "config" else config)]
    if differ:
        raise SystemExit(f"worldcoder.py: --resume: {path} was made with other settings "
                         f"({', '.join(differ)}); give another --out or the same options")
    levels = {_level_name(level) for level in meta["levels"]}
    kept = []
    for row in rows:
        if row.get("seed") not in meta["run_seeds"] or row["level"] not in levels:
            continue
        if row["variant"] in VARIANTS:  # an agent's job: the variant's curriculum at the seed
            job = {r["level"] for r in rows
                   if r["variant"] == row["variant"] and r.get("seed") == row["seed"]}
            if job != levels:
                continue
        kept.append(row)
    return kept


def _methods(text: str, llm: str) -> list[str]:
    chosen = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in METHODS]
    if unknown or not chosen:
        raise SystemExit(f"worldcoder.py: --methods takes a comma-separated list of {', '.join(METHODS)}; "
                         f"got {text!r}")
    if "react" in chosen and llm == "reference":
        raise SystemExit("worldcoder.py: react needs an LLM that chooses actions; --llm reference "
                         "only writes models")
    return chosen


def main(argv: list[str] | None = None) -> int:
    from codeworld.llm import add_llm_arguments, llm_from_args

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", nargs="+", default=DEFAULT_LEVELS, metavar="FAMILY:LEVEL")
    parser.add_argument("--methods", default="agent", metavar="M1,M2",
                        help="agent, ppo and/or react, comma-separated, in one table (default: "
                             "agent; react needs an LLM that acts, ppo the train extra)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--max-env-steps", type=int, default=200, help="per level (default 200)")
    parser.add_argument("--max-llm-calls", type=int, default=12, help="per level (default 12)")
    parser.add_argument("--rewrite-calls", type=int, default=3, help="per rewrite (default 3)")
    parser.add_argument("--reliable", type=int, default=10, help="successes in a row (default 10)")
    parser.add_argument("--max-episode-steps", type=int, default=40,
                        help="per episode, for every method (default 40)")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--plan-max-nodes", type=int, default=5000, help="planner limit (default 5000)")
    parser.add_argument("--max-tokens", type=int, default=1200, help="completion length")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--ppo-steps", type=int, default=100_000,
                        help="PPO's budget of env steps per level (default 100000)")
    parser.add_argument("--ppo-valid-rate", type=float, default=0.9,
                        help="success rate over 100 training episodes that counts as a valid "
                             "policy (default 0.9)")
    parser.add_argument("--react-episodes", type=int, default=10, help="ReAct episodes per level (default 10)")
    parser.add_argument("--react-history", type=int, default=5, help="past steps in a ReAct prompt (default 5)")
    parser.add_argument("--react-max-tokens", type=int, default=256,
                        help="completion length of a ReAct step (default 256)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                        help="episode seeds, cycled (MiniGrid layouts)")
    parser.add_argument("--seed", type=int, default=0,
                        help="the first run's seed: the agent's (exploration, REx, LLM sampling) "
                             "and a baseline's (default 0)")
    parser.add_argument("--n-seeds", type=int, default=3,
                        help="runs per level and variant or method, at seeds --seed, --seed + 1, "
                             "... (default 3)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the jobs that the results at --out (of the same settings) "
                             "finished, and run the rest")
    parser.add_argument("--out", default="benchmarks/results/worldcoder", metavar="STEM",
                        help="writes STEM.json, STEM.md, STEM_steps.png and STEM_tokens.png")
    parser.add_argument("--runs", default=None, metavar="DIR", help="run directories (default: none)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines (on stderr: a line per LLM call, rewrite and episode)")
    parser.add_argument("--combine", nargs="+", type=Path, metavar="STEM.json",
                        help="run nothing: one table and its plots from earlier results files "
                             "(written to --out)")
    add_llm_arguments(parser)
    args = parser.parse_args(argv)
    if args.combine:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        rows = combine(args.combine, out)
        plots = plot(rows, out)
        print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')} ({len(rows)} rows)"
              + "".join(f" and {p}" for p in plots))
        return 0
    methods = _methods(args.methods, args.llm)
    if args.n_seeds < 1:
        raise SystemExit(f"worldcoder.py: --n-seeds must be at least 1; got {args.n_seeds}")
    if args.max_llm_calls < 0:
        raise SystemExit(f"worldcoder.py: --max-llm-calls must be at least 0; got {args.max_llm_calls}")
    # the agent allowed no call is the rule model alone: no LLM is started, none is recorded
    uses_llm = "react" in methods or ("agent" in methods and args.max_llm_calls > 0)

    if args.llm == "reference":
        def llm_for(env):
            return ReferenceLLM(env.family)
    elif uses_llm:
        client = llm_from_args(args)

        def llm_for(env):
            return client
    elif "agent" in methods:  # no call allowed: the rule model alone, and no LLM is started
        def llm_for(env):
            return None
    else:  # PPO alone: no LLM is started
        def llm_for(env):
            raise AssertionError("no method that needs an LLM was chosen")
    base = AgentConfig(epsilon=args.epsilon, max_env_steps=args.max_env_steps,
                       max_llm_calls=args.max_llm_calls, rewrite_calls=args.rewrite_calls,
                       reliable_successes=args.reliable, max_episode_steps=args.max_episode_steps,
                       plan_max_nodes=args.plan_max_nodes,
                       sampling=SamplingConfig(temperature=args.temperature,
                                               max_tokens=args.max_tokens),
                       seed=args.seed)
    runs = Path(args.runs) if args.runs else None
    started = time.perf_counter()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"command": "python benchmarks/worldcoder.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "llm": args.llm if uses_llm or args.llm == "reference" else None, "methods": methods, "levels": args.levels,
            "variants": args.variants if "agent" in methods else [], "config": asdict(base),
            "ppo_steps": args.ppo_steps if "ppo" in methods else None,
            "react_episodes": args.react_episodes if "react" in methods else None,
            "ppo_valid_rate": args.ppo_valid_rate if "ppo" in methods else None,
            "seeds": args.seeds, "run_seeds": [args.seed + i for i in range(args.n_seeds)],
            "python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "commit": code_version()}
    rows: list[dict] = finished_rows(out, meta, methods) if args.resume else []
    done = {(r["variant"], r.get("seed"), r["level"]) for r in rows}

    def save(row: dict | None = None) -> None:
        # Written after every level, so that an interrupted run keeps what it measured.
        if row is not None:
            rows.append(row)
        meta["wall_seconds"] = round(time.perf_counter() - started, 1)
        write_results(out, meta, rows)

    print(HEADER, flush=True)
    for row in rows:
        print(format_row(row) + " (kept)", flush=True)
    for seed in meta["run_seeds"]:  # every variant at one seed before the next seed
        if "agent" in methods:
            from codeworld.reports._progress import agent_progress_printer

            for variant in args.variants:
                if all((variant, seed, _level_name(level)) in done for level in args.levels):
                    continue
                progress = None if args.quiet else agent_progress_printer(sys.stderr, started)
                run_variant(variant, llm_for, args.levels, replace(base, seed=seed), runs,
                            args.seeds, report=save, progress=progress)
        for method in ("ppo", "react"):
            if method in methods:
                left = [level for level in args.levels
                        if (method, seed, _level_name(level)) not in done]
                if left:
                    run_baseline(method, left, args, llm_for, report=save, seed=seed)
    save()
    plots = plot(rows, out)
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}"
          + "".join(f" and {p}" for p in plots))
    return 0


if __name__ == "__main__":
    from codeworld._signals import stop_as_interrupt

    try:
        with stop_as_interrupt():  # kill / timeout stop the jobs, their runs and the LLM server too
            sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("interrupted (the LLM completions so far are cached: the same command replays them)")

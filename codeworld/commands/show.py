"""``codeworld show RUN_DIR``: summarize a synthesis run (or an agent run) and write its report page.

The summary gives the best score after each call, the mix of actions (and how many of each gave
a buggy program), the accounting and the path of the best program. The report page
(``report.html`` in the run directory unless ``--html`` says otherwise; ``--open`` opens it) is
built by `codeworld.reports`: the score against calls, the search tree, each call's
program, prompt and answer, the best program, its mispredicted transitions, repairs, fits and
planning returns. An agent run (``codeworld agent``) is summarized per level and per rewrite;
each rewrite is a synthesis run of its own (``RUN_DIR/rewrites/NNNN``) that ``show`` reads too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "show", help="summarize a synthesis run and write its report page",
        description="Print a run's best score per call, action mix and best program; write a "
                    "report page (report.html: score against calls, the search tree, each "
                    "call's prompt and answer, the best program, repairs, fits, planning).")
    parser.add_argument("run_dir", help="a directory written by `codeworld synthesize`, `demo` or `agent`")
    parser.add_argument("--html", default=None, metavar="PATH",
                        help="where to write the report page (default RUN_DIR/report.html)")
    parser.add_argument("--no-picture", action="store_true", help="print the summary only")
    parser.add_argument("--open", action="store_true", help="open the report page in a browser")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=run)


def format_summary(summary: dict) -> str:
    lines = [f"{summary['run_dir']}: {summary['method']} on {summary.get('target') or summary['env_id']} with "
             f"{summary['llm']}, seed {summary['seed']}, {summary['status']}"]
    acc = summary["accounting"]
    lines.append(f"calls {summary['calls']}/{summary['budget']}"
                 + (f", tokens {acc.get('tokens', 0):,} (prompt {acc.get('prompt_tokens', 0):,}"
                    f" + completion {acc.get('completion_tokens', 0):,}),"
                    f" LLM {acc.get('llm_seconds', 0):.0f} s" if acc else ""))
    best = summary["best"]
    if best:
        state = "buggy" if best["buggy"] else f"{best['score']:.4f}"
        searched = next((row for row in summary["per_call"] if row["call"] == best["call"]), None)
        if best.get("seed"):  # a program the world wrote before the search
            from codeworld.reports.summaries import SEED_NAMES

            state += f" ({SEED_NAMES.get(best['seed'], best['seed'])})"
        elif searched and not best["buggy"] and f"{searched['score']:.4f}" != state:
            # best_report.json holds the final evaluation (the whole buffer, or the composed or
            # fitted program); the table below has the score the search gave the call.
            state += f" (call {best['call']}; the search scored it {searched['score']:.4f})"
        else:
            state += f" (call {best['call']})"
        lines.append(f"best score {state}: {best['path']}")
        from codeworld.commands.runs import score_lines

        lines.extend(line[2:] for line in score_lines(best.get("report") or {}))
    split = summary.get("split")
    if split and split.get("n_heldout"):
        lines.append(f"held out: episodes {', '.join(str(e) for e in split['heldout_episodes'])} "
                     f"of {split['n_episodes']} ({split['n_heldout']} transitions, never shown "
                     f"to the search; seed {split['seed']})")
    from codeworld.reports.summaries import SEED_NAMES

    for seed in summary.get("seeds") or []:
        held = "" if seed.get("heldout") is None else f", held out {seed['heldout']:.4f}"
        score = "buggy" if seed["buggy"] else f"{seed['score']:.4f}"
        lines.append(f"{SEED_NAMES.get(seed['label'], seed['label'])} (no call): score {score}"
                     f"{held}{', the search starts from it' if seed.get('start') else ''}")
    outcomes = summary.get("outcomes") or {}
    if outcomes.get("new") is not None:
        lines.append(f"calls by outcome: {outcomes['new']} new program(s), {outcomes['copy']} "
                     f"copies, {outcomes['buggy']} buggy")
    mix = ", ".join(f"{a} {c['calls']} ({c['buggy']} buggy)"
                    for a, c in sorted(summary["action_mix"].items()))
    lines.append(f"actions: {mix or 'none'}")
    lines.append("best score per call:")
    heldout = any(row.get("heldout") is not None for row in summary["per_call"])
    lines.append("  call  action    parent  score    best" + ("     held-out" if heldout else ""))
    for row in summary["per_call"]:
        parent = "root" if row["parent"] is None else str(row["parent"])
        score = "buggy " if row["buggy"] else f"{row['score']:.4f}"
        held = "" if row.get("heldout") is None else f"{row['heldout']:.4f}"
        if row.get("duplicate_of") is not None:
            held += f"  (a copy of {row['duplicate_of']})"
        lines.append(f"  {row['call']:>4}  {row['action']:<8}  {parent:>6}  {score:<7}  "
                     f"{row['best']:.4f}   {held}".rstrip())
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from codeworld.reports import summarize
    from codeworld.synthesis import RunDir

    path = Path(args.run_dir)
    if not RunDir(path).exists() and ((path / "levels").is_dir() or (path / "rewrites").is_dir()):
        return _show_agent_run(path, args)
    if not RunDir(path).exists():
        print(f"codeworld show: {path} is not a run directory (no run.json)", file=sys.stderr)
        return 2
    try:
        summary = summarize(path)
    except ValueError as exc:  # a run.json that is not a run's spec
        print(f"codeworld show: {exc}", file=sys.stderr)
        return 2
    picture = None
    if not args.no_picture:
        from codeworld.reports import write_run_page

        picture = write_run_page(path, args.html)
        summary["picture"] = str(picture)
        if args.open:
            import webbrowser

            webbrowser.open(picture.resolve().as_uri())
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(format_summary(summary))
        if picture is not None:
            print(f"report: {picture}")
    return 0


def _show_agent_run(path: Path, args: argparse.Namespace) -> int:
    from codeworld.reports import agent_summary

    try:
        summary = agent_summary(path)
    except ValueError as exc:
        print(f"codeworld show: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    config = summary["config"]
    settings = (f"optimism {config.get('optimism')}, transfer {config.get('transfer')}, seed "
                f"{config.get('seed')}" if config else "on its first level")
    lines = [f"{path}: WorldCoder agent run, {settings}"]
    lines.append("  level                 episodes  successes  steps  calls  tokens    first success      reliable")
    for row in summary["levels"]:
        def at(m):
            return "-" if m is None else f"{m['env_steps']} st/{m['llm_calls']} calls"
        lines.append(f"  {row['level']:<20}  {row['episodes']:>8}  {row['successes']:>9}  "
                     f"{row['env_steps']:>5}  {row['llm_calls']:>5}  {row['tokens']:>7,}   "
                     f"{at(row['first_success']):<17}  {at(row['reliable_success'])}")
    lines.append("rewrites (each a synthesis run: codeworld show RUN_DIR/rewrites/NNNN):")
    for r in summary["rewrites"]:
        best = "-" if r["best"] is None else f"{r['best']:.3f}"
        lines.append(f"  {r['index']:>4}  {r['level'] or '':<20}  {r['reason'] or '':<34} "
                     f"{r['calls']} calls, best {best}")
    print("\n".join(lines))
    return 0

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


def run(args: argparse.Namespace) -> int:
    from codeworld.reports import summarize
    from codeworld.reports._text import format_summary
    from codeworld.synthesis._run_dir import AgentRunDir, RunDir

    path = Path(args.run_dir)
    if not RunDir(path).exists() and AgentRunDir(path).exists():
        return _show_agent_run(path, args)
    if not RunDir(path).exists():
        print(f"codeworld show: {path} is not a run directory (no run.json)", file=sys.stderr)
        return 2
    from codeworld._files import check_output

    try:
        if not args.no_picture and args.html:
            check_output(args.html)
        summary = summarize(path)
    except (ValueError, OSError) as exc:  # a record that is not a run's (named), an unwritable page
        print(f"codeworld show: {exc}", file=sys.stderr)
        return 2
    picture = None
    opened = True
    if not args.no_picture:
        from codeworld.reports import write_run_page

        try:
            picture = write_run_page(path, args.html)
        except OSError as exc:
            print(f"codeworld show: {exc}", file=sys.stderr)
            return 2
        summary["picture"] = str(picture)
        if args.open:
            import webbrowser

            opened = webbrowser.open(picture.resolve().as_uri())
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(format_summary(summary))
        if picture is not None:
            print(f"report: {picture}")
    if not opened:
        print(f"codeworld show: no web browser could be started here; open {picture} in one",
              file=sys.stderr)
        return 1
    if summary["problems"]:
        print(f"codeworld show: {len(summary['problems'])} record(s) could not be read and are "
              f"left out (the page names them): {summary['problems'][0]}", file=sys.stderr)
        return 1
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

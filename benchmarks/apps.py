"""APPS-format code generation: GIF-MCTS, REx (WorldCoder's search) and zero-shot, strict accuracy.

The paper's Table 1 compares code-generation methods on APPS by *strict accuracy*: the share of
problems whose program passes every test. APPS itself cannot be downloaded here, so this reads
problems from a local folder or file in the APPS layout (see `codeworld.worlds.apps._apps`); the
default is ``benchmarks/apps_problems/``, six problems written for codeworld in that layout (not
from APPS), each with a reference solution (``--check-solutions`` runs those through the sandbox).

Every (problem, method, seed) is one job on the experiment executor (``--executor local|ray``),
recorded in ``OUT/jobs/`` (reruns skip finished jobs). The search sees the first half of each
problem's tests (at least one); the best program is then run on all of them in the sandbox, and
the problem counts as solved only if it passes every one. Writes ``OUT/table.md`` and
``OUT/table.json`` (default OUT: ``benchmarks/results/apps-<llm>-budget<B>``).

The paper's column (Dainese et al., NeurIPS 2024, arXiv 2405.15383, Table 1, `PAPER_TABLE1`) is
its strict accuracy on the APPS competition split with Llama 3 70B, pass@20: another LLM, budget
and problem set, not comparable with a handful of problems here.

Usage::

    python benchmarks/apps.py --llm local --budget 4 [--problems DIR_OR_FILE] [--methods ...]
    python benchmarks/apps.py --check-solutions
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PROBLEMS = ROOT / "benchmarks" / "apps_problems"
DIFFICULTIES = ("introductory", "interview", "competition")
PAPER = "Dainese et al., NeurIPS 2024, arXiv 2405.15383, Table 1"
# Dainese et al., NeurIPS 2024, Table 1: strict accuracy in percent (value, error) on the APPS
# competition split, Llama 3 70B, pass@20. The paper's zero-shot row is zero-shot chain of
# thought; codeworld's zero-shot prompt (prompts/apps_zero_shot.txt) asks for the program alone.
PAPER_TABLE1: dict[str, tuple[float, float]] = {
    "gif-mcts": (28.3, 1.4), "worldcoder": (25.1, 1.4), "zero-shot": (23.2, 1.3)}


def check_solutions(problems) -> int:
    """Run each problem's reference solutions on all its tests; 0 when every one passes."""
    from codeworld.worlds.apps._apps import run_tests

    bad = 0
    for problem in problems:
        for i, solution in enumerate(problem.solutions):
            run = run_tests(solution, problem.inputs, problem.outputs, problem.fn_name)
            ok = run.all_passed
            bad += not ok
            print(f"  {problem.problem_id} solution {i}: {sum(run.passed)}/{problem.n_tests} tests"
                  + ("" if ok else f"  FAILED {run.message or run.errors}"))
    return 0 if bad == 0 else 1


def summarize(records: list[dict], methods: list[str], problems) -> dict:
    """Strict accuracy per method, overall and per difficulty (mean over seeds and problems)."""
    out: dict = {}
    for method in methods:
        rows = [r for r in records if r["job"]["method"] == method]
        done = [r["result"] for r in rows if r.get("status") == "finished"]
        entry = {"jobs": len(rows), "finished": len(done),
                 "failed": sum(1 for r in rows if r.get("status") == "failed"),
                 "strict_accuracy": (sum(bool(d["strict"]) for d in done) / len(done)) if done else None,
                 "test_pass_rate": (sum(d["passed"] for d in done) / len(done)) if done else None,
                 "calls": (sum(d["calls"] for d in done) / len(done)) if done else None,
                 "per_difficulty": {}, "per_problem": {}}
        for level in DIFFICULTIES:
            level_rows = [d for d in done if d["difficulty"] == level]
            if level_rows:
                entry["per_difficulty"][level] = {
                    "problems": len(level_rows),
                    "strict_accuracy": sum(bool(d["strict"]) for d in level_rows) / len(level_rows)}
        for d in done:
            entry["per_problem"].setdefault(d["problem_id"], []).append(
                {"strict": d["strict"], "passed": d["passed"], "calls": d["calls"]})
        out[method] = entry
    return out


def markdown(summary: dict, meta: dict) -> str:
    lines = ["# APPS-format code generation: strict accuracy", "",
             f"Command: `{meta['command']}`", "",
             f"LLM `{meta['llm']}`, budget {meta['budget']} LLM calls per problem, seeds {meta['seeds']}, "
             f"{meta['n_problems']} problems from `{meta['problems']}`. Measured {meta['finished_at']} "
             f"on {meta['machine']}.", "",
             "| method | problems solved (strict accuracy) | tests passed | LLM calls (mean) "
             "| " + " | ".join(DIFFICULTIES) + " | paper (Table 1): % strict, competition, Llama 3 70B, pass@20 |",
             "|---|---:|---:|---:|" + "---:|" * len(DIFFICULTIES) + "---:|"]
    for method, e in summary.items():
        levels = [e["per_difficulty"].get(level) for level in DIFFICULTIES]
        cells = [f"{lv['strict_accuracy']:.2f} ({lv['problems']})" if lv else "" for lv in levels]
        strict = "n/a" if e["strict_accuracy"] is None else f"{e['strict_accuracy']:.2f}"
        passed = "n/a" if e["test_pass_rate"] is None else f"{e['test_pass_rate']:.2f}"
        calls = "n/a" if e["calls"] is None else f"{e['calls']:.1f}"
        paper = PAPER_TABLE1.get(method)
        lines.append(f"| {method} | {strict} ({e['finished']} runs) | {passed} | {calls} | "
                     + " | ".join(cells) + f" | {'' if paper is None else f'{paper[0]:.1f}±{paper[1]:.1f}'} |")
    lines += ["", "Strict accuracy: the share of (problem, seed) runs whose best program passes every "
              "test, the tests the search did not see included. Tests passed: the mean share of "
              f"tests passed. The paper's column ({PAPER}) is its strict accuracy in percent on the "
              "APPS competition split with its own LLM and budget (Llama 3 70B, pass@20), not "
              "comparable one to one with the problems, LLM and budget here.", ""]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", default=str(DEFAULT_PROBLEMS),
                        help="an APPS folder tree, one problem folder, or a .json/.jsonl file")
    parser.add_argument("--limit", type=int, default=None, help="only the first N problems")
    parser.add_argument("--methods", default="gif-mcts,worldcoder,zero-shot", help="comma list")
    parser.add_argument("--llm", default=os.environ.get("CODEWORLD_LLM", "local"), help="LLM spec")
    parser.add_argument("--budget", type=int, default=4, help="LLM calls per problem (default 4)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per problem and method")
    parser.add_argument("--timeout", type=float, default=4.0, help="seconds per test (default 4)")
    parser.add_argument("--temperature", type=float, default=None, help="sampling temperature")
    parser.add_argument("--max-tokens", type=int, default=None, help="longest completion")
    parser.add_argument("--executor", default="local", choices=["local", "ray"])
    parser.add_argument("--address", default=None, help="Ray cluster address")
    parser.add_argument("--workers", type=int, default=1, help="jobs at once (local executor)")
    parser.add_argument("--out", default=None, help="results folder")
    parser.add_argument("--workdir", default=None, help="run directories (default runs/NAME)")
    parser.add_argument("--check-solutions", action="store_true",
                        help="only run the problems' reference solutions through the sandbox")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from codeworld.experiments import ResultsStore, grid, make_executor, run_grid
    from codeworld.experiments._apps import run_apps_job
    from codeworld.worlds.apps._apps import load_problems

    args = parse_args(argv)
    problems = load_problems(args.problems)[:args.limit]
    if args.check_solutions:
        return check_solutions(problems)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    name = f"apps-{re.sub(r'[^A-Za-z0-9._-]+', '_', args.llm.split('/')[-1])}-budget{args.budget}"
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / name
    workdir = Path(args.workdir) if args.workdir else ROOT / "runs" / name
    problems_path = Path(args.problems).resolve()
    if problems_path.is_relative_to(ROOT):  # keys (and so skipping) do not depend on the checkout
        problems_path = problems_path.relative_to(ROOT)
    options: dict = {"problems": str(problems_path), "timeout_s": args.timeout}
    sampling = {k: v for k, v in (("temperature", args.temperature), ("max_tokens", args.max_tokens))
                if v is not None}
    if sampling:
        options["sampling"] = sampling
    jobs = grid([f"apps/{p.problem_id}" for p in problems], methods, range(args.seeds),
                llm=args.llm, budget=args.budget, options=options)
    store = ResultsStore(out / "jobs")
    started = time.perf_counter()
    print(f"apps: {len(jobs)} jobs ({len(problems)} problems x {len(methods)} methods x {args.seeds} "
          f"seeds), LLM {args.llm}, budget {args.budget}", flush=True)

    def progress(job, record) -> None:
        if record["status"] != "finished":
            status = f"FAILED {record['error']}"
        else:
            r = record["result"]
            status = f"{'solved' if r['strict'] else 'not solved'} ({r['passed']:.2f} of tests)"
        print(f"  {job.env_id:<14} {job.method:<12} seed {job.seed}  {status}  "
              f"({record['seconds']:.0f} s)", flush=True)

    with make_executor(args.executor, workers=args.workers, address=args.address) as executor:
        run = run_grid(jobs, run_apps_job, store, executor=executor, workdir=workdir, progress=progress)
    print(f"apps: {len(run.finished)} finished, {len(run.failed)} failed, {len(run.skipped)} already "
          f"done ({(time.perf_counter() - started) / 60:.1f} min)")
    records = [r for r in run.records if r is not None]
    summary = summarize(records, methods, problems)
    command = "python benchmarks/apps.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    meta = {"command": command, "llm": args.llm, "budget": args.budget, "seeds": args.seeds,
            "problems": args.problems, "n_problems": len(problems),
            "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "paper": PAPER}
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.json").write_text(json.dumps({"meta": meta, "paper_numbers": PAPER_TABLE1,
                                                "methods": summary}, indent=2) + "\n", encoding="utf-8")
    text = markdown(summary, meta)
    (out / "table.md").write_text(text, encoding="utf-8")
    print()
    print(text)
    return 0 if not run.failed else 1


if __name__ == "__main__":
    from codeworld._signals import stop_as_interrupt

    try:
        with stop_as_interrupt():  # kill / timeout stop the jobs, their runs and the LLM server too
            sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("interrupted: the same command resumes (finished work is kept)")
